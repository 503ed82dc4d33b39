"""Counting the templates that can arise over a schema (thesis Table 6.3).

Generates every query of the form ``S/r[...] FOLLOWED BY {K equalities, INF} S/r[...]``
over a schema, up to the schema's own symmetry, runs each through the real
pipeline (join graph -> graph minor -> canonical template) and counts distinct
templates.

Schemas (thesis 6.6.1):

* ``flat``: two levels, root ``item`` with leaves ``f0..f{N-1}`` (N >= 2K, so
  every placement fits);
* ``complex``: three levels, root ``r``, four children ``m0..m3``, each with four
  leaves ``l<a><b>`` (branching 4, 16 leaves).

Which queries count: each side binds one variable per *join vertex*; value joins
are between leaf variables of the two sides (the thesis's assumption in 6.3); a
vertex may take part in several joins (``x=y AND x=z``), every vertex takes part
in at least one, and the K joins are distinct. Variables are placed on schema
leaves up to symmetry: on the flat schema any placement is equivalent; on the
complex schema a placement is fixed by how many of the side's vertices share each
middle node (an integer partition of the side's vertex count), and every labelled
bipartite edge set is tried for every placement. This yields 1, 3, 6, 16 (flat)
and 1, 3, 16, 146 (complex) for K = 1..4.

Example::

    >>> count_templates("flat", 3)
    6
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import combinations
from typing import Literal

from xscl.lang.ast import (
    Block,
    Equality,
    JoinOp,
    NodeTest,
    PathPredicate,
    Query,
    RelPath,
    Step,
    Window,
)
from xscl.lang.normal_form.model import (
    NormalBlock,
    NormalEquality,
    NormalOp,
    NormalQuery,
    PatternVar,
    VarDef,
)
from xscl.templates.assign import assign_template
from xscl.templates.canonical import Template

Schema = Literal["flat", "complex"]
STREAM = "S"


def _element(name: str, var: str | None = None, predicates: tuple[PathPredicate, ...] = ()) -> Step:
    return Step("/", NodeTest("element", name), var, predicates)


def _definition(*names: str) -> VarDef:
    return VarDef(Block(STREAM, tuple(_element(n) for n in names)))


def side_placements(schema: Schema, vertices: int) -> Iterator[tuple[int, ...]]:
    """Middle-node index of each vertex, one placement per symmetry class (flat: all 0)."""
    if schema == "flat":
        yield (0,) * vertices
        return
    for parts in _partitions(vertices, largest=4):
        if len(parts) <= 4:
            yield tuple(mid for mid, size in enumerate(parts) for _ in range(size))


def _partitions(n: int, largest: int) -> Iterator[tuple[int, ...]]:
    if n == 0:
        yield ()
        return
    for first in range(min(n, largest), 0, -1):
        for rest in _partitions(n - first, first):
            yield (first, *rest)


def _block(
    schema: Schema, index: int, prefix: str, mids: tuple[int, ...]
) -> tuple[Block, NormalBlock]:
    """The AST block and normal block binding one leaf variable per vertex (see module doc)."""
    root_name = "item" if schema == "flat" else "r"
    root = f"{prefix}0"
    variables = [PatternVar(root, _definition(root_name), generated=True)]
    edges: list[tuple[str, str]] = []
    slot: dict[int, int] = {}
    mid_vars: dict[int, str] = {}
    leaf_steps: dict[int, list[Step]] = {}
    for vertex, mid in enumerate(mids, start=1):
        name = f"{prefix}{vertex}"
        if schema == "flat":
            leaf = f"f{vertex - 1}"
            variables.append(PatternVar(name, _definition(root_name, leaf)))
            edges.append((root, name))
            leaf_steps.setdefault(-1, []).append(_element(leaf, name))
            continue
        if mid not in mid_vars:
            mid_vars[mid] = f"{prefix}m{mid}"
            variables.append(PatternVar(mid_vars[mid], _definition(root_name, f"m{mid}"), True))
            edges.append((root, mid_vars[mid]))
        slot[mid] = slot.get(mid, -1) + 1
        leaf = f"l{mid}{slot[mid]}"
        variables.append(PatternVar(name, _definition(root_name, f"m{mid}", leaf)))
        edges.append((mid_vars[mid], name))
        leaf_steps.setdefault(mid, []).append(_element(leaf, name))
    if schema == "flat":
        predicates = tuple(PathPredicate(RelPath((s,))) for s in leaf_steps[-1])
    else:
        predicates = tuple(
            PathPredicate(
                RelPath(
                    (_element(f"m{mid}", None, tuple(PathPredicate(RelPath((s,))) for s in steps)),)
                )
            )
            for mid, steps in sorted(leaf_steps.items())
        )
    ast_block = Block(STREAM, (_element(root_name, None, predicates),))
    exists = VarDef(Block(STREAM, (_element(root_name),)))
    normal = NormalBlock(index, STREAM, root, tuple(variables), tuple(edges), exists, exists)
    return ast_block, normal


def schema_queries(schema: Schema, joins: int) -> Iterator[NormalQuery]:
    """Every two-block query over ``schema`` with ``joins`` value joins (module doc)."""
    number = 0
    for left_count in range(1, joins + 1):
        for right_count in range(1, joins + 1):
            pairs = [(a, b) for a in range(1, left_count + 1) for b in range(1, right_count + 1)]
            edge_sets = [
                chosen
                for chosen in combinations(pairs, joins)
                if {a for a, _ in chosen} == set(range(1, left_count + 1))
                and {b for _, b in chosen} == set(range(1, right_count + 1))
            ]
            if not edge_sets:
                continue
            for left_mids in side_placements(schema, left_count):
                left_ast, left = _block(schema, 0, "x", left_mids)
                for right_mids in side_placements(schema, right_count):
                    right_ast, right = _block(schema, 1, "y", right_mids)
                    for chosen in edge_sets:
                        number += 1
                        eqs = tuple(Equality(f"x{a}", f"y{b}") for a, b in chosen)
                        ast = Query(
                            f"q{number}",
                            (left_ast, right_ast),
                            (JoinOp("FOLLOWED BY", eqs, Window(None)),),
                        )
                        yield NormalQuery(
                            ast,
                            (left, right),
                            (NormalOp("FOLLOWED BY", None),),
                            tuple(NormalEquality(e.left, e.right, 0, 1) for e in eqs),
                        )


def enumerate_templates(schema: Schema, joins: int) -> list[Template]:
    """Distinct templates of ``schema_queries(schema, joins)``, in first-seen order."""
    seen: dict[Template, None] = {}
    for query in schema_queries(schema, joins):
        seen.setdefault(assign_template(query).template, None)
    return list(seen)


def count_templates(schema: Schema, joins: int) -> int:
    """How many templates two blocks joined by ``joins`` value joins can have (Table 6.3)."""
    return len(enumerate_templates(schema, joins))
