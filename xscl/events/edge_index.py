"""Which forward and rebind edges of a state an event may traverse, with or without
the FR index (thesis 4.5.4).

For an affected state (or a start state, which is always active) the engine
asks for its edges whose *static* part (the conjuncts that read only the
event) holds, each with the rest of its predicate still to check per
instance. Two implementations of one small protocol:

* ``ScannedEdges``: every edge, with its whole predicate left to check for
  every instance;
* ``IndexedEdges``: the FR index: per state, edges hashed on one
  ``event.a = constant`` conjunct, the remaining static conjuncts evaluated
  once per event (once per distinct conjunction, however many edges of the
  state share it), so only the dynamic part is left per instance. On the
  start state of a stream this is the pub/sub index over every query's
  first step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from xscl.events import closures
from xscl.events.automaton import Edge, State
from xscl.events.closures import Closure
from xscl.events.ir import Cmp, E, Lit, Pred

__all__ = ["EdgeIndex", "IndexedEdges", "ScannedEdges"]

Candidates = Sequence[tuple[Edge, Closure | None]]


class EdgeIndex(Protocol):
    """Edges by state, probed per event."""

    def add(self, edge: Edge) -> None:
        """Index a new edge of ``edge.source``."""

    def remove(self, edge: Edge) -> None:
        """Forget an edge."""

    def candidates(self, state: State, event: Any) -> Candidates:
        """``state``'s edges whose static part ``event`` satisfies, with what is left to check."""


class ScannedEdges:
    """No index: every edge of the state, its whole predicate to check per instance."""

    def __init__(self) -> None:
        self._edges: dict[State, dict[Edge, None]] = {}

    def add(self, edge: Edge) -> None:
        self._edges.setdefault(edge.source, {})[edge] = None

    def remove(self, edge: Edge) -> None:
        edges = self._edges.get(edge.source)
        if edges is not None:
            edges.pop(edge, None)
            if not edges:
                del self._edges[edge.source]

    def candidates(self, state: State, event: Any) -> Candidates:
        edges = self._edges.get(state)
        if not edges:
            return ()
        return [(edge, edge.check) for edge in edges]


class _Table:
    """One state's edges: hashed on (position, constant), the rest, and shared residuals.

    Each distinct static residual gets a small integer id, so the per-event
    memo of which residuals hold never hashes expressions.
    """

    def __init__(self) -> None:
        self.buckets: dict[tuple[int, Any], dict[Edge, int]] = {}
        self.positions: dict[int, int] = {}
        self.rest: dict[Edge, int] = {}
        self.ids: dict[Pred, int] = {}
        self.tests: dict[int, tuple[Closure | None, int, Pred]] = {}  # id -> (test, users, pred)
        self._next = 0

    def acquire(self, residual: Pred) -> int:
        rid = self.ids.get(residual)
        if rid is None:
            rid = self.ids[residual] = self._next
            self._next += 1
            self.tests[rid] = (closures.predicate(residual), 0, residual)
        test, users, pred = self.tests[rid]
        self.tests[rid] = (test, users + 1, pred)
        return rid

    def release(self, rid: int) -> None:
        test, users, pred = self.tests[rid]
        if users == 1:
            del self.tests[rid]
            del self.ids[pred]
        else:
            self.tests[rid] = (test, users - 1, pred)


class IndexedEdges:
    """The FR index: per state, static equality hash plus once-per-event static residuals."""

    def __init__(self) -> None:
        self._tables: dict[State, _Table] = {}
        self._where: dict[Edge, tuple[int, Any] | None] = {}

    def add(self, edge: Edge) -> None:
        table = self._tables.setdefault(edge.source, _Table())
        parts = edge.parts
        key: tuple[int, Any] | None = None
        others = parts.static_eq
        if parts.static_eq:
            (j, constant), *rest_eq = parts.static_eq
            key, others = (j, constant), tuple(rest_eq)
        rid = table.acquire(tuple(Cmp("=", E(p), Lit(c)) for p, c in others) + parts.static_rest)
        if key is None:
            table.rest[edge] = rid
        else:
            table.buckets.setdefault(key, {})[edge] = rid
            table.positions[key[0]] = table.positions.get(key[0], 0) + 1
        self._where[edge] = key

    def remove(self, edge: Edge) -> None:
        if edge not in self._where:
            return
        key = self._where.pop(edge)
        table = self._tables[edge.source]
        if key is None:
            rid = table.rest.pop(edge)
        else:
            bucket = table.buckets[key]
            rid = bucket.pop(edge)
            if not bucket:
                del table.buckets[key]
            table.positions[key[0]] -= 1
            if not table.positions[key[0]]:
                del table.positions[key[0]]
        table.release(rid)
        if not table.rest and not table.buckets:
            del self._tables[edge.source]

    def candidates(self, state: State, event: Any) -> Candidates:
        table = self._tables.get(state)
        if table is None:
            return ()
        outcome: dict[int, bool] = {}
        tests = table.tests
        found: list[tuple[Edge, Closure | None]] = []

        def keep(edges: dict[Edge, int]) -> None:
            for edge, rid in edges.items():
                ok = outcome.get(rid)
                if ok is None:
                    test = tests[rid][0]
                    ok = outcome[rid] = test is None or bool(test(None, event))
                if ok:
                    found.append((edge, edge.dynamic))

        keep(table.rest)
        values = event[0]
        for j in table.positions:
            value = values[j]
            if value is not None:
                bucket = table.buckets.get((j, value))
                if bucket:
                    keep(bucket)
        return found
