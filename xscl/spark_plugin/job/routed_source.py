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
``RouteTask`` as JSON, built on the driver by ``job.plan``).

Where it runs: planning on the driver (as ``spool_source``); ``read`` on executors,
once per partition and attempt, with a pickled reader holding plain values only.
"""

from __future__ import annotations

import json
import marshal
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql.datasource import InputPartition
from pyspark.sql.types import StructType

from xscl.engine.groups.keys import PASS_GROUP
from xscl.spark_plugin.spool_source import (
    SpoolDataSource,
    SpoolOptions,
    SpoolRange,
    SpoolStreamReader,
    read_records,
)

if TYPE_CHECKING:  # the task's own imports: the planner processes never load them
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
        return RoutedStreamReader(SpoolOptions.parse(self.options), task)


class RoutedStreamReader(SpoolStreamReader):
    """``SpoolStreamReader`` whose ``read`` returns routed rows (see the module docstring)."""

    def __init__(self, options: SpoolOptions, task: RouteTask) -> None:
        super().__init__(options)
        self.task = task

    def read(self, partition: InputPartition) -> Iterator[Any]:
        """Routed rows of one range (executor, once per partition and attempt)."""
        from xscl.spark_plugin.worker_context import worker

        assert isinstance(partition, SpoolRange)
        rows = TaskRows(self.task, worker(), partition.version)
        try:
            for offset, doc in read_records(self.options.path, partition.start, partition.end):
                rows.route(offset, doc.stream, doc.docid, doc.ts_micros, doc.xml, doc.newest_before)
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
        for row in routed.rows:
            seq = routed.seq if row.seq is None else row.seq  # a published result's own
            values = (row.group, seq, routed.newest, self.version, row.data,
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
