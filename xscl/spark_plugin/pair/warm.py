"""Keep a standby hot: the job's plan run on a scratch copy of the spool's newest records.

A standby's Spark session is started before it waits. What a new primary still pays
on its first micro-batch is the rest of a first run: the streaming query's planning
and code generation in the JVM, the Python workers (forked, importing pyarrow, pandas
and xscl), RocksDB opening, and every worker building the subscriptions of the
registry's version (``service.live_queries``: ~40 s per 100k subscriptions). ``StandbyWarmer``
pays it while the standby waits: it runs the job's plan once (``availableNow``) over
a scratch spool holding the newest ``WARM_RECORDS`` records of the job's spool, with
the job's own registry and everything else under ``HOME/tmp``, so nothing of the job
is written. The workers keep what they built; a new primary's tasks adopt it
(``service.live_queries.LiveQueries._adopt`` rebases each query's subscription offset).

Spark ends Python workers idle for a minute, so every ``KEEP_SECONDS`` the warmer
runs a one-task-per-core job that asks each worker for the registry's newest version
(built once, then a dictionary look-up), which also warms subscriptions added since.

Where it runs: the standby's driver, on a background thread, until it takes over.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from xscl.connectors.spool import Spool, SpoolReader
from xscl.spark_plugin.job.plan import JobPlan

#: Newest spool records the warm-up runs the plan over.
WARM_RECORDS = 32
#: Seconds between two keep-alive jobs (Spark ends Python workers idle for 60 s).
KEEP_SECONDS = 30.0


class StandbyWarmer:
    """Runs the warm-up, then the keep-alive jobs, until ``stop`` (see the module doc)."""

    def __init__(self, spark: Any, plan: JobPlan, scratch: Path) -> None:
        self.spark = spark
        self.plan = plan
        self.scratch = scratch
        self.stopped = threading.Event()
        self._query: Any = None
        self._lock = threading.Lock()

    def __call__(self, ready: Callable[[], None]) -> None:
        """The warm thread's body (``PairMember.stand_by`` starts it); ``ready()`` once
        the warm-up ran."""
        try:
            # a new Python thread is a new JVM thread: the session (and its Python data
            # sources) must be made its active one
            jvm = self.spark.sparkContext._jvm
            jvm.org.apache.spark.sql.SparkSession.setActiveSession(self.spark._jsparkSession)
            self.warm()
            ready()
            while not self.stopped.wait(KEEP_SECONDS):
                self.keep_alive()
        except Exception as exc:  # a failed warm-up only costs take-over time
            if not self.stopped.is_set():
                print(
                    f"xscl: standby warm-up failed (the take-over will be slower): {exc}",
                    file=sys.stderr,
                )

    def warm(self) -> None:
        """The plan once over a scratch spool of the newest records (standby driver)."""
        from xscl.spark_plugin.job.plan import start_job

        shutil.rmtree(self.scratch, ignore_errors=True)
        spool = self.scratch / "spool"
        _copy_newest(Path(self.plan.spool), spool, WARM_RECORDS)
        plan = replace(
            self.plan,
            spool=str(spool),
            output=str(self.scratch / "results"),
            checkpoint=str(self.scratch / "checkpoint"),
            name=f"{self.plan.name}_standby_warm",
            hot_folder=str(self.scratch / "hot-values"),
            published=str(self.scratch / "published"),
            applied=str(self.applied),
            fence=None,
            once=True,
        )
        with self._lock:
            if self.stopped.is_set():
                return
            self._query = start_job(self.spark, plan)
        try:
            self._query.awaitTermination()
        finally:
            with self._lock:
                self._query = None

    @property
    def applied(self) -> Path:
        return self.scratch / "applied"

    def keep_alive(self) -> None:
        """One task per core asking its worker for the registry's newest version."""
        from xscl.spark_plugin.spool_source import registry_version

        version = registry_version(self.plan.registry, 0, str(self.applied))
        cores = self.spark.sparkContext.defaultParallelism
        registry, applied = self.plan.registry, str(self.applied)

        def touch(batches: Iterator[Any]) -> Iterator[Any]:
            from xscl.spark_plugin.worker_context import worker

            worker().queries.at(registry, version, applied)
            yield from batches

        frame = self.spark.range(cores, numPartitions=cores)
        frame.mapInArrow(touch, frame.schema).count()

    def stop(self) -> None:
        """Stop warming (the standby took over): a running warm-up query is stopped."""
        self.stopped.set()
        with self._lock:
            query = self._query
        if query is not None:
            with contextlib.suppress(Exception):
                query.stop()
        shutil.rmtree(self.scratch, ignore_errors=True)


def _copy_newest(source: Path, target: Path, count: int) -> int:
    """Append the newest ``count`` committed records of spool ``source`` to a new spool."""
    reader = SpoolReader(source)
    end = reader.next_offset()
    start = max(reader.first_offset(), end - count)
    docs = [doc for _offset, doc in reader.iter_range(start, end)]
    with Spool(target, sync=False) as spool:
        spool.append(docs)
    return len(docs)
