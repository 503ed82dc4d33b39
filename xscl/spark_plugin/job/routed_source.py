"""``xscl-routed``: the spool read, evaluated and routed in the same task (the job's source).

The micro-batch planning is the spool source's (exact offsets, the registry version
per batch); each task's ``read`` routes its records with ``engine.routing.Router``
(Stage 1 once per document, dead letters, the stateless queries' results, the rows
for the join groups) and returns the routed rows (``ROUTED_DDL``) straight away, a
record batch of rows per ``spool_source.ARROW_BATCH_ROWS`` records read:

* ``group``: the state key (``engine.groups.routed``: a value bucket's key, the chain
  group, or ``PASS_GROUP``), ``seq``, ``newest``, ``version``, ``doc`` (the encoded
  document), ``homes``, ``probes``: a document for a join group;
* ``line``: a row for the sink that needs no state, on ``PASS_GROUP``: a dead letter,
  or the part and feed entries of the stateless queries' results, which the task
  writes itself as it makes them (``results.group_parts``), as the join groups do.
  It is one output row of the job (``join_groups.OUTPUT_DDL``), ``marshal``-ed.

Measured reasons for one source that does it all: with Stage 1 in a second Python
operator, a task used two Python workers, each building the subscriptions, and every
document's XML crossed from Python to the JVM and back before Stage 1.

Options (strings, as Spark passes them): the spool source's (``path``, ``registry``,
``partitionsPerBatch``, ``maxRecordsPerBatch``, ``applied``, ...) plus ``route`` (the
``RouteTask`` as JSON, built on the driver by ``job.plan``) and ``published``: the job's
published spool, where its commit appends what the join groups PUBLISH (``sink``).

**Published documents come back through the same source.** Its offsets are
``{"offset": N, "published": M}``: each micro-batch reads the input spool's next records
(at most ``maxRecordsPerBatch``) and *every* record appended to the published spool
since the last batch, which the previous batch's commit wrote. They are routed like
input records, numbered from ``keys.PUBLISHED_BASE`` (``keys.published_offset``), never
late. While a join group publishes (and the lateness is set), every row of a batch
carries the batch's eviction floor as its newest (``published_floor``): the groups
evict by it, so no document still on its way back loses a partner. An ``availableNow``
run pins the input's end, not the published spool's, so it goes on until a batch
publishes nothing new. One source, not two unioned: the rows of a batch share the
registry version its input offset set, and the plan stays the one it was (offsets
without ``published`` are read as 0, from a job started before).

Where it runs: planning on the driver (as ``spool_source``); ``read`` on executors,
once per partition and attempt, with a pickled reader holding plain values only.
"""

from __future__ import annotations

import json
import marshal
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql.datasource import InputPartition
from pyspark.sql.types import StructType

from xscl.engine.groups.keys import PASS_GROUP, published_offset
from xscl.spark_plugin.job.published_floor import batch_floor, earliest_published
from xscl.spark_plugin.spool_source import (
    SpoolDataSource,
    SpoolOptions,
    SpoolRange,
    SpoolStreamReader,
    committed_end,
    read_records,
    registry_version,
)

if TYPE_CHECKING:  # the task's own imports: the planner processes never load them
    from xscl.connectors.spool import SpoolReader
    from xscl.engine.routing import Routed, RouteShape
    from xscl.results.group_parts import GroupParts, OutputRow, PartWriter
    from xscl.spark_plugin.worker_context import WorkerContext

FORMAT_NAME = "xscl-routed"
#: Spark DDL of the routed rows.
ROUTED_DDL = (
    "group INT, seq BIGINT, newest BIGINT, version INT, doc BINARY, "
    "homes ARRAY<STRING>, probes ARRAY<STRING>, line BINARY"
)
ROUTED_SCHEMA = pa.schema(
    [
        ("group", pa.int32()),
        ("seq", pa.int64()),
        ("newest", pa.int64()),
        ("version", pa.int32()),
        ("doc", pa.binary()),
        ("homes", pa.list_(pa.string())),
        ("probes", pa.list_(pa.string())),
        ("line", pa.binary()),
    ]
)
#: Records routed per Arrow batch a task returns.
ROWS_PER_BATCH = 1024
#: A row's newest when its batch has no eviction floor (nothing before it): nothing is
#: evicted by it.
NO_FLOOR = -(1 << 62)


