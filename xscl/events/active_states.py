"""Which active states an event may affect, with or without the AN index (thesis 4.5.3).

A state is **active** while it holds instances. For an event, the engine needs
the active states reading its stream whose filter predicate's *static* part
(the conjuncts that read only the event) holds. Two implementations of one
small protocol:

* ``ScannedActiveStates``: every active state of the stream, each static part
  evaluated;
* ``IndexedActiveStates``: the AN index, a hash on the constants of each
  filter's ``event.a = constant`` conjuncts (the pub/sub part of the thesis's
  two-level index), so an event reaches only the states whose constants it
  carries, plus the states without such conjuncts.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from xscl.events.automaton import State
from xscl.events.ir import probe_keys

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


class IndexedActiveStates:
    """The AN index: active states hashed on the constants of their filter's static equalities.

    Grouped by the positions of those equalities as the FR index's tables are
    (``xscl.events.edge_index.signature``), so one probe per group in use.
    """

    def __init__(self) -> None:
        self._streams: dict[
            str, dict[tuple[int, ...], dict[tuple[Any, ...], dict[State, None]]]
        ] = {}
        self._where: dict[State, tuple[tuple[int, ...], tuple[Any, ...]]] = {}

    def activate(self, state: State) -> None:
        if state in self._where:
            return
        assert state.stream is not None
        positions, constants = state.filter_signature
        groups = self._streams.setdefault(state.stream, {})
        groups.setdefault(positions, {}).setdefault(constants, {})[state] = None
        self._where[state] = (positions, constants)

    def deactivate(self, state: State) -> None:
        where = self._where.pop(state, None)
        if where is None:
            return
        assert state.stream is not None
        positions, constants = where
        groups = self._streams[state.stream]
        bucket = groups[positions][constants]
        del bucket[state]
        if not bucket:
            del groups[positions][constants]
            if not groups[positions]:
                del groups[positions]

    def affected(self, stream: str, event: Any) -> Iterable[State]:
        groups = self._streams.get(stream)
        if not groups:
            return ()
        values = event[0]
        found: list[State] = []
        for positions, group in groups.items():
            key = probe_keys(positions, values)
            bucket = group.get(key) if key is not None else None
            if bucket:
                found.extend(
                    s
                    for s in bucket
                    if s.filter_rest_static is None or s.filter_rest_static(None, event)
                )
        return found

    def __len__(self) -> int:
        return len(self._where)
