"""Compiled comparisons by shape and literals: what registration compiles only once.

Queries of one template (thesis 4.6.1, Table 4.1) differ in their constants and
in which attributes each step names, so whole queries rarely repeat (100k
LinearStat subscriptions of ``benchmarks/cel/run.py`` have 47k distinct
shapes), but their *comparisons* do: ``d0 = 5`` or ``c2 > 0.25`` under the same
edge map recur thousands of times. The compiler (``xscl.events.compile``) asks
this memo for the IR of a comparison between attributes and constants, keyed by
its **shape** (operator, attributes, the constants' types) in its **context**
(what its attributes resolve to: a small id per edge map, ``context``) and by its
literals; a hit skips building and interning the IR (``xscl.events.ir.intern``).

The memo holds the IR it returns; it is a cache of a pure function (the same
key always compiles to an equal IR), so forgetting it changes nothing: it is
cleared when it grows past ``limit`` entries, which bounds the memory of an
engine subscribing ever new queries. Context ids are never reused.

Where it runs: in ``Engine.subscribe`` (one memo per engine), on the driver or an
executor's Python worker, wherever a CEL engine registers queries.

>>> memo = ShapeMemo()
>>> memo.context(("through", ("a",))) == memo.context(("through", ("a",)))
True
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable

from xscl.events.ir import IR
from xscl.lang.cel.ast import Attr, BoolConst, Compare, Const, Dur, Duration, Expr

__all__ = ["ShapeMemo", "comparison_key"]

#: Entries (comparisons and contexts) above which the memo starts afresh.
LIMIT = 1 << 18


def _operand(expr: Expr) -> Hashable | None:
    """An operand's part of a key: an attribute with its side, a constant with its
    type (``1`` and ``1.0`` compile to different constants), else None."""
    cls = expr.__class__
    if cls is Attr:
        return (expr.name, expr.side)  # type: ignore[union-attr]
    if cls is Const:
        value = expr.value  # type: ignore[union-attr]
        return (value.__class__, value)
    if cls is BoolConst:
        return (bool, expr.value)  # type: ignore[union-attr]
    if cls is Duration:
        return (Duration, expr.micros)  # type: ignore[union-attr]
    if cls is Dur:
        return Dur
    return None


def comparison_key(expr: Expr) -> tuple[Hashable, ...] | None:
    """The shape and literals of a comparison between attributes and constants (its
    memo key without the context), or None for any other expression.

    >>> comparison_key(Compare(">", Attr("c0", "1"), Const(0.25)))
    ('>', ('c0', '1'), (<class 'float'>, 0.25))
    """
    if expr.__class__ is not Compare:
        return None
    left = _operand(expr.left)
    right = _operand(expr.right)
    if left is None or right is None:
        return None
    return (expr.op, left, right)


class ShapeMemo:
    """Comparisons' IR by (context, whose DUR, shape and literals); see the module."""

    def __init__(self, limit: int = LIMIT) -> None:
        self.limit = limit
        self._contexts: dict[Hashable, int] = {}
        self._compiled: dict[tuple[Hashable, ...], IR] = {}
        self._ids = itertools.count()
        self.hits = 0
        self.misses = 0

    def context(self, key: Hashable) -> int:
        """A small id for what attributes resolve to (an edge map and its schema)."""
        found = self._contexts.get(key)
        if found is None:
            if len(self._contexts) >= self.limit:
                self._contexts.clear()
            found = self._contexts[key] = next(self._ids)
        return found

    def comparison(
        self, expr: Expr, context: int, dur_of_event: bool, compile_: Callable[[], IR]
    ) -> IR:
        """The IR of ``expr`` in ``context``: memoised when it compares attributes and
        constants, else ``compile_()``."""
        shape = comparison_key(expr)
        if shape is None:
            return compile_()
        key = (context, dur_of_event, shape)
        found = self._compiled.get(key)
        if found is None:
            self.misses += 1
            if len(self._compiled) >= self.limit:
                self._compiled.clear()
            found = self._compiled[key] = compile_()
        else:
            self.hits += 1
        return found

    def __len__(self) -> int:
        return len(self._compiled)
