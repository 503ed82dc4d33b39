"""Prefix merging of automaton states (thesis 4.5.5), on or off.

The compiler asks for a state by its **key**: its entering edges (source state
and label), its input stream, its filter predicate and its rebind label, the
notion of equivalent states of Definition 2 restricted to prefixes, as the
thesis's engine merges them. Two implementations of one small protocol:

* ``MergedStates``: equal keys give the same state, so queries with a common
  prefix share its states, edges and instances;
* ``SeparateStates``: every query gets its own states (the "No State Merging"
  mode of Table 4.2).

>>> merged, separate = MergedStates(), SeparateStates()
>>> made = iter(range(10))
>>> merged.state("k", lambda: next(made)), merged.state("k", lambda: next(made))
(0, 0)
>>> separate.state("k", lambda: next(made)), separate.state("k", lambda: next(made))
(1, 2)
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Protocol, TypeVar

__all__ = ["MergedStates", "SeparateStates", "StateSharing"]

T = TypeVar("T")


class StateSharing(Protocol):
    """Finds or makes the state for a key; forgets a key when its state is removed."""

    def state(self, key: Hashable, make: Callable[[], T]) -> T:
        """The state for ``key``: an existing one, or ``make()``."""

    def forget(self, key: Hashable, state: object) -> None:
        """``state`` (made for ``key``) is gone."""


class MergedStates:
    """Equal keys, one state."""

    def __init__(self) -> None:
        self._states: dict[Hashable, object] = {}

    def state(self, key: Hashable, make: Callable[[], T]) -> T:
        found = self._states.get(key)
        if found is None:
            found = self._states[key] = make()
        return found  # type: ignore[return-value]

    def forget(self, key: Hashable, state: object) -> None:
        if self._states.get(key) is state:
            del self._states[key]


class SeparateStates:
    """Every request, a new state."""

    def state(self, key: Hashable, make: Callable[[], T]) -> T:
        return make()

    def forget(self, key: Hashable, state: object) -> None:
        return None
