"""Human-readable account of how queries normalise and what they share (``xscl explain FILE``).

For each query: its blocks with their variable trees (each variable's canonical
definition printed as an XSCL path, its parent, ``*`` for generated branching
variables), the block's existence test and first step, the value joins and the
operators. Then every variable definition used by more than one (query,
variable) pair, with who shares it: those witnesses are computed and stored
once (spec 3.5). Definitions are printed with ``xscl.lang.printer``; a name test
qualified by rule 1 prints with the query file's prefix for its URI (else as
``{uri}:local``); function predicates print in their canonical form.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from xscl.lang.ast import NodeTest, Query, Step
from xscl.lang.normal_form import VarDef, canonical_variables, clark_prefix, normalize
from xscl.lang.normal_form.model import NormalBlock, NormalOp, NormalQuery
from xscl.lang.normal_form.paths import map_predicate_paths
from xscl.lang.printer import format_query

__all__ = ["explain", "format_definition", "format_window"]

_UNITS = (("d", 86_400_000_000), ("h", 3_600_000_000), ("m", 60_000_000), ("s", 1_000_000))


def format_definition(definition: VarDef, namespaces: tuple[tuple[str, str], ...] = ()) -> str:
    """A variable definition as XSCL text, e.g. ``S//book[./price]/author``.

    A name test whose namespace URI is bound in ``namespaces`` (prefix, uri)
    prints with that prefix; any other qualified test prints as ``{uri}:local``.
    """
    block = definition.path
    if namespaces:
        prefix_of = {clark_prefix(uri): prefix for prefix, uri in reversed(namespaces)}
        block = replace(block, steps=_with_prefixes(block.steps, prefix_of))
    return format_query(Query("_", (block,)), with_id=False)


def _with_prefixes(steps: tuple[Step, ...], prefix_of: dict[str, str]) -> tuple[Step, ...]:
    out = []
    for step in steps:
        test = step.test
        if test.prefix in prefix_of:
            test = NodeTest(test.kind, test.local, prefix_of[test.prefix])
        predicates = tuple(
            map_predicate_paths(p, lambda inner: _with_prefixes(inner, prefix_of))
            for p in step.predicates
        )
        out.append(replace(step, test=test, predicates=predicates))
    return tuple(out)


def format_window(micros: int | None) -> str:
    """A window in the largest unit that divides it exactly (``INF`` for None)."""
    if micros is None:
        return "INF"
    if micros == 0:
        return "0s"
    for unit, size in _UNITS:
        if micros % size == 0:
            return f"{micros // size}{unit}"
    if micros % 1_000 == 0:
        return f"{micros // 1_000}ms"
    return f"{micros}us"


def _block_lines(block: NormalBlock, namespaces: tuple[tuple[str, str], ...]) -> list[str]:
    parent = {child: par for par, child in block.edges}
    lines = [f"  block {block.index}: stream {block.stream}, root {block.root or '-'}"]
    width = max((len(v.name) for v in block.variables), default=0) + 1
    for var in block.variables:
        mark = "*" if var.generated else " "
        above = f"  (under {parent[var.name]})" if var.name in parent else ""
        text = format_definition(var.definition, namespaces)
        lines.append(f"    {mark}{var.name.ljust(width)} {text}{above}")
    lines.append(f"     exists: {format_definition(block.exists, namespaces)}")
    first = (
        format_definition(block.first_step, namespaces) if block.first_step else "(root element)"
    )
    lines.append(f"     first step: {first}")
    return lines


def _op_text(index: int, op: NormalOp) -> str:
    return f"    {index} -> {index + 1}: {op.kind} within {format_window(op.window_micros)}"


def explain_normal(normal: NormalQuery) -> list[str]:
    """The lines ``explain`` prints for one normalised query."""
    query = normal.query
    head = f"query {normal.qid}"
    if query.select is not None:
        head += f"  SELECT {', '.join(query.select)}"
    if query.publish is not None:
        head += f"  PUBLISH {query.publish}"
    lines = [head]
    for block in normal.blocks:
        lines.extend(_block_lines(block, query.namespaces))
    if normal.ops:
        lines.append("  operators:")
        lines.extend(_op_text(i, op) for i, op in enumerate(normal.ops))
    if normal.equalities:
        lines.append("  value joins:")
        lines.extend(
            f"    {e.left} = {e.right}  (blocks {e.left_block}, {e.right_block})"
            for e in normal.equalities
        )
    return lines


def explain(queries: Sequence[Query]) -> str:
    """The normal form of every query, then the variable definitions they share."""
    normals = [normalize(q) for q in queries]
    lines: list[str] = []
    for normal in normals:
        lines.extend(explain_normal(normal))
        lines.append("")
    shared = {d: users for d, users in canonical_variables(normals).items() if len(users) > 1}
    total = sum(len(b.variables) for n in normals for b in n.blocks)
    distinct = len(canonical_variables(normals))
    lines.append(
        f"shared variables: {len(shared)} definitions used more than once "
        f"({total} variables, {distinct} distinct definitions)"
    )
    namespaces = tuple(ns for q in queries for ns in q.namespaces)
    rows = sorted(
        (format_definition(definition, namespaces), users) for definition, users in shared.items()
    )
    for text, users in rows:
        who = ", ".join(f"{qid}.{var}" for qid, var in users)
        lines.append(f"  {text}: {who}")
    return "\n".join(lines) + "\n"
