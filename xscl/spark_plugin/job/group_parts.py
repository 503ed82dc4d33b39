"""A join group's results, written by the group's own task: only small rows go on.

A join group builds its result records (``groups``); a ``SELECT *`` record carries its
documents' XML (~17 KB a result in the heavy 10k benchmark, 1.8 GB per run). Sent as
output rows, every byte crossed pandas -> Arrow -> the JVM -> a shuffle -> Arrow ->
the sink's Python. Instead the group writes its records to a staged result part
(``result_parts``) as they are made, and yields:

* one ``part`` row: the staged file and its row count (``line``, JSON) and the
  records' largest end time (``end``); the sink passes it to the driver's commit,
  which renames it under the batch's marker like the sink's own parts;
* the rows the query's Atom feed may show: only each query's newest
  ``feed_entries`` records of the group's batch (a feed shows no more), as
  ``feed-at`` rows pointing into the part (``line`` = ``offset:size:path``; the
  sink reads the line back: the results folder is shared by every task, as the
  driver's commit already requires), or, for a part that does not keep the lines
  as they are (Parquet), as ``feed`` rows carrying the line, each as it is made.

Exactly once: a staged part is committed only through the batch's marker (as the
sink's parts are). A group call that fails removes its file; one whose task is
retried later leaves an orphan that no marker names, removed by the batch's commit
(``sink``: no task runs between micro-batches) or at the job's next start
(``results_sink.clear_staging``). A replayed batch stages new files.

Where it runs: executors, once per join group and batch (inside ``JoinGroups``);
``GroupParts`` is pickled with ``JoinGroups`` and holds strings and integers only.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xscl.engine.json_lines import JsonLineEncoder
from xscl.engine.output import ResultRecord
from xscl.spark_plugin.job.result_parts import staged_part
from xscl.spark_plugin.results_sink import STAGING, task_partition

#: One output row of the join groups (``groups.OUTPUT_DDL``).
OutputRow = tuple[str, str, str, int, bytes]


@dataclass(frozen=True)
class GroupParts:
    """Where and how the join groups write their results (built on the driver)."""

    #: the results folder the job's sink commits into (an epoch's folder under a lease)
    path: str
    part_format: str
    feed_entries: int

    def rows(self, records: Iterable[ResultRecord]) -> Iterator[OutputRow]:
        """Stage ``records`` (each result id once) and yield the rows for the sink.

        >>> import tempfile
        >>> from xscl.engine.output import ResultRecord
        >>> out = GroupParts(tempfile.mkdtemp(), "jsonl", feed_entries=1)
        >>> recs = [ResultRecord("q", f"r{n}", (("S", f"d{n}", n),), (), (), n, n, "<a/>")
        ...         for n in (1, 2)]
        >>> [(kind, rid, end) for kind, _q, rid, end, _line in out.rows(recs)]
        [('feed-at', 'r2', 2), ('part', '', 2)]
        """
        encoder = JsonLineEncoder()
        newest: dict[str, list[tuple[int, str, int, int]]] = {}
        seen: set[str] = set()
        max_end = 0
        staging = Path(self.path) / STAGING
        with staged_part(self.part_format, staging, task_partition()) as part:
            for record in records:
                if record.result_id in seen:
                    continue
                seen.add(record.result_id)
                line = encoder.encode(record)
                at = part.add(line)
                end = record.end_micros
                max_end = max(max_end, end)
                if at is None:
                    yield ("feed", record.query, record.result_id, end, line)
                else:
                    kept = newest.setdefault(record.query, [])
                    keep_newest(kept, (end, record.result_id, at, len(line)), self.feed_entries)
            staged = part.close()
        if staged.staged is None:
            return
        for query, kept in newest.items():
            for end, result_id, at, size in kept:
                yield ("feed-at", query, result_id, end, f"{at}:{size}:{staged.staged}".encode())
        body = {"file": staged.staged, "rows": staged.rows}
        yield ("part", "", "", max_end, json.dumps(body).encode())


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


def feed_reference(line: bytes) -> tuple[str, int, int]:
    """(file, offset, size) of a ``feed-at`` row's line.

    >>> feed_reference(b"120:35:/out/_staging/ab.jsonl")
    ('/out/_staging/ab.jsonl', 120, 35)
    """
    at, size, file = line.split(b":", 2)
    return file.decode(), int(at), int(size)