@dataclass(frozen=True)
class RouteTask:
    """Everything a source task needs besides its range: plain values (built on the
    driver by ``job.plan``, passed as the ``route`` option's JSON)."""

    registry: str
    #: the state key of each value bucket (``engine.routing.RouteShape``)
    group_keys: tuple[int, ...]
    salts: int
    allowed_lateness: int | None
    #: where and how the stateless queries' results are staged (``GroupParts``)
    results: str
    results_format: str
    feed_entries: int
    #: where the job records the offsets subscription events took effect at
    applied: str | None = None
    #: the job's hot-values folder (None: hot values are not spread)
    hot_folder: str | None = None
    #: results of one match for many queries written once (``GroupParts.channels``)
    channels: bool = True

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> RouteTask:
        raw = json.loads(text)
        return cls(**{**raw, "group_keys": tuple(raw["group_keys"])})

    def shape(self) -> RouteShape:
        from xscl.engine.routing import RouteShape

        return RouteShape(self.group_keys, self.salts, self.allowed_lateness)

    def parts(self) -> GroupParts:
        from xscl.results.group_parts import GroupParts

        return GroupParts(self.results, self.results_format, self.feed_entries, self.channels)


class RoutedDataSource(SpoolDataSource):
    """The ``xscl-routed`` format (driver, once per plan); streaming only."""

    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def schema(self) -> str:  # type: ignore[override]
        """The routed rows' schema, as DDL (driver, once per plan; Spark parses it)."""
        return ROUTED_DDL

    def streamReader(self, schema: StructType) -> RoutedStreamReader:
        """The micro-batch reader (driver, once per query start; pickled to executors)."""
        task = RouteTask.from_json(str(self.options["route"]))
        published = self.options.get("published") or None
        return RoutedStreamReader(SpoolOptions.parse(self.options), task, published)


class RoutedRange(SpoolRange):
    """One task's range: of the input spool, or of the published spool (``published``),
    with the batch's marks for the eviction floor (``published_floor``: the input's
    newest timestamp before the batch, the earliest published one) (picklable)."""

    def __init__(
        self,
        start: int,
        end: int,
        version: int,
        published: bool = False,
        newest_before: int | None = None,
        earliest: int | None = None,
    ) -> None:
        super().__init__(start, end, version)
        self.published = published
        self.newest_before = newest_before
        self.earliest = earliest


def _published_at(offset: dict[str, int]) -> int:
    """The published spool's position in an offset (0: an offset from before it)."""
    return int(offset.get("published", 0))


@lru_cache(maxsize=8)
def _planner_reader(spool: str) -> SpoolReader:
    """One reader per spool in the planner's process, so each batch walks only the
    records appended since the last (a new reader walked the segment from its start:
    15 ms a batch on a 29 MB spool)."""
    from xscl.connectors.spool import SpoolReader

    return SpoolReader(spool)


def newest_before(spool: str, offset: int) -> int | None:
    """The input spool's newest timestamp before record ``offset`` (driver, once per
    batch planned; None: no record before it, or it is no longer retained: no eviction
    floor)."""
    from xscl.errors import SpoolExpiredError

    if offset <= 0:
        return None
    try:
        for _at, doc in _planner_reader(spool).iter_range(offset - 1, offset):
            before = doc.newest_before
            return doc.ts_micros if before is None else max(before, doc.ts_micros)
    except SpoolExpiredError:
        return None
    return None


class RoutedStreamReader(SpoolStreamReader):
    """``SpoolStreamReader`` whose ``read`` returns routed rows (see the module docstring)."""

    def __init__(
        self, options: SpoolOptions, task: RouteTask, published: str | None = None
    ) -> None:
        super().__init__(options)
        self.task = task
        #: the job's published spool (None: a reader of the input spool only)
        self.published = published

    def initialOffset(self) -> dict[str, int]:
        """Where a new query starts (driver, once per new query): the published spool
        from its start (a new query's is empty: ``plan.start_job``)."""
        offset = super().initialOffset()
        if self.published is not None:
            offset["published"] = 0
        return offset

    def latestOffset(self, start: dict[str, int], limit: Any) -> dict[str, int]:
        """The end of the next micro-batch: the input's as the spool source's, and every
        published record (driver, once per trigger)."""
        end = super().latestOffset(start, limit)
        if self.published is not None:
            end["published"] = max(_published_at(start), committed_end(self.published))
        return end

    def reportLatestOffset(self) -> dict[str, int]:
        latest = super().reportLatestOffset()
        if self.published is not None:
            latest["published"] = committed_end(self.published)
        return latest

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> Sequence[InputPartition]:
        """The input's ranges, then the published records' (driver, once per micro-batch
        and replay), all with the version the input's first offset sets and the batch's
        floor marks (``published_floor``: one input record and a small file read)."""
        ranges = [r for r in super().partitions(start, end) if isinstance(r, SpoolRange)]
        if self.published is None:
            return ranges
        low, high = _published_at(start), _published_at(end)
        if not ranges and low >= high:
            return []
        version = ranges[0].version if ranges else self._version_at(int(start["offset"]))
        marks = (
            newest_before(self.options.path, int(start["offset"])),
            earliest_published(self.published, low, high) if low < high else None,
        )
        size = self.options.records_per_partition
        return [RoutedRange(r.start, r.end, r.version, False, *marks) for r in ranges] + [
            RoutedRange(at, min(at + size, high), version, True, *marks)
            for at in range(low, high, size)
        ]

    def _version_at(self, offset: int) -> int:
        registry = self.options.registry
        return 0 if registry is None else registry_version(registry, offset, self.options.applied)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        """Routed rows of one range (executor, once per partition and attempt)."""
        from xscl.spark_plugin.worker_context import worker

        assert isinstance(partition, SpoolRange)
        rows = TaskRows(self.task, worker(), partition.version)
        published = isinstance(partition, RoutedRange) and partition.published
        if isinstance(partition, RoutedRange) and rows.feeds_back:
            rows.floor_at(partition.newest_before, partition.earliest)
        path = self.published if published else self.options.path
        assert path is not None
        try:
            for offset, doc in read_records(path, partition.start, partition.end):
                if published:  # never late, numbered above every input record
                    rows.route(published_offset(offset), doc.stream, doc.docid, doc.ts_micros,
                               doc.xml, None)  # fmt: skip
                else:
                    rows.route(offset, doc.stream, doc.docid, doc.ts_micros, doc.xml,
                               doc.newest_before)  # fmt: skip
                if rows.count >= ROWS_PER_BATCH:
                    yield rows.batch()
            rows.finish()
        except BaseException:
            rows.discard()
            raise
        yield rows.batch()


