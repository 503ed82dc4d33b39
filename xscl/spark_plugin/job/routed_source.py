"""``xscl-routed``: the spool read, evaluated and routed in the same task (the job's source).

The job's plan starts here instead of ``xscl-spool`` + ``mapInArrow(RouteTask)``:
the micro-batch planning is the spool source's (exact offsets, the registry version
per batch), and each task's ``read`` evaluates its records with ``RouteTask`` and
returns the routed rows (``route_task.ROUTED_DDL``) straight away. Measured reason:
with two Python operators per task, a task used two Python workers (the source's and
``mapInArrow``'s), each of which built the subscriptions of the batch's version, and
every document's XML crossed from Python to the JVM and back before Stage 1.

Options (strings, as Spark passes them): the spool source's (``path``, ``registry``,
``partitionsPerBatch``, ``maxRecordsPerBatch``, ...) plus ``buckets``, ``partitions``
(state partitions), ``salts``, ``hotValues`` (a folder, or empty) and
``allowedLatenessMicros`` (empty: none).

Where it runs: planning on the driver (as ``spool_source``); ``read`` on executors,
once per partition and attempt, with a pickled reader holding strings and integers.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import InputPartition
from pyspark.sql.types import StructType

from xscl.spark_plugin.job.route_task import ROUTED_DDL, RouteTask, hot_values
from xscl.spark_plugin.spool_source import (
    SpoolDataSource,
    SpoolOptions,
    SpoolRange,
    SpoolStreamReader,
)

FORMAT_NAME = "xscl-routed"
#: Records per routed Arrow batch.
BATCH_ROWS = 512


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
        options = self.options
        lateness = options.get("allowedLatenessMicros") or None
        task = RouteTask(
            str(options.get("registry", "")),
            int(options.get("buckets", 1)),
            None if lateness is None else int(lateness),
            options.get("hotValues") or None,
            int(options.get("salts", 1)),
            int(options.get("partitions", 1)),
        )
        return RoutedStreamReader(SpoolOptions.parse(options), task)


class RoutedStreamReader(SpoolStreamReader):
    """``SpoolStreamReader`` whose ``read`` returns routed rows (see the module docstring)."""

    def __init__(self, options: SpoolOptions, task: RouteTask) -> None:
        super().__init__(options)
        self.task = task

    def read(self, partition: InputPartition) -> Iterator[Any]:
        """Routed rows of one range (executor, once per partition and attempt)."""
        from xscl.connectors.spool import SpoolReader
        from xscl.spark_plugin.errors import SpoolReadError

        assert isinstance(partition, SpoolRange)
        task = self.task
        hot = (
            hot_values(task.hot_folder)
            if task.hot_folder is not None and task.salts > 1
            else frozenset()
        )
        reader = SpoolReader(self.options.path)
        columns: dict[str, list[Any]] = {name: [] for name in _INPUT}
        expected = partition.start
        for offset, doc in reader.iter_range(partition.start, partition.end):
            if offset != expected:
                raise SpoolReadError(f"spool {self.options.path}: offset {expected} missing")
            expected += 1
            values = (offset, doc.stream, doc.docid, doc.ts_micros, doc.xml)
            for name, value in zip(_INPUT[:5], values, strict=True):
                columns[name].append(value)
            columns["newest_before"].append(doc.newest_before)
            columns["version"].append(partition.version)
            if len(columns["offset"]) >= BATCH_ROWS:
                yield task.route(pa.RecordBatch.from_pydict(columns), hot)
                columns = {name: [] for name in _INPUT}
        if expected != partition.end:
            raise SpoolReadError(
                f"spool {self.options.path}: records {expected}..{partition.end - 1} are missing"
            )
        if columns["offset"]:
            yield task.route(pa.RecordBatch.from_pydict(columns), hot)


_INPUT = ("offset", "stream", "docid", "ts", "xml", "newest_before", "version")
