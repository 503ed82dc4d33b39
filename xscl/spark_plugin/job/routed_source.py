"""``xscl-routed``: the spool read, evaluated and routed in the same task (the job's source).

The job's plan starts here instead of ``xscl-spool`` + ``mapInArrow(RouteTask)``:
the micro-batch planning is the spool source's (exact offsets, the registry version
per batch), and each task's ``read`` evaluates its records with ``RouteTask`` and
returns the routed rows (``route_task.ROUTED_DDL``) straight away. Measured reason:
with two Python operators per task, a task used two Python workers (the source's and
``mapInArrow``'s), each of which built the subscriptions of the batch's version, and
every document's XML crossed from Python to the JVM and back before Stage 1.

Options (strings, as Spark passes them): the spool source's (``path``, ``registry``,
``partitionsPerBatch``, ``maxRecordsPerBatch``, ``applied``, ...) plus ``buckets``, ``partitions``
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
    read_range,
)

FORMAT_NAME = "xscl-routed"


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
            options.get("applied") or None,
        )
        return RoutedStreamReader(SpoolOptions.parse(options), task)


class RoutedStreamReader(SpoolStreamReader):
    """``SpoolStreamReader`` whose ``read`` returns routed rows (see the module docstring)."""

    def __init__(self, options: SpoolOptions, task: RouteTask) -> None:
        super().__init__(options)
        self.task = task

    def read(self, partition: InputPartition) -> Iterator[Any]:
        """Routed rows of one range (executor, once per partition and attempt)."""
        assert isinstance(partition, SpoolRange)
        task = self.task
        hot = (
            hot_values(task.hot_folder)
            if task.hot_folder is not None and task.salts > 1
            else frozenset()
        )
        batches = read_range(self.options.path, partition.start, partition.end, partition.version)
        for batch in batches:
            # ``route`` takes ts as UTC microseconds (the source's column is a timestamp)
            columns = [
                column.cast(pa.int64()) if name == "ts" else column
                for name, column in zip(batch.schema.names, batch.columns, strict=True)
            ]
            yield task.route(pa.RecordBatch.from_arrays(columns, names=batch.schema.names), hot)
