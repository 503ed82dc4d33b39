"""A task's result part, written as its lines arrive.

A heavy micro-batch's results can be gigabytes: a ``SELECT *`` result carries its
documents' elements, and at 100k subscriptions one batch of 2,000 items made
~10 GB of JSON Lines. So a task never holds its results: each line goes to the
staging file as it comes, and the file is made durable when the task's rows end.
``commit_batch`` (``results_sink``) renames the parts under the batch's marker.

One protocol (``ResultPart``), one implementation per results format:

* ``JsonLinesPart``: the lines as they are (spec section 4's interchange format, and
  channel lines holding many queries' records of one match: ``results.channels``);
* ``ParquetPart``: the records as rows of ``results.parquet.RESULT_SCHEMA``,
  a row group at a time; a channel line's members are rows of their own (Parquet
  keeps one row per record; zstd over its pages removes most repeated XML).

Example::

    with staged_part("jsonl", staging, partition) as part:
        for line in lines:
            part.add(line)
        staged = part.close()     # StagedPart(partition, ".../<uuid>.jsonl", rows)

Where it runs: executors, once per join group and batch (``group_parts``: the join
groups' results) or per sink task attempt (the CEL job's results); nothing here is
pickled (the task returns the ``StagedPart``). A failed attempt's file is removed,
so a retried task leaves no orphan in the staging folder.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Protocol

from xscl.connectors.document import parse_ts
from xscl.results.channels import line_records
from xscl.results.commit import StagedPart

#: Bytes a JSON Lines part buffers before writing to its file.
WRITE_BUFFER = 1 << 20


class ResultPart(Protocol):
    """One task's staged result file."""

    def add(self, line: bytes, records: int = 1) -> None:
        """Append one line (newline included): a spec section 4 record, or a channel line
        holding ``records`` records (``results.channels``)."""

    def close(self) -> StagedPart:
        """Make the file durable; what the driver's commit renames (no file: no rows)."""

    def discard(self) -> None:
        """Drop what was written (the task failed; its retry stages a new file)."""


class JsonLinesPart:
    """The lines, byte for byte, in ``<staging>/<uuid>.jsonl`` (created on the first)."""

    def __init__(self, staging: Path, partition: int) -> None:
        self.staging = staging
        self.partition = partition
        self.path: Path | None = None
        self.rows = 0
        self._file: IO[bytes] | None = None

    def add(self, line: bytes, records: int = 1) -> None:
        if self._file is None:
            self.staging.mkdir(parents=True, exist_ok=True)
            self.path = self.staging / f"{uuid.uuid4().hex}.jsonl"
            self._file = open(self.path, "wb", buffering=WRITE_BUFFER)  # noqa: SIM115
        self._file.write(line)
        self.rows += records

    def close(self) -> StagedPart:
        if self._file is not None:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            self._file = None
        return StagedPart(self.partition, None if self.path is None else str(self.path), self.rows)

    def discard(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        if self.path is not None:
            self.path.unlink(missing_ok=True)


class ParquetPart:
    """The records as Parquet rows (``results.parquet.StagedParquet``: a row group at a
    time, so the task holds one group, not the batch)."""

    def __init__(self, staging: Path, partition: int) -> None:
        from xscl.results.parquet import StagedParquet

        self.partition = partition
        self._staged = StagedParquet(staging)

    def add(self, line: bytes, records: int = 1) -> None:
        for record in line_records(line):  # a row per record: a channel's members too
            self._staged.write_fields(**record_fields(record))

    def close(self) -> StagedPart:
        self._staged.finish()
        part = self._staged.part()
        if part is None:
            return StagedPart(self.partition, None, 0)
        return StagedPart(self.partition, part.staged, part.rows)

    def discard(self) -> None:
        self._staged.abort()
        if self._staged.path is not None:
            self._staged.path.unlink(missing_ok=True)


#: The part class of each results format.
PARTS: dict[str, type[JsonLinesPart] | type[ParquetPart]] = {
    "jsonl": JsonLinesPart,
    "parquet": ParquetPart,
}
#: Formats of the committed result part files (``--results-format``).
RESULTS_FORMATS = tuple(PARTS)


@contextlib.contextmanager
def staged_part(part_format: str, staging: Path, partition: int) -> Iterator[ResultPart]:
    """A new part of ``part_format``; discarded if the block raises."""
    part: ResultPart = PARTS[part_format](staging, partition)
    try:
        yield part
    except BaseException:
        part.discard()
        raise


def record_fields(record: dict[str, Any]) -> dict[str, Any]:
    """A spec section 4 record as ``StagedParquet.write_fields`` arguments.

    >>> record_fields({"query": "q", "result_id": "r", "nodes": {}, "values": {},
    ...                "xml": "<a/>", "docs": [{"stream": "S", "docid": "d",
    ...                                         "ts": "1970-01-01T00:00:01Z"}]})["docs"]
    [('S', 'd', 1000000)]
    """
    return {
        "query": record["query"],
        "result_id": record["result_id"],
        "docs": [(d["stream"], d["docid"], parse_ts(d["ts"])) for d in record["docs"]],
        "nodes": record["nodes"],
        "values": record["values"],
        "xml": record["xml"],
    }
