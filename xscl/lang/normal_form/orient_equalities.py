"""Rule 6: orient, de-duplicate and order the value joins; turn operators into ``NormalOp``.

Equality is symmetric, so ``x5 = x2`` and ``x2 = x5`` are one value join. Each
equality is oriented so that ``left`` is in the earlier block (by name when both
are in the same block), duplicates (also across
operators: the engines treat all equalities as one conjunction over the match,
spec 3.2) are dropped, and the result is sorted by (left block, right block,
left, right).

``x = x`` is kept: it makes ``x`` a join variable (its node identifies results,
spec 3.3) and, since empty values never join (spec 3.2), requires ``x`` to have
a non-empty value.

>>> from xscl.lang.parser import parse_query
>>> query = parse_query("S//a->x2 FOLLOWED BY {x5 = x2 AND x2 = x5 AND x2 = x2, 1h} T//b->x5")
>>> for equality in orient_equalities(query, {"x2": 0, "x5": 1}):
...     print(equality)
NormalEquality(left='x2', right='x2', left_block=0, right_block=0)
NormalEquality(left='x2', right='x5', left_block=0, right_block=1)
>>> normal_ops(query)
(NormalOp(kind='FOLLOWED BY', window_micros=3600000000),)
"""

from __future__ import annotations

from collections.abc import Mapping

from xscl.lang.ast import Query
from xscl.lang.normal_form.model import NormalEquality, NormalOp


def orient_equalities(query: Query, block_of: Mapping[str, int]) -> tuple[NormalEquality, ...]:
    """The query's equalities in normal form; ``block_of`` maps each variable to its block."""
    found: set[NormalEquality] = set()
    for op in query.ops:
        for equality in op.equalities:
            left, right = equality.left, equality.right
            if (block_of[left], left) > (block_of[right], right):
                left, right = right, left
            found.add(NormalEquality(left, right, block_of[left], block_of[right]))
    return tuple(sorted(found, key=lambda e: (e.left_block, e.right_block, e.left, e.right)))


def normal_ops(query: Query) -> tuple[NormalOp, ...]:
    """``NormalOp(kind, window in microseconds or None for INF)`` per operator."""
    return tuple(NormalOp(op.kind, op.window.micros) for op in query.ops)
