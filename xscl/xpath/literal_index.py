"""Many literal comparisons on one relative path, answered per value in O(log n + hits).

Thousands of definitions filter the same path with different literals
(``[./lang = 'en']``, ``[. >= 'M']``, ``[./n < 42]``).  Evaluating each one
per element is linear in the number of definitions; instead the candidates
of one DFA transition that share a path are indexed by operator: ``=`` by a
dict from literal, ``<``, ``<=``, ``>``, ``>=`` by sorted literals (bisect),
``!=`` by literal.  Semantics are those of :func:`xscl.xpath.strings.compare`
(spec 3.1): existential over the path's values, code-point order for
strings, decimal order for numbers (values that are not numbers compare
false with every numeric literal, ``!=`` included).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Hashable, Sequence
from typing import Any, Generic, TypeVar

T = TypeVar("T", bound=Hashable)


class _Sorted(Generic[T]):
    __slots__ = ("keys", "members")

    def __init__(self, entries: list[tuple[Any, T]]) -> None:
        entries.sort(key=lambda e: e[0])
        self.keys = [k for k, _ in entries]
        self.members = [m for _, m in entries]


_EMPTY: _Sorted[Any] = _Sorted([])


class LiteralIndex(Generic[T]):
    """Members (e.g. trie nodes) keyed by ``(op, literal)``; one kind of literal per index."""

    __slots__ = ("_all_ne", "_eq", "_ge", "_gt", "_le", "_lt", "_ne")

    def __init__(self, entries: Sequence[tuple[str, Any, T]]) -> None:
        self._eq: dict[Any, list[T]] = {}
        self._ne: dict[Any, list[T]] = {}
        self._all_ne: list[T] = []
        ordered: dict[str, list[tuple[Any, T]]] = {"<": [], "<=": [], ">": [], ">=": []}
        for op, literal, member in entries:
            if op == "=":
                self._eq.setdefault(literal, []).append(member)
            elif op == "!=":
                self._ne.setdefault(literal, []).append(member)
                self._all_ne.append(member)
            else:
                ordered[op].append((literal, member))
        self._lt = _Sorted(ordered["<"]) if ordered["<"] else _EMPTY
        self._le = _Sorted(ordered["<="]) if ordered["<="] else _EMPTY
        self._gt = _Sorted(ordered[">"]) if ordered[">"] else _EMPTY
        self._ge = _Sorted(ordered[">="]) if ordered[">="] else _EMPTY

    def collect(self, values: Sequence[Any], out: list[T]) -> None:
        """Append every member whose comparison holds for some value (duplicates possible)."""
        if not values:
            return
        eq = self._eq
        lt, le, gt, ge = self._lt, self._le, self._gt, self._ge
        for value in values:
            hits = eq.get(value)
            if hits:
                out.extend(hits)
            if lt.keys:  # value < literal
                out.extend(lt.members[bisect_right(lt.keys, value) :])
            if le.keys:  # value <= literal
                out.extend(le.members[bisect_left(le.keys, value) :])
            if gt.keys:  # value > literal
                out.extend(gt.members[: bisect_left(gt.keys, value)])
            if ge.keys:  # value >= literal
                out.extend(ge.members[: bisect_right(ge.keys, value)])
        if self._all_ne:
            distinct = set(values)
            if len(distinct) > 1:
                out.extend(self._all_ne)  # every literal differs from one of the values
            else:
                (only,) = distinct
                same = self._ne.get(only)
                if same is None:
                    out.extend(self._all_ne)
                else:
                    excluded = set(map(id, same))
                    out.extend(m for m in self._all_ne if id(m) not in excluded)
