"""``xscl-spool``: the durable spool as a Spark data source (streaming and batch).

Rows: ``offset LONG, stream STRING, docid STRING, ts TIMESTAMP, xml STRING,
newest_before LONG, version INT``, one per spool record: ``offset`` is the record's
exact spool offset, ``newest_before`` the newest timestamp (UTC microseconds) of every
record before it (null for the first, and in spools written before records carried
it; ``segment``), ``version`` the subscription registry version the micro-batch runs
with (0 without the ``registry`` option).

Streaming offsets are JSON objects ``{"offset": N}`` meaning "every record with an
offset below N". A micro-batch ``[start, end)`` is a fixed range of an append-only
log, so replaying it (after a crash, Spark re-plans the last uncommitted batch with
the offsets it logged) returns byte-identical rows. Only records below the spool's
``HEAD`` are ever offered, and ``HEAD`` covers only ``fsync``-ed records.

Options (all strings, as Spark passes them):

* ``path`` (required): the spool directory.
* ``startOffset``: ``earliest`` (default: the first retained record), ``latest`` or a
  record offset; where a *new* query starts (a restarted one resumes from its
  checkpoint).
* ``endOffset``: ``latest`` (default) or an exclusive record offset; a stream given one
  stops growing there (a history scan, ``history_scan.py``).
* ``maxRecordsPerBatch`` (streaming): at most this many records per micro-batch
  (default: all available). Batch reads split the range into partitions of this size.
* ``recordsPerPartition``: records per Spark task within a range (default 10000).
* ``registry`` (streaming): a job's subscription registry folder
  (``subscriptions.SubscriptionLog``). Planning a micro-batch applies the registry's
  new events at the batch's first offset (recorded once, so a replay applies each at
  the same offset) and tags its rows with the resulting version: subscriptions change
  between micro-batches, as data, without a new plan.
* ``applied`` (streaming, with ``registry``): the folder where this run records at
  which offset each event took effect (the job's epoch, ``pair.epochs``; default: the
  registry's newest).
* ``partitionsPerBatch`` (streaming): split each micro-batch into about this many
  tasks (default 1), never smaller than ``MIN_RECORDS_PER_PARTITION`` records nor
  larger than ``recordsPerPartition``; the job sets it to Spark's default
  parallelism so that Stage 1 uses every executor core.

Where things run: the ``DataSource`` and the stream reader's planning methods run on
the driver (in a Python worker the driver JVM starts); ``read`` runs on executors
with a pickled copy of the reader and of one partition, so both hold only strings and
integers.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import (
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from xscl.errors import DataSourceOptionError, SpoolReadError

if TYPE_CHECKING:
    from xscl.connectors.document import Document

FORMAT_NAME = "xscl-spool"
#: Schema of the rows this source produces.
SPOOL_SCHEMA = StructType(
    [
        StructField("offset", LongType(), nullable=False),
        StructField("stream", StringType(), nullable=False),
        StructField("docid", StringType(), nullable=False),
        StructField("ts", TimestampType(), nullable=False),
        StructField("xml", StringType(), nullable=False),
        StructField("newest_before", LongType(), nullable=True),
        StructField("version", IntegerType(), nullable=False),
    ]
)
DEFAULT_RECORDS_PER_PARTITION = 10_000
#: The smallest streaming partition ``partitionsPerBatch`` makes (tasks cost ~10 ms).
MIN_RECORDS_PER_PARTITION = 64
#: Records per Arrow batch handed to Spark by ``read``.
ARROW_BATCH_ROWS = 1024


class SpoolRange(InputPartition):
    """One Spark task's half-open offset range ``[start, end)`` and the registry version
    its rows are tagged with (picklable)."""

    def __init__(self, start: int, end: int, version: int = 0) -> None:
        super().__init__((start, end, version))
        self.start = start
        self.end = end
        self.version = version


@dataclass(frozen=True)
class SpoolOptions:
    """Validated options of the source (see the module docstring)."""

    path: str
    start: str
    end: str
    max_records: int | None
    records_per_partition: int
    partitions_per_batch: int = 1
    registry: str | None = None
    applied: str | None = None

    @classmethod
    def parse(cls, options: Any) -> SpoolOptions:
        path = options.get("path")
        if not path:
            raise DataSourceOptionError("xscl-spool needs option 'path' (the spool directory)")
        start = str(options.get("startOffset", "earliest"))
        end = str(options.get("endOffset", "latest"))
        _check_position("startOffset", start, ("earliest", "latest"))
        _check_position("endOffset", end, ("latest",))
        max_records = options.get("maxRecordsPerBatch")
        return cls(
            path=str(path),
            start=start,
            end=end,
            max_records=(
                None if max_records is None else _positive("maxRecordsPerBatch", max_records)
            ),
            records_per_partition=_positive(
                "recordsPerPartition",
                options.get("recordsPerPartition", DEFAULT_RECORDS_PER_PARTITION),
            ),
            partitions_per_batch=_positive(
                "partitionsPerBatch", options.get("partitionsPerBatch", 1)
            ),
            registry=options.get("registry") or None,
            applied=options.get("applied") or None,
        )


def _check_position(name: str, value: str, words: tuple[str, ...]) -> None:
    if value in words:
        return
    if not value.isdigit():
        allowed = " / ".join(words)
        raise DataSourceOptionError(f"{name} must be {allowed} or an offset, got {value!r}")


def _positive(name: str, value: object) -> int:
    try:
        number = int(str(value))
    except ValueError:
        raise DataSourceOptionError(f"{name} must be a positive integer, got {value!r}") from None
    if number <= 0:
        raise DataSourceOptionError(f"{name} must be a positive integer, got {value!r}")
    return number


def committed_end(path: str) -> int:
    """One past the spool's last committed offset (runs wherever it is called)."""
    from xscl.connectors.spool import SpoolReader

    try:
        return SpoolReader(path).next_offset()
    except OSError as exc:
        raise SpoolReadError(f"cannot read spool {path}: {exc}") from exc


