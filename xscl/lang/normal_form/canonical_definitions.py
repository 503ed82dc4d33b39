"""Rule 5: turn each block into a tree of variables with canonical definitions (spec 3.5).

Input: a block after rules 1-4, where every remaining binding is a pattern
variable. Output: a ``NormalBlock``.

The definition (``VarDef``) of a variable is the absolute, filter-only path from
the stream to its node: the steps from the block's first step down to the node
(into predicates too: the steps of a relative predicate path are appended with
their axes as written, ``[.//a]`` -> ``//a``, ``[a]`` -> ``/a``), and on **each**
step every branch that does not lead to a pattern variable, as a filter. A
branch that leads to another pattern variable is dropped: the pattern edge to
that variable enforces it. The rest of a path after a node is one such branch;
for a compared path it carries the comparison, so a variable bound inside a
compared path binds only nodes that satisfy it (spec 3.1):

>>> from xscl.lang.explain import format_definition
>>> from xscl.lang.parser import parse_query
>>> def definitions(text: str) -> list[str]:
...     block = canonical_block(0, parse_query(text).blocks[0])
...     return [f"{v.name}: {format_definition(v.definition)}" for v in block.variables]
>>> definitions("S//book->x1[./author->x2]")
['x1: S//book', 'x2: S//book/author']
>>> definitions("S//b[./c->y = 'x']")
["y: S//b/c[. = 'x']"]
>>> definitions("S//b[./a->y/b = 'x']")
["y: S//b/a[./b = 'x']"]
>>> definitions("S//book->x1[./author->x2][./price]")
['x1: S//book[./price]', 'x2: S//book[./price]/author']

Predicates are put in canonical order (rule 3's key) at every step, so equal
definitions are equal values. ``edges`` link each variable to its nearest
bound ancestor; ``variables`` are in pre-order (node, predicates, continuation);
``root`` is the first of them. ``exists`` is the whole pattern with every
binding erased; ``first_step`` the definition of the first step's node (equal
to its variable's definition when it has one). A block with no step binds
nothing: ``exists`` has ``steps == ()`` (the root element), ``first_step`` is None.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from xscl.lang.ast import Block, Step
from xscl.lang.normal_form.model import NormalBlock, PatternVar, VarDef
from xscl.lang.normal_form.order_predicates import canonical_predicates, order_steps
from xscl.lang.normal_form.paths import (
    Comparison,
    continuation,
    erase_bindings,
    path_vars,
    predicate_comparison,
    predicate_steps,
    predicate_vars,
)


@dataclass
class _Collector:
    """Mutable accumulator of one block's walk (local to ``canonical_block``)."""

    stream: str
    generated: Collection[str]
    variables: list[PatternVar] = field(default_factory=list)
    edges: list[tuple[str, str]] = field(default_factory=list)
    first_step: VarDef | None = None


def definition_step(step: Step, rest: tuple[Step, ...], comparison: Comparison) -> Step:
    """``step`` as it appears in a definition: no binding, only the branches without variables."""
    filters = [p for p in step.predicates if not predicate_vars(p)]
    tail = continuation(rest, comparison)
    if tail is not None and not path_vars(rest):
        filters.append(tail)
    return Step(step.axis, step.test, None, canonical_predicates(filters))


def _walk(
    steps: tuple[Step, ...],
    comparison: Comparison,
    prefix: tuple[Step, ...],
    parent: str | None,
    out: _Collector,
) -> None:
    for index, step in enumerate(steps):
        rest = steps[index + 1 :]
        here = (*prefix, definition_step(step, rest, comparison))
        if out.first_step is None:
            out.first_step = VarDef(Block(out.stream, here))
        if step.var is not None:
            definition = VarDef(Block(out.stream, here))
            out.variables.append(PatternVar(step.var, definition, step.var in out.generated))
            if parent is not None:
                out.edges.append((parent, step.var))
            parent = step.var
        for predicate in step.predicates:
            if predicate_vars(predicate):
                _walk(
                    predicate_steps(predicate),
                    predicate_comparison(predicate),
                    here,
                    parent,
                    out,
                )
        if not path_vars(rest):
            return  # the rest is a filter of ``here``'s last step
        prefix = here


def canonical_block(index: int, block: Block, generated: Collection[str] = ()) -> NormalBlock:
    """The ``NormalBlock`` of a block whose bindings are exactly its pattern variables."""
    out = _Collector(block.stream, generated)
    _walk(block.steps, None, (), None, out)
    exists = VarDef(Block(block.stream, order_steps(erase_bindings(block.steps))))
    return NormalBlock(
        index=index,
        stream=block.stream,
        root=out.variables[0].name if out.variables else None,
        variables=tuple(out.variables),
        edges=tuple(out.edges),
        exists=exists,
        first_step=out.first_step,
    )
