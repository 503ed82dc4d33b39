"""Normal form and template assignment computed once per query *shape*.

A shape is a query with its id taken out: two subscriptions that differ only
in their ids have the same normal form (up to ``NormalQuery.query``) and the
same template assignment (up to ``qid``), because no rewrite rule or template
step reads the id. Large subscription sets repeat shapes: the benchmark's
generated 10k subscriptions have 4,985 distinct shapes, its 100k have 34,392
(the thesis's generator draws from a few leaves, 6.6.1), and services see many
users subscribe the same query. Registration is the engines' start-up cost,
so ``ShapeMemo`` computes each shape once. Measured (benchmarks/registration):
1.27x on normalisation and assignment at 100k subscriptions; nothing at 1k
and 10k, where the normal form's own LRU caches already catch the repeats.

>>> from xscl.lang.parser import parse_query
>>> memo = ShapeMemo()
>>> a = memo.normal(parse_query("A: s/a->x JOIN {x = y, 1h} s/b->y"))
>>> b = memo.normal(parse_query("B: s/a->x JOIN {x = y, 1h} s/b->y"))
>>> b.blocks is a.blocks, b.qid          # computed once
(True, 'B')
>>> memo.assignment(b).template is memo.assignment(a).template
True

The memo keeps at most ``max_shapes`` shapes (oldest first out); the results
equal ``normalize`` and ``assign_template`` on the query itself (tested).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TypeVar

from xscl.lang.ast import Query
from xscl.lang.normal_form import normalize
from xscl.lang.normal_form.model import NormalQuery
from xscl.templates.assign import TemplateAssignment, assign_template

__all__ = ["DEFAULT_MAX_SHAPES", "ShapeMemo", "query_shape"]

_Value = TypeVar("_Value")

#: Shapes remembered by default (each holds one normal form and one assignment).
DEFAULT_MAX_SHAPES = 200_000


def query_shape(query: Query) -> Query:
    """``query`` without what no normalisation step reads: its id (spans never compare)."""
    return Query("", query.blocks, query.ops, query.select, query.publish, query.namespaces)


class ShapeMemo:
    """``normalize`` and ``assign_template`` per query shape (see the module docstring)."""

    def __init__(self, max_shapes: int = DEFAULT_MAX_SHAPES) -> None:
        if max_shapes < 1:
            raise ValueError("max_shapes must be at least 1")
        self.max_shapes = max_shapes
        self._normal: dict[Query, NormalQuery] = {}
        self._assignment: dict[Query, TemplateAssignment] = {}
        #: lookups answered from the memo / computed (``xscl`` prints neither; tests do)
        self.hits = 0
        self.misses = 0

    def __reduce__(self) -> tuple[type[ShapeMemo], tuple[int]]:
        """Pickle an empty memo: it is a cache, and engine snapshots should not carry it."""
        return ShapeMemo, (self.max_shapes,)

    def clear(self) -> None:
        """Forget every shape: what a build remembered is dropped once it is built (a
        worker keeps its registered queries, not their normal forms: the memo would
        keep one normal form, its definitions' structure and one AST per shape)."""
        self._normal.clear()
        self._assignment.clear()

    def normal(self, query: Query) -> NormalQuery:
        """``normalize(query)``; its ``query`` is ``query`` itself (id, spans)."""
        shape = query_shape(query)
        known = self._normal.get(shape)
        if known is None:
            self.misses += 1
            normal = normalize(query)
            _remember(self._normal, shape, normal, self.max_shapes)
            return normal
        self.hits += 1
        return known if known.query is query else replace(known, query=query)

    def assignment(self, normal: NormalQuery) -> TemplateAssignment:
        """``assign_template(normal)``, its ``qid`` that of ``normal``."""
        shape = query_shape(normal.query)
        known = self._assignment.get(shape)
        if known is None:
            assignment = assign_template(normal)
            _remember(self._assignment, shape, assignment, self.max_shapes)
            return assignment
        return known if known.qid == normal.qid else replace(known, qid=normal.qid)


def _remember(memo: dict[Query, _Value], shape: Query, value: _Value, max_shapes: int) -> None:
    """Store ``value`` for ``shape``, dropping the oldest shape when the memo is full."""
    if len(memo) >= max_shapes:
        del memo[next(iter(memo))]
    memo[shape] = value