def split_range(start: int, end: int, size: int, version: int = 0) -> list[SpoolRange]:
    """``[start, end)`` cut into consecutive ranges of at most ``size`` records."""
    return [SpoolRange(low, min(low + size, end), version) for low in range(start, end, size)]


def registry_version(registry: str, offset: int, applied: str | None = None) -> int:
    """Apply the registry's pending events at ``offset``; the version in effect there.

    Runs on the driver, once per micro-batch (and replay) it plans. An event already
    recorded at a later offset (a replay of an earlier batch) and every event after it
    are not in effect yet; a new one is recorded at ``offset`` (once: a replay finds it).
    """
    from xscl.service.subscriptions import SubscriptionLog

    log = SubscriptionLog(registry, applied)
    recorded = log.applied()
    version = 0
    for event in log.versions():
        at = recorded.get(event)
        if at is None:
            at = log.record_applied(event, offset)
        if at > offset:
            break
        version = event
    return version


def read_records(path: str, start: int, end: int) -> Iterator[tuple[int, Document]]:
    """(offset, document) of the records ``[start, end)`` (runs on executors).

    Raises ``SpoolReadError`` if the spool no longer holds every record of the range
    (a range is only ever planned below the committed end, so this means the spool
    was deleted or truncated by hand: failing loudly beats silently losing data).
    """
    from xscl.connectors.spool import SpoolReader

    reader = SpoolReader(path)
    expected = start
    for offset, doc in reader.iter_range(start, end):
        if offset != expected:
            raise SpoolReadError(f"spool {path}: offset {expected} missing (got {offset})")
        expected += 1
        yield offset, doc
    if expected != end:
        raise SpoolReadError(f"spool {path}: records {expected}..{end - 1} are missing")


def read_range(path: str, start: int, end: int, version: int = 0) -> Iterator[Any]:
    """Arrow record batches of the records ``[start, end)`` (runs on executors;
    ``read_records``' errors)."""
    import pyarrow as pa

    arrow_schema = pa.schema(
        [
            pa.field("offset", pa.int64(), nullable=False),
            pa.field("stream", pa.string(), nullable=False),
            pa.field("docid", pa.string(), nullable=False),
            pa.field("ts", pa.timestamp("us", tz="UTC"), nullable=False),
            pa.field("xml", pa.string(), nullable=False),
            pa.field("newest_before", pa.int64(), nullable=True),
            pa.field("version", pa.int32(), nullable=False),
        ]
    )
    columns: tuple[list[Any], ...] = ([], [], [], [], [], [], [])
    for offset, doc in read_records(path, start, end):
        row = (offset, doc.stream, doc.docid, doc.ts_micros, doc.xml, doc.newest_before, version)
        for column, value in zip(columns, row, strict=True):
            column.append(value)
        if len(columns[0]) >= ARROW_BATCH_ROWS:
            yield _to_batch(columns, arrow_schema)
            for column in columns:
                column.clear()
    if columns[0]:
        yield _to_batch(columns, arrow_schema)


