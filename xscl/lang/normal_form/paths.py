"""Small pure helpers over the AST's step trees, shared by the rewrite rules.

A block's pattern is a tree whose nodes are ``Step``s. The *branches* of the
node at ``steps[i]`` of a path are each of its predicates plus the path's
continuation ``steps[i + 1:]`` (the rest of the main path, or of a predicate's
relative path). A comparison predicate ``[./a/b = 'x']`` is a path whose end
carries the comparison; helpers that rebuild a continuation therefore take the
path's optional comparison ``(op, literal)`` along.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache

from xscl.lang.ast import (
    Block,
    CompareOp,
    ComparisonPredicate,
    FunctionPredicate,
    LiteralValue,
    NodeTest,
    PathPredicate,
    Predicate,
    Query,
    RelPath,
    Step,
)

#: The comparison carried by the end of a path, if any.
Comparison = tuple[CompareOp, LiteralValue] | None
#: A pure rewrite of a path's steps.
PathRewrite = Callable[[tuple[Step, ...]], tuple[Step, ...]]
#: A pure rewrite of a block's steps, given the block index.
BlockRewrite = Callable[[int, Block], tuple[Step, ...]]


def predicate_steps(predicate: Predicate) -> tuple[Step, ...]:
    """The steps of a predicate's relative path (``()`` for ``[.]`` and functions)."""
    if isinstance(predicate, FunctionPredicate):
        return ()
    return predicate.path.steps


def predicate_comparison(predicate: Predicate) -> Comparison:
    """``(op, literal)`` of a comparison predicate, else ``None``."""
    if isinstance(predicate, ComparisonPredicate):
        return (predicate.op, predicate.literal)
    return None


def step_vars(step: Step) -> frozenset[str]:
    """Variables bound at ``step`` or anywhere inside its predicates."""
    found: set[str] = set() if step.var is None else {step.var}
    for predicate in step.predicates:
        found |= predicate_vars(predicate)
    return frozenset(found)


def path_vars(steps: tuple[Step, ...]) -> frozenset[str]:
    """Variables bound anywhere along ``steps`` (and their predicates)."""
    found: frozenset[str] = frozenset()
    for step in steps:
        found |= step_vars(step)
    return found


def predicate_vars(predicate: Predicate) -> frozenset[str]:
    """Variables bound inside a predicate's relative path."""
    return path_vars(predicate_steps(predicate))


def iter_bindings(steps: tuple[Step, ...]) -> Iterator[Step]:
    """Every step that binds a variable, in source pre-order (predicates before continuation)."""
    for step in steps:
        if step.var is not None:
            yield step
        for predicate in step.predicates:
            yield from iter_bindings(predicate_steps(predicate))


def query_bindings(query: Query) -> Iterator[tuple[int, Step]]:
    """``(block index, binding step)`` for every binding of the query, in source order."""
    for index, block in enumerate(query.blocks):
        for step in iter_bindings(block.steps):
            yield index, step


def iter_steps(steps: tuple[Step, ...]) -> Iterator[Step]:
    """Every step of a path, its predicates' paths included, in pre-order."""
    for step in steps:
        yield step
        for predicate in step.predicates:
            yield from iter_steps(predicate_steps(predicate))


def matter_variables(query: Query) -> frozenset[str]:
    """The variables that matter (spec 3.3): join variables plus SELECT variables."""
    joined = {v for op in query.ops for eq in op.equalities for v in (eq.left, eq.right)}
    return frozenset(joined | set(query.select or ()))


def branch_vars(steps: tuple[Step, ...], index: int) -> list[frozenset[str]]:
    """Variables of each branch of the node at ``steps[index]`` (predicates, then continuation)."""
    step = steps[index]
    branches = [predicate_vars(p) for p in step.predicates]
    branches.append(path_vars(steps[index + 1 :]))
    return branches


def is_branching_point(steps: tuple[Step, ...], index: int, matter: frozenset[str]) -> bool:
    """Whether >= 2 branches of ``steps[index]`` contain variables of ``matter``."""
    return sum(1 for vars_ in branch_vars(steps, index) if vars_ & matter) >= 2


def continuation(rest: tuple[Step, ...], comparison: Comparison) -> Predicate | None:
    """The rest of a path seen as a filter on the node before it (``None`` if trivial)."""
    if comparison is not None:
        return ComparisonPredicate(RelPath(rest), comparison[0], comparison[1])
    if rest:
        return PathPredicate(RelPath(rest))
    return None


def rebuild_step(
    step: Step, var: str | None, predicates: tuple[Predicate, ...], test: NodeTest | None = None
) -> Step:
    """``step`` with a new binding, predicates (and test); its axis and span are kept.

    Returns ``step`` itself when nothing changes (by identity), so rewrites that
    touch little allocate little; a direct constructor call otherwise
    (``dataclasses.replace`` dominated normalisation time).
    """
    new_test = step.test if test is None else test
    if var == step.var and new_test is step.test and same_items(predicates, step.predicates):
        return step
    return Step(step.axis, new_test, var, predicates, step.span)


def same_items(new: Sequence[object], old: Sequence[object]) -> bool:
    """Whether two sequences hold the very same objects (identity, not equality)."""
    return len(new) == len(old) and all(a is b for a, b in zip(new, old, strict=True))


def map_predicate_paths(predicate: Predicate, rewrite: PathRewrite) -> Predicate:
    """Apply ``rewrite`` to the relative path of a path or comparison predicate."""
    if isinstance(predicate, FunctionPredicate):
        return predicate
    steps = rewrite(predicate.path.steps)
    if same_items(steps, predicate.path.steps):
        return predicate
    if isinstance(predicate, PathPredicate):
        return PathPredicate(RelPath(steps))
    return ComparisonPredicate(RelPath(steps), predicate.op, predicate.literal)


@lru_cache(maxsize=65_536)
def erase_bindings(steps: tuple[Step, ...]) -> tuple[Step, ...]:
    """``steps`` with every variable binding removed, at any depth.

    Cached by value: equal inputs may share one result (spans take no part in
    equality, so a cached result may carry another query's spans).
    """
    return tuple(
        rebuild_step(
            step, None, tuple(map_predicate_paths(p, erase_bindings) for p in step.predicates)
        )
        for step in steps
    )


def replace_block_steps(query: Query, rewrite: BlockRewrite) -> Query:
    """``query`` with each block's steps replaced by ``rewrite(index, block)``."""
    blocks = []
    for index, block in enumerate(query.blocks):
        steps = rewrite(index, block)
        same = same_items(steps, block.steps)
        blocks.append(block if same else Block(block.stream, steps, block.span))
    if same_items(blocks, query.blocks):
        return query
    return with_blocks(query, tuple(blocks))


def with_blocks(query: Query, blocks: tuple[Block, ...]) -> Query:
    """``query`` with other blocks (a direct constructor call, see ``rebuild_step``)."""
    return Query(
        query.qid,
        blocks,
        query.ops,
        query.select,
        query.publish,
        query.namespaces,
        query.explicit_id,
        query.span,
    )
