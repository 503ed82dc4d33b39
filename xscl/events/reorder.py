"""Events in detection-time order, with a reorder slack (thesis 4.4.2, docs/cel.md 6).

Cayuga buffers arriving events in a priority queue and dequeues an event only
once it is at least T old. Here time is the events' own: an epoch (all events
of one end time) is released once an event ending more than T after it has
arrived, so no on-time event can still join it. An event ending more than T
before the latest end seen is **late**: it becomes a ``CEL-E007`` dead letter,
since its epoch may already be processed.

>>> from xscl.events.envelope import Event
>>> buffer = ReorderBuffer(slack=2)
>>> [[t for t, _ in buffer.push(Event("S", t, t, {}))] for t in (5, 3, 8)]
[[], [], [3, 5]]
>>> late = buffer.push(Event("S", 4, 4, {}))
>>> late.code, buffer.late
('CEL-E007', 1)
>>> [(t, len(events)) for t, events in buffer.flush()]
[(8, 1)]
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterator

from xscl.connectors.dead_letters import DeadLetter
from xscl.connectors.document import format_ts
from xscl.errors import EventError
from xscl.events.envelope import Event

__all__ = ["Epoch", "ReorderBuffer"]

Epoch = tuple[int, list[Event]]


class ReorderBuffer:
    """Buffers events and releases whole epochs in end-time order."""

    def __init__(self, slack: int) -> None:
        if slack < 0:
            raise ValueError("the reorder slack cannot be negative")
        self.slack = slack
        self.latest: int | None = None
        self.late = 0
        self._heap: list[tuple[int, int, Event]] = []
        self._sequence = itertools.count()

    def push(self, event: Event) -> list[Epoch] | DeadLetter:
        """Add one arriving event: the epochs it releases, or its dead letter if it is late."""
        if self.latest is not None and event.end < self.latest - self.slack:
            self.late += 1
            late = EventError.from_code(
                "CEL-E007",
                f"event ending {format_ts(event.end)} arrived after one ending "
                f"{format_ts(self.latest)}, beyond the reorder slack",
            )
            return DeadLetter.from_error(late, stream=event.stream)
        heapq.heappush(self._heap, (event.end, next(self._sequence), event))
        if self.latest is None or event.end > self.latest:
            self.latest = event.end
        return self._release(self.latest - self.slack)

    def _release(self, before: int | None) -> list[Epoch]:
        released: list[Epoch] = []
        heap = self._heap
        while heap and (before is None or heap[0][0] < before):
            end = heap[0][0]
            group = []
            while heap and heap[0][0] == end:
                group.append(heapq.heappop(heap)[2])
            released.append((end, group))
        return released

    def flush(self) -> Iterator[Epoch]:
        """Release every buffered epoch (the input has ended)."""
        yield from self._release(None)
