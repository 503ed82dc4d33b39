"""Properties of ``normalize``: deterministic; invariant under renaming and predicate order."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace
from decimal import Decimal
from itertools import count

from hypothesis import given
from hypothesis import strategies as st

from tests.profiles import examples
from xscl.lang.ast import (
    Block,
    ComparisonPredicate,
    Equality,
    JoinOp,
    LiteralValue,
    NodeTest,
    NumberLiteral,
    PathPredicate,
    Predicate,
    Query,
    RelPath,
    Step,
    StringLiteral,
    Window,
)
from xscl.lang.normal_form import normalize
from xscl.lang.normal_form.paths import map_predicate_paths, path_vars
from xscl.lang.parser import parse_query
from xscl.lang.printer import format_query

SETTINGS = examples(80)

_TESTS = [
    NodeTest("element", "a"),
    NodeTest("element", "b"),
    NodeTest("element", "c", "p"),
    NodeTest("wildcard"),
    NodeTest("attribute", "id"),
    NodeTest("text"),
]


@st.composite
def steps_strategy(draw: st.DrawFn, depth: int, names: count[int]) -> tuple[Step, ...]:
    """1-2 steps; each may bind a fresh variable and carry up to 2 predicates."""
    steps = []
    for _ in range(draw(st.integers(1, 2))):
        test = draw(st.sampled_from(_TESTS))
        leaf = test.kind in ("attribute", "text")
        var = f"v{next(names)}" if draw(st.booleans()) else None
        predicates: list[Predicate] = []
        if depth > 0 and not leaf:
            for _ in range(draw(st.integers(0, 2))):
                inner = draw(steps_strategy(depth - 1, names))
                if draw(st.booleans()):
                    literals: list[LiteralValue] = [StringLiteral("x"), NumberLiteral(Decimal(3))]
                    literal = draw(st.sampled_from(literals))
                    predicates.append(ComparisonPredicate(RelPath(inner), "=", literal))
                else:
                    predicates.append(PathPredicate(RelPath(inner)))
        steps.append(Step(draw(st.sampled_from(["/", "//"])), test, var, tuple(predicates)))
        if leaf:
            break
    return tuple(steps)


@st.composite
def queries(draw: st.DrawFn) -> Query:
    names = count()
    blocks = tuple(
        Block(draw(st.sampled_from(["S", "T"])), draw(steps_strategy(2, names))) for _ in range(2)
    )
    left, right = sorted(path_vars(blocks[0].steps)), sorted(path_vars(blocks[1].steps))
    equalities: list[Equality] = []
    if left and right:
        for _ in range(draw(st.integers(0, 3))):
            equalities.append(Equality(draw(st.sampled_from(left)), draw(st.sampled_from(right))))
    every = left + right
    select = tuple(draw(st.lists(st.sampled_from(every), max_size=2, unique=True))) if every else ()
    op = JoinOp("JOIN", tuple(equalities), Window(Decimal(1), "h"))
    return Query("q", blocks, (op,), select or None, namespaces=(("p", "urn:x"),))


def _rename_steps(steps: tuple[Step, ...], mapping: dict[str, str]) -> tuple[Step, ...]:
    return tuple(
        replace(
            s,
            var=mapping.get(s.var, s.var) if s.var else None,
            predicates=tuple(
                map_predicate_paths(p, lambda inner: _rename_steps(inner, mapping))
                for p in s.predicates
            ),
        )
        for s in steps
    )


def _rename(query: Query, mapping: dict[str, str]) -> Query:
    blocks = tuple(replace(b, steps=_rename_steps(b.steps, mapping)) for b in query.blocks)
    ops = tuple(
        replace(
            op,
            equalities=tuple(Equality(mapping[e.left], mapping[e.right]) for e in op.equalities),
        )
        for op in query.ops
    )
    select = tuple(mapping[v] for v in query.select) if query.select else None
    return replace(query, blocks=blocks, ops=ops, select=select)


def _shuffle_steps(steps: tuple[Step, ...], rng: random.Random) -> tuple[Step, ...]:
    out = []
    for s in steps:
        predicates = [
            map_predicate_paths(p, lambda inner: _shuffle_steps(inner, rng)) for p in s.predicates
        ]
        rng.shuffle(predicates)
        out.append(replace(s, predicates=tuple(predicates)))
    return tuple(out)


@SETTINGS
@given(queries())
def test_normalize_is_deterministic_across_printing_and_parsing(query: Query) -> None:
    """The normal form depends on the query, not on its objects: printed and parsed
    again (new objects, with spans), the query normalises to the same form. (Across
    processes: ``test_lang_normal_form.py``.)"""
    again = parse_query(format_query(query), qid=query.qid, namespaces=query.namespaces)
    assert again == query and again is not query
    assert normalize(again) == normalize(query)


@SETTINGS
@given(queries(), st.randoms(use_true_random=False))
def test_invariant_under_consistent_renaming(query: Query, rng: random.Random) -> None:
    names = sorted(path_vars(query.blocks[0].steps) | path_vars(query.blocks[1].steps))
    targets = [f"r{i}x" for i in range(len(names))]
    rng.shuffle(targets)
    mapping = dict(zip(names, targets, strict=True))
    a, b = normalize(query), normalize(_rename(query, mapping))
    for block_a, block_b in zip(a.blocks, b.blocks, strict=True):
        assert Counter(v.definition for v in block_a.variables) == Counter(
            v.definition for v in block_b.variables
        )
        assert (block_a.exists, block_a.first_step) == (block_b.exists, block_b.first_step)
        for var in block_a.variables:
            if not var.generated:
                assert b.variable(mapping[var.name]).definition == var.definition
    assert len(a.equalities) == len(b.equalities)


@SETTINGS
@given(queries(), st.randoms(use_true_random=False))
def test_invariant_under_predicate_reordering(query: Query, rng: random.Random) -> None:
    shuffled = replace(
        query,
        blocks=tuple(replace(b, steps=_shuffle_steps(b.steps, rng)) for b in query.blocks),
    )
    a, b = normalize(query), normalize(shuffled)
    assert a.blocks == b.blocks
    assert a.equalities == b.equalities


@SETTINGS
@given(queries())
def test_tree_invariants(query: Query) -> None:
    normal = normalize(query)
    for block in normal.blocks:
        names = [v.name for v in block.variables]
        assert len(names) == len(set(names))
        children = Counter(child for _parent, child in block.edges)
        assert all(children[n] == (0 if n == block.root else 1) for n in names)
        for parent, child in block.edges:
            p = normal.variable(parent).definition.path.steps
            c = normal.variable(child).definition.path.steps
            assert len(c) > len(p)
            assert c[: len(p)] == p  # the contract stated in model.py
        for var in block.variables:
            assert not path_vars(var.definition.path.steps)
    for eq in normal.equalities:
        assert eq.left_block <= eq.right_block and eq.left != eq.right
