"""``xscl-results``: an idempotent sink of result records (spec section 4), on Spark.

The results folder, its commit protocol and its readers are ``xscl.results``
(``commit``, ``read``); this module only adapts them to Spark's Python data source
API: tasks stage their rows (``stage_rows``: JSON Lines; Arrow batches to Parquet
with option ``format`` = ``parquet``, ``xscl.results.parquet``) and the driver commits
each micro-batch under a marker named by its batch id, so a replayed batch writes
nothing twice. Readers (``xscl.results.read.read_results``) read only marked files.

Options: ``path`` (required), ``format`` = ``jsonl`` (default) or ``parquet``.

Where things run: ``write`` on executors (once per task and attempt; the writer
object is pickled there, so it holds only strings and booleans); ``commit`` /
``abort`` on the driver (once per micro-batch or write).
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    DataSourceStreamWriter,
    DataSourceWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import Row, StructType

from xscl.errors import DataSourceOptionError
from xscl.results.commit import COMMITS, STAGING, StagedPart, commit_batch, discard
from xscl.results.parquet import json_value
from xscl.results.read import committed_markers

FORMAT_NAME = "xscl-results"
#: Values of the ``format`` option: how tasks write their part files.
PART_FORMATS = ("jsonl", "parquet")


@dataclass
class StagedMessage(WriterCommitMessage):
    """A task's ``StagedPart``, as the message Spark carries to the driver's commit."""

    part: StagedPart


def staged(messages: Iterable[WriterCommitMessage | None]) -> list[StagedPart]:
    """The staged parts the tasks of a batch reported (driver)."""
    return [m.part for m in messages if isinstance(m, StagedMessage)]


def task_partition() -> int:
    """The partition of the running Spark task (0 outside a task): a part's order in its batch."""
    from pyspark import TaskContext

    context = TaskContext.get()
    return context.partitionId() if context is not None else 0


def record_line(row: Row) -> str:
    """The JSON line of one result row (spec section 4; timestamps as RFC 3339 UTC)."""
    record = json_value(row.asDict(recursive=True))
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


def stage_rows(path: str, rows: Iterable[Row]) -> StagedPart:
    """Write one task's rows to a staging file (executor, once per task attempt)."""
    partition = task_partition()
    staging = Path(path) / STAGING
    staging.mkdir(parents=True, exist_ok=True)
    target = staging / f"{uuid.uuid4().hex}.jsonl"
    count = 0
    seen: set[str] = set()
    with open(target, "w", encoding="utf-8", newline="\n") as handle:
        for row in rows:
            result_id = row["result_id"]
            if result_id in seen:
                continue
            seen.add(result_id)
            handle.write(record_line(row))
            handle.write("\n")
            count += 1
        handle.flush()
        os.fsync(handle.fileno())
    if count == 0:
        target.unlink()
        return StagedPart(partition, None, 0)
    return StagedPart(partition, str(target), count)


class ResultsDataSource(DataSource):
    """The ``xscl-results`` format (driver: once per plan)."""

    @classmethod
    def name(cls) -> str:
        """The format name (driver, at registration)."""
        return FORMAT_NAME

    def _path(self) -> str:
        path = self.options.get("path")
        if not path:
            raise DataSourceOptionError("xscl-results needs option 'path' (a directory)")
        return str(path)

    def _parquet(self) -> bool:
        part_format = str(self.options.get("format", "jsonl")).lower()
        if part_format not in PART_FORMATS:
            raise DataSourceOptionError(
                f"xscl-results option 'format' is {part_format!r}; use one of "
                + ", ".join(PART_FORMATS)
            )
        return part_format == "parquet"

    def writer(self, schema: StructType, overwrite: bool) -> ResultsBatchWriter:
        """A one-shot writer (driver, once per write; pickled to executors)."""
        _require_result_id(schema)
        if self._parquet():
            return ParquetResultsBatchWriter(self._path(), overwrite)
        return ResultsBatchWriter(self._path(), overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool) -> ResultsStreamWriter:
        """A micro-batch writer (driver, once per query start; pickled to executors)."""
        _require_result_id(schema)
        if self._parquet():
            return ParquetResultsStreamWriter(self._path())
        return ResultsStreamWriter(self._path())


def _require_result_id(schema: StructType) -> None:
    if "result_id" not in schema.fieldNames():
        raise DataSourceOptionError("xscl-results needs a 'result_id' column to be idempotent")


class ResultsStreamWriter(DataSourceStreamWriter):
    """Writes each micro-batch once, keyed by its batch id (see the module docstring)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def write(self, iterator: Iterator[Row]) -> StagedMessage:
        """Stage this task's rows (executor, once per task attempt)."""
        return StagedMessage(stage_rows(self.path, iterator))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Publish the micro-batch unless it is already published (driver, once per batch)."""
        commit_batch(self.path, f"{batchId:020d}", staged(messages))

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Drop what the failed attempt staged (driver, on task failure)."""
        discard(staged(messages))


class ResultsBatchWriter(DataSourceWriter):
    """Writes one ``df.write`` as a batch with a fresh, time-ordered marker name."""

    def __init__(self, path: str, overwrite: bool) -> None:
        self.path = path
        self.overwrite = overwrite

    def write(self, iterator: Iterator[Row]) -> StagedMessage:
        """Stage this task's rows (executor, once per task attempt)."""
        return StagedMessage(stage_rows(self.path, iterator))

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Publish the write; with ``mode("overwrite")`` retire earlier markers (driver, once)."""
        retired = committed_markers(self.path) if self.overwrite else []
        if self.overwrite:
            for marker in sorted((Path(self.path) / COMMITS).glob("*.json")):
                marker.unlink()
        commit_batch(
            self.path, f"w-{time.time_ns():020d}-{uuid.uuid4().hex[:8]}", staged(messages)
        )
        for old in retired:  # unreferenced now: readers no longer look at them
            for part in old["parts"]:
                (Path(self.path) / part["file"]).unlink(missing_ok=True)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Drop what the failed write staged (driver, on failure)."""
        discard(staged(messages))


class _ParquetTasks:
    """Writer tasks that get Arrow batches and stage them as one Parquet file."""

    path: str

    def write(self, iterator: Iterator[Any]) -> StagedMessage:
        """Stage this task's Arrow batches (executor, once per task attempt)."""
        from xscl.results.parquet import stage_record_batches

        return StagedMessage(stage_record_batches(self.path, iterator, task_partition()))


class ParquetResultsStreamWriter(_ParquetTasks, ResultsStreamWriter, DataSourceStreamArrowWriter):
    """``ResultsStreamWriter`` whose tasks write Arrow batches to Parquet parts."""


class ParquetResultsBatchWriter(_ParquetTasks, ResultsBatchWriter, DataSourceArrowWriter):
    """``ResultsBatchWriter`` whose tasks write Arrow batches to Parquet parts."""