class TaskRows:
    """One source task's routed rows, collected as columns (executor, once per task)."""

    def __init__(self, task: RouteTask, context: WorkerContext, version: int) -> None:
        from xscl.engine.records import RecordBuilder
        from xscl.engine.routing import Router
        from xscl.spark_plugin.job import hot_values

        self.version = version
        self.task_lateness = task.allowed_lateness
        task_set = context.queries.at(task.registry, version, task.applied)
        hot = (
            hot_values.read(task.hot_folder)
            if task.hot_folder is not None and task.salts > 1
            else frozenset()
        )
        records = RecordBuilder(task_set.subscriptions.record_plan, context.trees(task.registry))
        self.router = Router(task.shape(), task_set.subscriptions, task_set.routing(), records, hot)
        self.parts = task.parts()
        self.context = context
        self.writer: PartWriter | None = None
        self.columns: list[list[Any]] = [[] for _ in ROUTED_SCHEMA]
        self.count = 0
        #: some join group publishes: every row's newest is the batch's floor
        #: (``published_floor``; the lateness is then set)
        self.feeds_back = task.allowed_lateness is not None and task_set.subscriptions.feeds_back()
        self.floor: int | None = None

    def floor_at(self, newest_before: int | None, earliest: int | None) -> None:
        """Rows take the batch's eviction floor as their newest (``published_floor``)."""
        assert self.task_lateness is not None
        floor = batch_floor(newest_before, earliest, self.task_lateness)
        self.floor = NO_FLOOR if floor is None else floor

    def route(
        self, offset: int, stream: str, docid: str, ts: int, xml: str, newest_before: int | None
    ) -> None:
        routed = self.router.route(offset, stream, docid, ts, xml, newest_before)
        self.count += 1
        if routed.dead is not None:
            self._pass(routed, ("dead", "", "", 0, routed.dead))
        if routed.records:
            if self.writer is None:
                from xscl.spark_plugin.results_sink import task_partition

                self.writer = self.parts.writer(task_partition(), self.context.renderer)
            for record in routed.records:
                self.writer.add(record)
        newest = routed.newest if self.floor is None else self.floor
        for row in routed.rows:
            seq = routed.seq if row.seq is None else row.seq  # a published result's own
            values = (row.group, seq, newest, self.version, row.data,
                      list(row.homes), list(row.probes), None)  # fmt: skip
            for column, value in zip(self.columns, values, strict=True):
                column.append(value)

    def _pass(self, routed: Routed | None, out: OutputRow) -> None:
        """A row for the sink through ``PASS_GROUP`` (see the module docstring)."""
        seq, newest = (0, 0) if routed is None else (routed.seq, routed.newest)
        line = marshal.dumps(out)
        values: tuple[Any, ...] = (PASS_GROUP, seq, newest, self.version, None, [], [], line)
        for column, value in zip(self.columns, values, strict=True):
            column.append(value)

    def finish(self) -> None:
        """The stateless results' part and feed entries, as rows for the sink."""
        if self.writer is not None:
            for out in self.writer.finish():
                self._pass(None, out)
            self.writer = None

    def discard(self) -> None:
        if self.writer is not None:
            self.writer.discard()  # never raises: the task's own error is the one told

    def batch(self) -> pa.RecordBatch:
        """The rows collected since the last batch."""
        arrays = [pa.array(c, f.type) for c, f in zip(self.columns, ROUTED_SCHEMA, strict=True)]
        self.columns = [[] for _ in ROUTED_SCHEMA]
        self.count = 0
        return pa.RecordBatch.from_arrays(arrays, schema=ROUTED_SCHEMA)
