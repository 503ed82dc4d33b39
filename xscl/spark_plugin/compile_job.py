"""The compile job: the registry's query texts compiled (parsed, normalised, templates
assigned) on the executors.

``compile_registry`` runs when ``xscl serve`` starts, before the streaming query
(``submit``; not for ``xscl run --engine spark``, whose registry lives for one
run and whose workers would read each event once anyway). It compiles every subscribe event
that has no compiled folder yet (``table``), so a restart compiles nothing again
and a new event only its own queries::

    spark.range(0, n, 1, n)                            # one row (a part's index) per task
         .mapInArrow(CompileParts(registry, parts), schema)   # executors
         .write.partitionBy("event").parquet(staging)  # tasks write the files
    staging/event=N  ->  REGISTRY/compiled/event=N     # driver: one rename per event

An event of many queries is split into parts (``QUERIES_PER_PART`` each, at most
one per core): a task reads the event's file from the registry folder, parses
it (every part parses the whole file: splitting it needs the parser; parsing is
about a sixth of compiling, docs/benchmarks.md) and compiles the queries at
positions ``part, part + parts, ...``. It parses one query at a time and yields
``QUERIES_PER_BATCH`` compiled queries at a time, so what it holds does not grow
with the event (at 1M subscriptions a task that held its whole event's ASTs took
gigabytes). Its Python workers run in a daemon of their own (``COMPILE_ENV``, see
``worker_daemon``).

Queries the workers cannot get from the table are taken from their texts
(``sources.FromTexts``), so the job is an optimisation, never a condition: a
query that fails to compile (texts were validated when subscribed, so this does
not happen in practice) leaves its event uncompiled, where it fails as it did
before there was a compiled table, with the same error code.

Where each piece runs, how often, what is pickled (as PySpark's ``datasource.py``
documents its classes):

* ``compile_registry``, ``pending_parts``: driver, once per job start; read the
  event files' ids only.
* ``compile_in_process``: the same compilation without Spark (tests, benchmarks).
* ``CompileParts``: pickled once per job (it holds the registry path and the parts) and
  called in an executor's Python worker once per task with that task's rows;
  yields Arrow record batches (``table.SCHEMA`` plus ``event``).
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from xscl.errors import XsclError
from xscl.service.compiled.sources import FromTexts
from xscl.service.compiled.table import (
    SCHEMA,
    CompiledQuery,
    compiled_batch,
    compiled_folder,
    publish_folder,
    write_event,
)
from xscl.service.subscriptions import SubscriptionLog
from xscl.service.worker_heap import release_free_memory
from xscl.spark_plugin.worker_daemon import COMPILE_ENV

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "QUERIES_PER_PART",
    "CompileParts",
    "compile_in_process",
    "compile_registry",
    "pending_parts",
]

#: Queries of one event compiled by one task, at least (each part parses the whole file).
QUERIES_PER_PART = 2_000

#: Compiled queries per record batch a task yields (what it holds at once).
QUERIES_PER_BATCH = 2_000

#: What ``CompileParts`` yields: the compiled table's columns and the event.
OUTPUT = pa.schema([("event", pa.int32()), *SCHEMA])


@dataclass(frozen=True)
class Part:
    """The queries at positions ``part, part + parts, ...`` of one subscribe event."""

    event: int
    part: int
    parts: int


#: Uncompiled queries below which ``xscl serve`` does not run the compile job: each
#: worker registers them from their texts faster than a Spark job compiles them
#: (mixed workload, 1k and 10k subscriptions on ``local[2]``, alternating runs: the job
#: cost 3-5 CPU-s and 3-10 s of wall time more than it saved; docs/benchmarks.md).
COMPILE_MIN_QUERIES = 20_000


def pending_queries(registry: str | Path) -> int:
    """How many queries the uncompiled subscribe events hold (driver; ids only)."""
    log = SubscriptionLog(registry)
    return sum(
        len(event.ids)
        for event in log.events()
        if event.op == "subscribe" and not compiled_folder(registry, event.version).exists()
    )


def pending_parts(registry: str | Path, max_parts: int) -> list[Part]:
    """The parts of every subscribe event not compiled yet (driver)."""
    log = SubscriptionLog(registry)
    out: list[Part] = []
    for event in log.events():
        if event.op != "subscribe" or not event.ids:
            continue
        if compiled_folder(registry, event.version).exists():
            continue
        parts = max(1, min(max_parts, len(event.ids) // QUERIES_PER_PART))
        out.extend(Part(event.version, k, parts) for k in range(parts))
    return out


@dataclass(frozen=True)
class CompileParts:
    """``mapInArrow``'s function: compiles the parts in its task's batches (executor)."""

    registry: str
    #: what each row's ``id`` (``spark.range``: one row per task) compiles
    parts: tuple[Part, ...]

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        log = SubscriptionLog(self.registry)
        texts = FromTexts()
        for batch in batches:
            for index in batch.column("id").to_pylist():
                part = self.parts[index]
                mine: list[tuple[int, CompiledQuery]] = []
                # parsed one at a time: the task holds its chunk, not the whole event
                for position, query in enumerate(log.event(part.event).iter_queries()):
                    if position % part.parts != part.part:
                        continue
                    try:
                        normal = texts.shapes.normal(query)
                        assignment = texts.shapes.assignment(normal)
                    except XsclError:
                        continue  # its event stays uncompiled (module docstring)
                    mine.append((position, CompiledQuery(normal, assignment)))
                    if len(mine) == QUERIES_PER_BATCH:
                        yield _batch(part.event, mine)
                        mine = []
                if mine:
                    yield _batch(part.event, mine)
        release_free_memory()  # a reused worker: what parsing the event took goes back


def _batch(event: int, compiled: list[tuple[int, CompiledQuery]]) -> pa.RecordBatch:
    table = compiled_batch(compiled)
    events = pa.array([event] * table.num_rows, pa.int32())
    return pa.RecordBatch.from_arrays([events, *table.columns], schema=OUTPUT)


def compile_registry(
    spark: SparkSession, registry: str | Path, min_queries: int = 0
) -> list[int]:
    """Compile the registry's uncompiled subscribe events on the executors (driver, once
    per job start); the events compiled now. Nothing is compiled while the uncompiled
    events hold fewer than ``min_queries`` queries (``COMPILE_MIN_QUERIES``)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    registry = Path(registry)
    if pending_queries(registry) < min_queries:
        return []
    parts = pending_parts(registry, spark.sparkContext.defaultParallelism)
    if not parts:
        return []
    staging = registry / "compiled" / f".staging-{uuid.uuid4().hex}"
    # One row per partition, made in the JVM: a DataFrame of the parts themselves ran a
    # Python task first (in a daemon of its own, which built every subscription from its
    # text), and ``repartition`` put both rows of two parts in one task.
    environment = spark.sparkContext.environment
    environment[COMPILE_ENV] = "1"  # captured by the function below: its own daemon
    try:
        compiled = spark.range(0, len(parts), 1, len(parts)).mapInArrow(
            CompileParts(str(registry), tuple(parts)), from_arrow_schema(OUTPUT)
        )
    finally:
        del environment[COMPILE_ENV]
    try:
        compiled.write.partitionBy("event").parquet(str(staging))
        return _publish(registry, staging, sorted({p.event for p in parts}))
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def compile_in_process(registry: str | Path, version: int) -> bool:
    """Compile subscribe event ``version`` in this process, as one task would, and write it
    (tests and benchmarks; no Spark); False when it was compiled already or is incomplete."""
    request = pa.RecordBatch.from_pylist([{"id": 0}])
    compile_part = CompileParts(str(registry), (Part(version, 0, 1),))
    out = pa.Table.from_batches(list(compile_part(iter([request]))), OUTPUT)
    if out.num_rows != len(SubscriptionLog(registry).event(version).ids):
        return False
    return write_event(registry, version, out)


def _publish(registry: Path, staging: Path, events: list[int]) -> list[int]:
    """Rename each event's written folder into place when it holds all its queries."""
    log = SubscriptionLog(registry)
    done: list[int] = []
    for event in events:
        written = staging / f"event={event}"
        files = sorted(written.glob("*.parquet")) if written.is_dir() else []
        rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
        if rows == len(log.event(event).ids) and publish_folder(
            written, compiled_folder(registry, event)
        ):
            done.append(event)
    return done
