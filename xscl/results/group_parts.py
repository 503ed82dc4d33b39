"""A join group's results, written by the group's own task: only small rows go on.

A join group builds its result records (``xscl.engine.groups``); a ``SELECT *`` record carries its
documents' XML (~17 KB a result in the heavy 10k benchmark, 1.8 GB per run). Sent as
output rows, every byte crossed pandas -> Arrow -> the JVM -> a shuffle -> Arrow ->
the sink's Python. Instead the group writes its records to a staged result part
(``parts``) as they are made, and yields:

* one ``part`` row: the staged file and its row count (``line``, JSON) and the
  records' largest end time (``end``); the sink passes it to the driver's commit,
  which renames it under the batch's marker like the sink's own parts;
* the Atom entries the query's feed may show: only each query's newest
  ``feed_entries`` records of the group's batch (a feed shows no more), rendered
  here from the record objects (``atom.EntryRenderer``: no JSON to parse back, the
  XML pieces' hashes already known) into a staged entries file, and sent as
  ``entry-at`` rows (``line`` = ``offset:size:path``); the sink reads the bytes back
  and merges them into the feeds (the results folder is shared by every task, as
  the driver's commit already requires).

Records of one match for many queries are written once, as a channel line
(``record_lines``, ``channels``: Hong 2009 §5.3); ``GroupParts.channels`` False writes
one line per record (the benchmark's "without channels").

Exactly once: a staged part is committed only through the batch's marker (as the
sink's parts are). A group call that fails removes its files; one whose task is
retried later leaves orphans that no marker names, removed by the batch's commit
(``sink``: no task runs between micro-batches, so every entries file is read by
then) or at the job's next start (``commit.clear_staging``). A replayed batch
stages new files.

Where it runs: executors, once per join group and batch, and once per source task
for the stateless queries' results; ``GroupParts`` is pickled with the job's functions
and holds strings and integers only; each Python worker keeps one ``EntryRenderer``
(its caches serve every call; ``spark_plugin.worker_context``).
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from xscl.engine.json_lines import JsonLineEncoder
from xscl.engine.output import ResultRecord
from xscl.results.atom import EntryRenderer
from xscl.results.commit import STAGING, unwritable
from xscl.results.feed_rows import keep_newest
from xscl.results.parts import PARTS, ResultPart
from xscl.results.record_lines import Line, record_lines

#: One output row of the join groups (``spark_plugin.job.join_groups.OUTPUT_DDL``).
OutputRow = tuple[str, str, str, int, bytes]


@dataclass(frozen=True)
class GroupParts:
    """Where and how the job's tasks write their results (built on the driver)."""

    #: the results folder the job's sink commits into (an epoch's folder under a lease)
    path: str
    part_format: str
    feed_entries: int
    #: store the records of one match for many queries once, as a channel line
    #: (``record_lines.ChannelLines``); False: one line per record
    channels: bool = True

    def writer(self, partition: int, renderer: EntryRenderer) -> PartWriter:
        """A writer of one task's records (``partition``: the task's, the staged part's
        order in its batch; ``renderer``: the worker's)."""
        return PartWriter(self, partition, renderer)

    def rows(
        self, records: Iterable[ResultRecord], partition: int, renderer: EntryRenderer
    ) -> list[OutputRow]:
        """Stage ``records`` (each result id once); the rows for the sink.

        >>> import tempfile
        >>> from xscl.engine.output import ResultRecord
        >>> out = GroupParts(tempfile.mkdtemp(), "jsonl", feed_entries=1)
        >>> recs = [ResultRecord("q", f"r{n}", (("S", f"d{n}", n),), (), (), n, n, "<a/>")
        ...         for n in (1, 2)]
        >>> rows = out.rows(recs, 0, EntryRenderer(2**20))
        >>> [(kind, rid, end) for kind, _q, rid, end, _line in rows]
        [('entry-at', 'r2', 2), ('part', '', 2)]
        """
        writer = self.writer(partition, renderer)
        try:
            for record in records:
                writer.add(record)
        except BaseException:
            writer.discard()
            raise
        return writer.finish()


class PartWriter:
    """One task's staged part and its queries' newest records (``GroupParts.writer``).

    ``add`` each record as it is made; ``finish`` makes the part durable, renders the
    kept records' entries and returns the rows for the sink (none when nothing was
    added); ``discard`` drops the part of a failed task.
    """

    def __init__(self, parts: GroupParts, partition: int, renderer: EntryRenderer) -> None:
        self.parts = parts
        self.renderer = renderer
        self.staging = Path(parts.path) / STAGING
        self._part: ResultPart = PARTS[parts.part_format](self.staging, partition)
        self._lines = record_lines(parts.channels, JsonLineEncoder())
        self._newest: dict[str, list[tuple[int, str, ResultRecord]]] = {}
        self._seen: set[str] = set()
        self._max_end = 0

    def add(self, record: ResultRecord) -> None:
        if record.result_id in self._seen:
            return
        self._seen.add(record.result_id)
        self._write(self._lines.add(record))
        end = record.end_micros
        self._max_end = max(self._max_end, end)
        kept = self._newest.setdefault(record.query, [])
        keep_newest(kept, (end, record.result_id, record), self.parts.feed_entries)

    def _write(self, lines: list[Line]) -> None:
        try:
            for line, records in lines:
                self._part.add(line, records)
        except OSError as exc:  # the results folder turned read-only, full, ...: S023
            raise unwritable(exc, self.parts.path) from exc

    def finish(self) -> list[OutputRow]:
        self._write(self._lines.flush())
        try:
            staged = self._part.close()
            if staged.staged is None:
                return []
            rows = stage_entries(self.staging, self._newest, self.renderer)
        except OSError as exc:
            raise unwritable(exc, self.parts.path) from exc
        body = {"file": staged.staged, "rows": staged.rows}
        rows.append(("part", "", "", self._max_end, json.dumps(body).encode()))
        return rows

    def discard(self) -> None:
        """Drop the part of a failed task; a folder that cannot be written keeps it (the
        next start clears the staging folder), and the task's own error is the one told."""
        with contextlib.suppress(OSError):
            self._part.discard()


def stage_entries(
    staging: Path,
    newest: dict[str, list[tuple[int, str, ResultRecord]]],
    renderer: EntryRenderer,
) -> list[OutputRow]:
    """Render each kept record's Atom entry into a new staged entries file; an
    ``entry-at`` row per entry (the file is complete before any row leaves)."""
    path = staging / f"{uuid.uuid4().hex}.entries"
    rows: list[OutputRow] = []
    at = 0
    try:
        with open(path, "wb", buffering=1 << 20) as entries:
            for query, kept in newest.items():
                for end, result_id, record in kept:
                    data = renderer.result_entry(record).data
                    entries.write(data)
                    place = f"{at}:{len(data)}:{path}".encode()
                    rows.append(("entry-at", query, result_id, end, place))
                    at += len(data)
    except BaseException:
        with contextlib.suppress(OSError):  # the error to tell is the write's
            path.unlink(missing_ok=True)
        raise
    return rows
