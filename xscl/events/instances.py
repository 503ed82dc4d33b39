"""The instances at a state, with or without the AI index (thesis 4.5.3).

An instance is ``(values, start, end, origin, membership)``: the stored
composite event, the end of its first event (``origin``, so a query subscribed
later ignores instances that began before it) and the channel membership of the
tuple it came from (``xscl.events.channels``; ``-1`` from a plain stream). A
store answers which instances an event may *affect* and leaves a ``residual``
part of the state's filter predicate for the engine to check. Two
implementations of one small protocol:

* ``ScannedInstances``: every instance is a candidate (no AI index);
* ``HashedInstances``: the AI index, a hash table on the values that the
  filter's equality conjuncts ``event.a = instance.b`` compare, so an event
  touches only the instances with its values (a grouping, like CQL's
  PARTITION BY). An instance with a null in its key can never be affected, so
  it is not kept (thesis 4.4.5: it can no longer complete).

>>> from xscl.events.ir import Cmp, E, I
>>> store = HashedInstances(((0, 1),), ())
>>> store.add((("x", "IBM"), 1, 1, 1, -1)), store.add((("y", "MSFT"), 2, 2, 2, -1))
(True, True)
>>> list(store.candidates((("IBM", 5), 3, 3))), len(store)
([(('x', 'IBM'), 1, 1, 1, -1)], 2)
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Protocol

from xscl.events import closures
from xscl.events.closures import Closure
from xscl.events.ir import Parts, Pred

__all__ = [
    "HashedInstances",
    "InstanceStore",
    "ScannedInstances",
    "hashed_store",
    "scanned_store",
]

Instance = tuple[tuple[Any, ...], int, int, int, int]

_EMPTY: tuple[Instance, ...] = ()


class InstanceStore(Protocol):
    """The instances of one state."""

    #: The part of the state's dynamic filter predicate candidates must still pass.
    residual: Closure | None

    def add(self, instance: Instance) -> bool:
        """Keep ``instance``; False when it is already there (or can never be affected)."""

    def discard(self, instance: Instance) -> None:
        """Drop ``instance`` if it is there."""

    def candidates(self, event: Any) -> Iterable[Instance]:
        """The instances ``event`` may affect."""

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[Instance]: ...


class ScannedInstances:
    """All instances in insertion order; every one is a candidate."""

    def __init__(self, dynamic: Pred) -> None:
        self.residual = closures.predicate(dynamic)
        self._items: dict[Instance, None] = {}

    def add(self, instance: Instance) -> bool:
        if instance in self._items:
            return False
        self._items[instance] = None
        return True

    def discard(self, instance: Instance) -> None:
        self._items.pop(instance, None)

    def candidates(self, event: Any) -> Iterable[Instance]:
        return self._items

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Instance]:
        return iter(list(self._items))


class HashedInstances:
    """Instances hashed on the values the filter's ``event.a = instance.b`` conjuncts compare."""

    def __init__(self, equalities: tuple[tuple[int, int], ...], rest: Pred) -> None:
        self.residual = closures.predicate(rest)
        self._event_positions = tuple(j for j, _ in equalities)
        self._instance_positions = tuple(i for _, i in equalities)
        self._buckets: dict[Any, dict[Instance, None]] = {}
        self._size = 0

    def _key(self, values: tuple[Any, ...], positions: tuple[int, ...]) -> Any:
        if len(positions) == 1:
            return values[positions[0]]
        key = tuple(values[p] for p in positions)
        return None if None in key else key

    def add(self, instance: Instance) -> bool:
        key = self._key(instance[0], self._instance_positions)
        if key is None:
            return False
        bucket = self._buckets.setdefault(key, {})
        if instance in bucket:
            return False
        bucket[instance] = None
        self._size += 1
        return True

    def discard(self, instance: Instance) -> None:
        key = self._key(instance[0], self._instance_positions)
        bucket = self._buckets.get(key)
        if bucket is not None and bucket.pop(instance, 0) is None:
            self._size -= 1
            if not bucket:
                del self._buckets[key]

    def candidates(self, event: Any) -> Iterable[Instance]:
        key = self._key(event[0], self._event_positions)
        if key is None:
            return _EMPTY
        return self._buckets.get(key, _EMPTY)

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Instance]:
        return iter([i for bucket in self._buckets.values() for i in bucket])


def scanned_store(filter_parts: Parts) -> InstanceStore:
    """A store without the AI index, for a state whose filter sorts into ``filter_parts``."""
    return ScannedInstances(filter_parts.dynamic)


def hashed_store(filter_parts: Parts) -> InstanceStore:
    """A store with the AI index (scanned when the filter has no ``event.a = instance.b``)."""
    if not filter_parts.dynamic_eq:
        return ScannedInstances(filter_parts.dynamic)
    return HashedInstances(filter_parts.dynamic_eq, filter_parts.dynamic_rest)