def _to_batch(columns: tuple[list[Any], ...], schema: Any) -> Any:
    import pyarrow as pa

    arrays = [pa.array(values, field.type) for values, field in zip(columns, schema, strict=True)]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _resolve(position: str, path: str) -> int:
    if position == "earliest":
        from xscl.connectors.spool import SpoolReader

        return SpoolReader(path).first_offset()  # the first retained record
    if position == "latest":
        return committed_end(path)
    return int(position)


class SpoolDataSource(DataSource):
    """The ``xscl-spool`` format; instantiated on the driver per query plan."""

    @classmethod
    def name(cls) -> str:
        """The format name (driver, at registration)."""
        return FORMAT_NAME

    def schema(self) -> StructType:
        """The fixed row schema (driver, once per plan)."""
        return SPOOL_SCHEMA

    def reader(self, schema: StructType) -> SpoolBatchReader:
        """A backfill reader (driver, once per batch read; pickled to executors)."""
        return SpoolBatchReader(SpoolOptions.parse(self.options))

    def streamReader(self, schema: StructType) -> SpoolStreamReader:
        """A micro-batch reader (driver, once per query start; pickled to executors)."""
        return SpoolStreamReader(SpoolOptions.parse(self.options))


class SpoolBatchReader(DataSourceReader):
    """Reads a fixed offset range of the spool once (backfills, tests)."""

    def __init__(self, options: SpoolOptions) -> None:
        self.options = options

    def partitions(self) -> Sequence[InputPartition]:
        """Ranges of ``maxRecordsPerBatch`` or ``recordsPerPartition`` records (driver, once)."""
        start = _resolve(self.options.start, self.options.path)
        end = _resolve(self.options.end, self.options.path)
        end = min(end, committed_end(self.options.path))
        size = self.options.max_records or self.options.records_per_partition
        return split_range(start, end, size) if start < end else []

    def read(self, partition: InputPartition) -> Iterator[Any]:
        """Arrow batches of one range (executor, once per partition)."""
        assert isinstance(partition, SpoolRange)
        return read_range(self.options.path, partition.start, partition.end)


class SpoolStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches over the spool with exact, replayable offsets ``{"offset": N}``."""

    def __init__(self, options: SpoolOptions) -> None:
        self.options = options
        self._target: int | None = None

    def initialOffset(self) -> dict[str, int]:
        """Where a new query starts (driver, once per new query; not on restart)."""
        return {"offset": _resolve(self.options.start, self.options.path)}

    def getDefaultReadLimit(self) -> ReadLimit:
        """``maxRecordsPerBatch`` as a row limit (driver, once per query start)."""
        if self.options.max_records is None:
            return ReadAllAvailable()
        return ReadMaxRows(self.options.max_records)

    def prepareForTriggerAvailableNow(self) -> None:
        """Pin the end of an ``availableNow`` run to the current committed end (driver, once)."""
        self._target = min(
            committed_end(self.options.path), _resolve(self.options.end, self.options.path)
        )

    def latestOffset(self, start: dict[str, int], limit: ReadLimit) -> dict[str, int]:
        """The end of the next micro-batch (driver, once per trigger)."""
        end = _resolve(self.options.end, self.options.path)  # "latest": the committed end
        if self._target is not None:
            end = min(end, self._target)
        begin = int(start["offset"])
        if isinstance(limit, ReadMaxRows):
            end = min(end, begin + limit.max_rows)
        return {"offset": max(begin, end)}

    def reportLatestOffset(self) -> dict[str, int]:
        """The spool's committed end, shown as the source's latestOffset in progress (driver)."""
        return {"offset": committed_end(self.options.path)}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> Sequence[InputPartition]:
        """Ranges of ``recordsPerPartition`` records (driver, once per micro-batch and replay)."""
        low, high = int(start["offset"]), int(end["offset"])
        share = -(-(high - low) // self.options.partitions_per_batch)
        size = min(self.options.records_per_partition, max(MIN_RECORDS_PER_PARTITION, share))
        registry = self.options.registry
        version = (
            registry_version(registry, low, self.options.applied)
            if registry is not None and low < high
            else 0
        )
        return split_range(low, high, size, version)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        """Arrow batches of one range (executor, once per partition and attempt)."""
        assert isinstance(partition, SpoolRange)
        return read_range(self.options.path, partition.start, partition.end, partition.version)

    def commit(self, end: dict[str, int]) -> None:
        """Spark finished every record below ``end`` (driver, once per micro-batch).

        Nothing to release: the spool keeps records until an operator compacts it
        (offsets must stay replayable for other queries reading the same spool).
        """
