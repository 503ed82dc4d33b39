"""The small rows a feed's results travel as: each query's newest entries, and where a
rendered entry lies (no other import: the job's sink and its commit read these).
"""

from __future__ import annotations

import heapq
from typing import Any


def keep_newest(heap: list[Any], item: tuple[Any, ...], limit: int) -> None:
    """Keep the ``limit`` newest (end, result id, ...) items of a query in a min-heap:
    its feed shows no more.

    >>> heap: list[tuple[int, str]] = []
    >>> for item in [(3, "c"), (1, "a"), (2, "b")]:
    ...     keep_newest(heap, item, 2)
    >>> sorted(heap)
    [(2, 'b'), (3, 'c')]
    """
    if len(heap) < limit:
        heapq.heappush(heap, item)
    elif item[:2] > heap[0][:2]:
        heapq.heapreplace(heap, item)


def entry_reference(line: bytes) -> tuple[str, int, int]:
    """(file, offset, size) of an ``entry-at`` row's entry.

    >>> entry_reference(b"120:35:/out/_staging/ab.entries")
    ('/out/_staging/ab.entries', 120, 35)
    """
    at, size, file = line.split(b":", 2)
    return file.decode(), int(at), int(size)
