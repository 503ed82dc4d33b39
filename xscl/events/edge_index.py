"""Which forward and rebind edges of a state an event may traverse, with or without
the FR index (thesis 4.5.4).

For an affected state (or a start state, which is always active) the engine
asks for its edges whose *static* part (the conjuncts that read only the
event) holds, each with the rest of its predicate still to check per
instance. Two implementations of one small protocol:

* ``ScannedEdges``: every edge, with its whole predicate left to check for
  every instance;
* ``IndexedEdges``: the FR index: per state, edges hashed on the constants
  of their ``event.a = constant`` conjuncts, the remaining static conjuncts
  evaluated once per event (once per distinct conjunction, however many
  edges of the state share it), so only the dynamic part is left per
  instance. On the start state of a stream this is the pub/sub index over
  every query's first step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from xscl.events import closures
from xscl.events.automaton import Edge, State
from xscl.events.closures import Closure
from xscl.events.ir import Pred, probe_keys, signature

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


class _Residuals:
    """Static residual predicates of the indexed edges, each compiled once with a small id.

    Edges of any state that share a residual share its id, so the per-event memo
    of which residuals hold never hashes expressions.
    """

    def __init__(self) -> None:
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


#: One state's edges: signature -> constants -> edge -> residual id.
_Table = dict[tuple[int, ...], dict[tuple[Any, ...], dict[Edge, int]]]


class IndexedEdges:
    """The FR index: per state, edges hashed on the values their static equalities fix.

    Edges are grouped by the positions of their ``event.a = constant``
    conjuncts (a *signature*); within a group, by the constants. An event is
    looked up once per signature, so it meets only edges whose every equality
    it satisfies (the counting idea of pub/sub matching, one probe per
    combination of attributes in use); the remaining static conjuncts are
    evaluated once per event and distinct conjunction.
    """

    def __init__(self) -> None:
        self._tables: dict[State, _Table] = {}
        self._where: dict[Edge, tuple[tuple[int, ...], tuple[Any, ...]]] = {}
        self._residuals = _Residuals()

    def add(self, edge: Edge) -> None:
        table = self._tables.setdefault(edge.source, {})
        positions, constants = signature(edge.parts.static_eq)
        rid = self._residuals.acquire(edge.parts.static_rest)
        table.setdefault(positions, {}).setdefault(constants, {})[edge] = rid
        self._where[edge] = (positions, constants)

    def remove(self, edge: Edge) -> None:
        where = self._where.pop(edge, None)
        if where is None:
            return
        positions, constants = where
        table = self._tables[edge.source]
        group = table[positions]
        bucket = group[constants]
        self._residuals.release(bucket.pop(edge))
        if not bucket:
            del group[constants]
            if not group:
                del table[positions]
                if not table:
                    del self._tables[edge.source]

    def candidates(self, state: State, event: Any) -> Candidates:
        table = self._tables.get(state)
        if table is None:
            return ()
        outcome: dict[int, bool] = {}
        tests = self._residuals.tests
        found: list[tuple[Edge, Closure | None]] = []
        values = event[0]
        for positions, group in table.items():
            key = probe_keys(positions, values)
            bucket = group.get(key) if key is not None else None
            if not bucket:
                continue
            for edge, rid in bucket.items():
                ok = outcome.get(rid)
                if ok is None:
                    test = tests[rid][0]
                    ok = outcome[rid] = test is None or bool(test(None, event))
                if ok:
                    found.append((edge, edge.dynamic))
        return found
