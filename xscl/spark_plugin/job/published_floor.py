"""The eviction floor of a micro-batch when join groups publish.

A join group's published result comes back as a document a micro-batch later
(``routed_source``), and its descendants later still, so a group cannot evict by the
newest timestamps of its own batch's documents: a document it never saw may still bring
an old partner's match. The floor ``F`` of batch ``b`` is what every group of that batch
evicts by (less the lateness and its reach), before and after matching:

    F = min(W, E + lateness)

* ``W``: the input spool's newest timestamp before the batch (``newest_before``): every
  input record of this batch or a later one has a newest timestamp of at least ``W``,
  and is not late, so its timestamp is at least ``W - lateness``;
* ``E``: the earliest timestamp of the published records the batch reads.

Every document processed in batch ``b`` or later has a timestamp of at least
``F - lateness``: an input record by the above; a published one read in ``b`` because
its timestamp is at least ``E``; a published one read later is the result of a match,
so its timestamp is the latest of its documents', at least that of the document that
completed it, processed in an earlier batch (but not before ``b``): by induction. So no
document a group evicts below ``F - lateness - reach`` can join a later one.

The commit records each append's earliest timestamp in ``EARLIEST`` beside the spool's
records (``record_earliest``: one line, ``<first offset> <timestamp>``, before the
records, under the spool's lock), so the planner finds ``E`` without reading them.

>>> import tempfile
>>> folder = tempfile.mkdtemp()
>>> record_earliest(folder, 0, 50); record_earliest(folder, 3, 20); record_earliest(folder, 5, 90)
>>> [earliest_published(folder, low, high) for low, high in ((0, 3), (2, 4), (5, 6))]
[50, 20, 90]
>>> batch_floor(newest_before=100, earliest=None, lateness=10), batch_floor(100, 60, 10)
(100, 70)

Where it runs: ``record_earliest`` on the driver in the commit, once per batch that
publishes; ``earliest_published`` on the driver when a batch is planned;
``batch_floor`` in the source tasks.
"""

from __future__ import annotations

import os
from pathlib import Path

EARLIEST = "EARLIEST"


def record_earliest(spool: str | Path, first: int, earliest: int) -> None:
    """Record that the records appended from offset ``first`` on have no timestamp
    before ``earliest`` (the appender holds the spool's lock)."""
    path = Path(spool) / EARLIEST
    with open(path, "a", encoding="ascii") as handle:
        handle.write(f"{first} {earliest}\n")
        handle.flush()
        os.fsync(handle.fileno())


def earliest_published(spool: str | Path, low: int, high: int) -> int | None:
    """The earliest timestamp of the published records ``[low, high)`` (None: no
    line covers them). A line covers the offsets from its first to the next line's."""
    try:
        text = (Path(spool) / EARLIEST).read_text(encoding="ascii")
    except FileNotFoundError:
        return None
    lines = sorted(tuple(map(int, line.split())) for line in text.splitlines() if line)
    found: int | None = None
    for n, (first, earliest) in enumerate(lines):
        end = lines[n + 1][0] if n + 1 < len(lines) else None
        if first < high and (end is None or end > low):
            found = earliest if found is None else min(found, earliest)
    return found


def batch_floor(newest_before: int | None, earliest: int | None, lateness: int) -> int | None:
    """``F`` (see the module docstring); None: no bound (nothing came before)."""
    if newest_before is None:
        return None
    return newest_before if earliest is None else min(newest_before, earliest + lateness)
