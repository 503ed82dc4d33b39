"""``xscl-results``: an idempotent sink of result records (spec section 4), plus its reader.

Layout of a results directory (``path`` option)::

    _staging/<uuid>.jsonl               written by tasks, not yet committed
    part-<batch:020d>-<task:05d>.jsonl  committed data, one JSON result record per line
                                        (or .parquet: option ``format`` = ``parquet``,
                                        or the streaming job's ``--results-format
                                        parquet``; see ``results_parquet``)
    _commits/<batch:020d>.json          commit marker of a micro-batch: its part files
    _commits/w-<ns>-<uuid>.json         commit marker of a batch (non-streaming) write

The streaming job (``xscl serve``) writes one such folder per **epoch** of its lease
(``pair``), chained by records in ``_epochs``::

    _epochs/00000002.json               {"epoch": 2, "after": 17}: epoch 2 continues
                                        after batch 17
    e00000001/_commits/..., part-...    epoch 1's folder (the layout above)
    e00000002/...

Readers follow the chain: of each epoch they take the markers up to the ``after`` of
the next epoch, of the newest every marker. What an instance fenced out of its epoch
commits later is above that cut, so no reader ever sees it.

Guarantee: a micro-batch is visible exactly when its marker exists, and the marker is
written atomically (temporary file, ``fsync``, ``rename``, directory ``fsync``) after
its part files are in place. A replayed micro-batch (Spark re-runs the batch whose
commit it did not log before a crash, with the same id and the same offsets) finds
its marker and discards its new files, or, if the crash hit before the marker,
renames its files over the same names. Either way no line and no file is ever
duplicated. Readers (``read_results`` / ``compact``) only read files named by
markers and also drop any repeated ``result_id`` (first committed wins), so even an
upstream that emits a result twice yields a set. One streaming query per directory
(batch ids are the query's); the directory must be shared by driver and executors.

Options: ``path`` (required), ``format`` = ``jsonl`` (default) or ``parquet``
(the DataFrame's columns as a zstd Parquet table, written from Arrow batches).

Where things run: ``write`` on executors (once per task and attempt; the writer
object is pickled there, so it holds only strings and booleans); ``commit`` /
``abort`` on the driver (once per micro-batch or write).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
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

from xscl.connectors.document import format_ts
from xscl.connectors.durable import fsync_dir, write_atomically
from xscl.errors import DataSourceOptionError, ResultsDirectoryError

FORMAT_NAME = "xscl-results"
#: Values of the ``format`` option: how tasks write their part files.
PART_FORMATS = ("jsonl", "parquet")
STAGING = "_staging"
COMMITS = "_commits"
EPOCHS = "_epochs"
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


@dataclass
class StagedPart(WriterCommitMessage):
    """What one task wrote: its staging file (None when it had no rows)."""

    partition: int
    staged: str | None
    rows: int


def json_value(value: Any) -> Any:
    """``value`` as JSON data: timestamps as RFC 3339 UTC (naive ones read as local time)."""
    if isinstance(value, dt.datetime):
        moment = value if value.tzinfo is not None else value.astimezone()
        delta = moment - _EPOCH
        return format_ts((delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds)
    if isinstance(value, Row):
        return {key: json_value(item) for key, item in value.asDict().items()}
    if isinstance(value, dict):
        return {str(key): json_value(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_value(item) for item in value]
    return value


def record_line(row: Row) -> str:
    """The JSON line of one result row (spec section 4; timestamps as RFC 3339 UTC)."""
    record = json_value(row)
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


def clear_staging(path: str | Path) -> int:
    """Delete staging files a crashed run left behind; how many (driver, at start).

    Only for the job that owns the directory, before its first commit: a staged file
    is either renamed by its batch's commit or orphaned by a crash (the replayed
    batch stages new files), so at start-up every one is an orphan.
    """
    staging = Path(path) / STAGING
    removed = 0
    if staging.is_dir():
        for leftover in staging.iterdir():
            if leftover.is_file():
                leftover.unlink(missing_ok=True)
                removed += 1
    return removed


def task_partition() -> int:
    """The partition of the running Spark task (0 outside a task): a part's order in its batch."""
    from pyspark import TaskContext

    context = TaskContext.get()
    return context.partitionId() if context is not None else 0


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


