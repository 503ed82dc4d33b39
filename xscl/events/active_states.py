"""Which active states an event may affect, with or without the AN index (thesis 4.5.3).

A state is **active** while it holds instances. For an event, the engine needs
the active states reading its stream whose filter predicate's *static* part
(the conjuncts that read only the event) holds. Two implementations of one
small protocol:

* ``ScannedActiveStates``: every active state of the stream, each static part
  evaluated;
* ``IndexedActiveStates``: the AN index, a hash on one ``event.a = constant``
  conjunct of each filter (the pub/sub part of the thesis's two-level index),
  so an event reaches only the states whose constant it carries, plus the
  states without such a conjunct.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from xscl.events import closures
from xscl.events.automaton import State
from xscl.events.closures import Closure
from xscl.events.ir import Cmp, E, Lit

__all__ = ["ActiveStates", "IndexedActiveStates", "ScannedActiveStates"]


class ActiveStates(Protocol):
    """The active states, by input stream."""

    def activate(self, state: State) -> None:
        """``state`` now holds instances."""

    def deactivate(self, state: State) -> None:
        """``state`` holds no instance any more."""

    def affected(self, stream: str, event: Any) -> Iterable[State]:
        """Active states reading ``stream`` whose filter's static part ``event`` satisfies."""

    def __len__(self) -> int: ...


class ScannedActiveStates:
    """Active states per stream; each static filter part evaluated for every event."""

    def __init__(self) -> None:
        self._by_stream: dict[str, dict[State, None]] = {}
        self._count = 0

    def activate(self, state: State) -> None:
        assert state.stream is not None
        states = self._by_stream.setdefault(state.stream, {})
        if state not in states:
            states[state] = None
            self._count += 1

    def deactivate(self, state: State) -> None:
        assert state.stream is not None
        if self._by_stream.get(state.stream, {}).pop(state, 0) is None:
            self._count -= 1

    def affected(self, stream: str, event: Any) -> Iterable[State]:
        states = self._by_stream.get(stream)
        if not states:
            return ()
        return [s for s in states if s.filter_static is None or s.filter_static(None, event)]

    def __len__(self) -> int:
        return self._count


class _StreamIndex:
    """One stream's active states: hashed on (position, constant), and the rest."""

    def __init__(self) -> None:
        self.buckets: dict[tuple[int, Any], dict[State, Closure | None]] = {}
        self.positions: dict[int, int] = {}  # position -> how many states are hashed on it
        self.rest: dict[State, Closure | None] = {}


class IndexedActiveStates:
    """The AN index: active states hashed on an ``event.a = constant`` filter conjunct."""

    def __init__(self) -> None:
        self._streams: dict[str, _StreamIndex] = {}
        self._where: dict[State, tuple[str, tuple[int, Any] | None]] = {}

    def activate(self, state: State) -> None:
        if state in self._where:
            return
        assert state.stream is not None
        index = self._streams.setdefault(state.stream, _StreamIndex())
        parts = state.filter_parts
        if parts.static_eq:
            (j, constant), *others = parts.static_eq
            residual = closures.predicate(
                tuple(Cmp("=", E(p), Lit(c)) for p, c in others) + parts.static_rest
            )
            key = (j, constant)
            index.buckets.setdefault(key, {})[state] = residual
            index.positions[j] = index.positions.get(j, 0) + 1
            self._where[state] = (state.stream, key)
        else:
            index.rest[state] = state.filter_static
            self._where[state] = (state.stream, None)

    def deactivate(self, state: State) -> None:
        found = self._where.pop(state, None)
        if found is None:
            return
        stream, key = found
        index = self._streams[stream]
        if key is None:
            del index.rest[state]
            return
        bucket = index.buckets[key]
        del bucket[state]
        if not bucket:
            del index.buckets[key]
        j = key[0]
        index.positions[j] -= 1
        if not index.positions[j]:
            del index.positions[j]

    def affected(self, stream: str, event: Any) -> Iterable[State]:
        index = self._streams.get(stream)
        if index is None:
            return ()
        values = event[0]
        found = [
            s for s, residual in index.rest.items() if residual is None or residual(None, event)
        ]
        buckets = index.buckets
        for j in index.positions:
            value = values[j]
            if value is None:
                continue
            bucket = buckets.get((j, value))
            if bucket:
                found.extend(
                    s for s, residual in bucket.items() if residual is None or residual(None, event)
                )
        return found

    def __len__(self) -> int:
        return len(self._where)