def _parts(messages: Iterable[WriterCommitMessage | None]) -> list[StagedPart]:
    return sorted(
        (m for m in messages if isinstance(m, StagedPart)), key=lambda part: part.partition
    )


def discard(messages: Iterable[WriterCommitMessage | None]) -> None:
    """Delete the staging files of an aborted or already committed batch (driver)."""
    for part in _parts(messages):
        if part.staged is not None:
            Path(part.staged).unlink(missing_ok=True)


def commit_batch(
    path: str,
    marker_name: str,
    messages: Iterable[WriterCommitMessage | None],
    extra: dict[str, Any] | None = None,
) -> bool:
    """Publish a batch's staged parts under ``marker_name``; False if it was already there.

    ``extra``: more fields for the marker (the streaming job's per-batch figures).
    """
    root = Path(path)
    commits = root / COMMITS
    commits.mkdir(parents=True, exist_ok=True)
    marker = commits / f"{marker_name}.json"
    parts = _parts(messages)
    if marker.exists():
        discard(parts)
        return False
    published: list[dict[str, Any]] = []
    for part in parts:
        if part.staged is None:
            continue
        suffix = Path(part.staged).suffix or ".jsonl"
        name = f"part-{marker_name}-{part.partition:05d}{suffix}"
        os.replace(part.staged, root / name)
        published.append({"file": name, "rows": part.rows})
    fsync_dir(root)
    body = {"batch": marker_name, "parts": published, "rows": sum(p["rows"] for p in published)}
    body.update(extra or {})
    write_atomically(marker, json.dumps(body, sort_keys=True).encode("utf-8"))
    return True


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

    def write(self, iterator: Iterator[Row]) -> StagedPart:
        """Stage this task's rows (executor, once per task attempt)."""
        return stage_rows(self.path, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Publish the micro-batch unless it is already published (driver, once per batch)."""
        commit_batch(self.path, f"{batchId:020d}", messages)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Drop what the failed attempt staged (driver, on task failure)."""
        discard(messages)


class ResultsBatchWriter(DataSourceWriter):
    """Writes one ``df.write`` as a batch with a fresh, time-ordered marker name."""

    def __init__(self, path: str, overwrite: bool) -> None:
        self.path = path
        self.overwrite = overwrite

    def write(self, iterator: Iterator[Row]) -> StagedPart:
        """Stage this task's rows (executor, once per task attempt)."""
        return stage_rows(self.path, iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Publish the write; with ``mode("overwrite")`` retire earlier markers (driver, once)."""
        retired = committed_markers(self.path) if self.overwrite else []
        if self.overwrite:
            for marker in sorted((Path(self.path) / COMMITS).glob("*.json")):
                marker.unlink()
        commit_batch(self.path, f"w-{time.time_ns():020d}-{uuid.uuid4().hex[:8]}", messages)
        for old in retired:  # unreferenced now: readers no longer look at them
            for part in old["parts"]:
                (Path(self.path) / part["file"]).unlink(missing_ok=True)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Drop what the failed write staged (driver, on failure)."""
        discard(messages)


class _ParquetTasks:
    """Writer tasks that get Arrow batches and stage them as one Parquet file."""

    path: str

    def write(self, iterator: Iterator[Any]) -> StagedPart:
        """Stage this task's Arrow batches (executor, once per task attempt)."""
        from xscl.spark_plugin.results_parquet import stage_record_batches

        return stage_record_batches(self.path, iterator)


class ParquetResultsStreamWriter(_ParquetTasks, ResultsStreamWriter, DataSourceStreamArrowWriter):
    """``ResultsStreamWriter`` whose tasks write Arrow batches to Parquet parts."""


class ParquetResultsBatchWriter(_ParquetTasks, ResultsBatchWriter, DataSourceArrowWriter):
    """``ResultsBatchWriter`` whose tasks write Arrow batches to Parquet parts."""


def epoch_folder(root: str | Path, epoch: int) -> Path:
    """The results folder of ``epoch`` under a job's results root."""
    return Path(root) / f"e{epoch:08d}"


def open_epoch(root: str | Path, epoch: int, after: int) -> Path:
    """Chain ``epoch`` after batch ``after`` of the epochs before it; its folder.

    Written once by the instance that holds ``epoch`` before its first commit; from
    then on readers cut the previous epochs at ``after``.
    """
    folder = epoch_folder(root, epoch)
    folder.mkdir(parents=True, exist_ok=True)
    records = Path(root) / EPOCHS
    records.mkdir(parents=True, exist_ok=True)
    body = json.dumps({"epoch": epoch, "after": after}).encode("utf-8")
    write_atomically(records / f"{epoch:08d}.json", body)
    return folder


def epoch_chain(root: str | Path) -> list[tuple[int, int]]:
    """(epoch, after) of every opened epoch, oldest first (empty: not an epoch layout)."""
    records = Path(root) / EPOCHS
    if not records.is_dir():
        return []
    chain = []
    for record in sorted(records.glob("*.json")):
        try:
            body = json.loads(record.read_text(encoding="utf-8"))
            chain.append((int(body["epoch"]), int(body["after"])))
        except (ValueError, KeyError, TypeError) as exc:
            raise ResultsDirectoryError(f"epoch record {record} is unreadable: {exc}") from exc
    return sorted(chain)


def _markers_in(
    folder: Path, cache: dict[Path, dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    commits = folder / COMMITS
    if not commits.is_dir():
        return []
    markers = []
    for marker in sorted(commits.glob("*.json")):
        known = None if cache is None else cache.get(marker)
        if known is None:
            try:
                known = json.loads(marker.read_text(encoding="utf-8"))
            except ValueError as exc:
                raise ResultsDirectoryError(f"commit marker {marker} is not JSON: {exc}") from exc
            if cache is not None:
                cache[marker] = known
        markers.append(known)
    return markers


def visible_markers(
    path: str | Path, cache: dict[Path, dict[str, Any]] | None = None
) -> list[tuple[Path, dict[str, Any]]]:
    """(folder of its parts, marker) of every marker readers see, in commit order.

    A plain results directory: its markers. An epoch chain: each epoch's markers
    after its own ``after`` and up to the next epoch's (the newest: all).
    ``cache`` (marker file -> marker): markers already read, kept by a reader that
    asks every micro-batch; a marker is written once, atomically, and never changed.
    """
    root = Path(path)
    chain = epoch_chain(root)
    if not chain:
        return [(root, marker) for marker in _markers_in(root, cache)]
    out = []
    for index, (epoch, after) in enumerate(chain):
        cut = chain[index + 1][1] if index + 1 < len(chain) else None
        folder = epoch_folder(root, epoch)
        for marker in _markers_in(folder, cache):
            batch = int(marker["batch"])
            if batch > after and (cut is None or batch <= cut):
                out.append((folder, marker))
    return out


def committed_markers(path: str | Path) -> list[dict[str, Any]]:
    """The commit markers of a results directory, in commit order (streaming batches first)."""
    return [marker for _folder, marker in visible_markers(path)]


def read_results(path: str | Path, key: str = "result_id") -> Iterator[dict[str, Any]]:
    """Every committed result record once (first committed wins), in commit order.

    ``key``: the field that identifies a record (``id`` for CEL results, docs/cel.md 5.2).

    Part files are JSON Lines or Parquet (``results_parquet``), by their suffix;
    a directory may hold both (the job restarted with another ``--results-format``).
    """
    seen: set[str] = set()
    for file in _committed_parts(Path(path)):
        for record in _part_records(file):
            if record[key] in seen:
                continue
            seen.add(record[key])
            yield record


def count_results(path: str | Path) -> int:
    """How many records ``read_results`` yields, reading only their result ids.

    From a Parquet part that is one column, from a JSON line its leading
    ``{"query":…,"result_id":…`` (``_jsonl_result_ids``), not every record's XML:
    the job reports this at the end of a run, and parsing each line whole was
    most of the driver's CPU at 1.2 million results (docs/benchmarks.md).
    """
    seen: set[str] = set()
    for file in _committed_parts(Path(path)):
        if file.suffix == ".parquet":
            from xscl.spark_plugin.results_parquet import parquet_result_ids

            with _readable_parquet(file):
                seen.update(parquet_result_ids(file))
        else:
            seen.update(_jsonl_result_ids(file))
    return len(seen)


#: How every JSON line of the job starts (``engine.json_lines.JsonLineEncoder``): the query id
#: as a JSON string (escapes included), then the hex result id.
_LEADING_RESULT_ID = re.compile(rb'\{"query":"(?:[^"\\]|\\.)*","result_id":"([0-9a-f]+)"')


def _jsonl_result_ids(file: Path) -> Iterator[str]:
    """The result id of each line of a JSON Lines part, read from the line's start.

    >>> import tempfile
    >>> part = Path(tempfile.mkdtemp()) / "part.jsonl"
    >>> lines = [{"query": 'q"1', "result_id": "ab12"}, {"result_id": "cd34", "query": "q2"}]
    >>> _ = part.write_text("".join(json.dumps(r, separators=(",", ":")) + chr(10) for r in lines))
    >>> list(_jsonl_result_ids(part))
    ['ab12', 'cd34']

    A line that does not start that way (another writer's key order) is parsed
    whole, and one that is not JSON raises ``ResultsDirectoryError`` as
    ``read_results`` does.
    """
    with open(file, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            leading = _LEADING_RESULT_ID.match(line)
            if leading is not None and line.rstrip().endswith(b"}"):
                yield leading.group(1).decode("ascii")
                continue
            try:
                yield str(json.loads(line)["result_id"])
            except (ValueError, KeyError, TypeError) as exc:
                raise ResultsDirectoryError(
                    f"{file.name}:{number} is not a JSON record: {exc}"
                ) from exc


def _committed_parts(root: Path) -> Iterator[Path]:
    for folder, marker in visible_markers(root):
        for part in marker["parts"]:
            yield folder / part["file"]


@contextlib.contextmanager
def _readable_parquet(file: Path) -> Iterator[None]:
    try:
        yield
    except (OSError, ValueError) as exc:  # pyarrow's errors subclass these
        raise ResultsDirectoryError(f"{file.name} is not readable Parquet: {exc}") from exc


def part_records(file: Path) -> Iterator[dict[str, Any]]:
    """The records of one committed part file (JSON Lines or Parquet, by its suffix)."""
    return _part_records(file)


def _part_records(file: Path) -> Iterator[dict[str, Any]]:
    if file.suffix == ".parquet":
        from xscl.spark_plugin.results_parquet import parquet_records

        with _readable_parquet(file):
            yield from parquet_records(file)
        return
    with open(file, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            try:
                yield json.loads(line)
            except ValueError as exc:
                raise ResultsDirectoryError(
                    f"{file.name}:{number} is not a JSON record: {exc}"
                ) from exc


def compact(path: str | Path, output: str | Path) -> int:
    """Write the deduplicated result set of ``path`` to one JSONL file, atomically."""
    lines = [
        json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
        for record in read_results(path)
    ]
    target = Path(output)
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(target, "".join(lines).encode("utf-8"))
    return len(lines)
