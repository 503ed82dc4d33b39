"""The streaming job's one Spark plan, built on the driver (the driver only plans).

::

    xscl-routed: the spool and the published spool           driver plans; executors read,
      (offsets, registry version per batch), Stage 1,        evaluate and route
      lateness, routing (RouteTask)
      -> groupBy(group).applyInPandasWithState(JoinGroups)      executors, RocksDB state;
                                                                 results staged as parts
      -> repartition(query)                                      one task per feed owner
      -> xscl-job-output                                         tasks write feeds; driver
                                                                 commits the parts and
                                                                 appends what the groups
                                                                 PUBLISH to the published
                                                                 spool, read next batch

The plan never changes while the job runs: subscriptions are data read by the tasks
(``service.live_queries``), so subscribing, even to a new template, needs no new plan. Its
shape is fixed by the checkpoint (``shape``): ``state_partitions`` (Spark's shuffle
partitions, the state store's partitioning), ``buckets`` (how many value groups
string values are hashed into) and ``salts`` are settled at the job's first start
and kept by every restart of the same job name.

Where it runs: ``start_job`` on the driver, once per run.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xscl.engine.groups.join_plans import DEFAULT_CACHE_MEMORY
from xscl.engine.groups.value_group import DEFAULT_HOT_THRESHOLD
from xscl.engine.routing import DEFAULT_HOT_SALTS
from xscl.results.atom import DEFAULT_MAX_ENTRIES
from xscl.results.group_parts import GroupParts
from xscl.spark_plugin.job.join_groups import OUTPUT_DDL, STATE_DDL, JoinGroups
from xscl.spark_plugin.job.placement import group_keys
from xscl.spark_plugin.job.routed_source import RouteTask
from xscl.spark_plugin.job.shape import JobShape, settle

#: State store partitions per executor core by default (Spark's shuffle partitions for
#: the job): 2 kept both cores of ``local[2]`` busy at the least per-batch cost measured
#: (docs/benchmarks.md, "Stage 2 on the executors").
PARTITIONS_PER_CORE = 2
#: Value groups per state partition by default: each group costs a Python call per
#: batch, so fewer, larger groups were faster (16 groups: 1,193 items/s, 256: 677).
GROUPS_PER_PARTITION = 4


@dataclass(frozen=True)
class JobPlan:
    """Everything the job's plan depends on (driver)."""

    spool: str
    registry: str
    output: str
    checkpoint: str
    name: str
    allowed_lateness: int | None = None
    results_format: str = "jsonl"
    #: results of one match for many queries written once (``results.record_lines``)
    channels: bool = True
    feed_entries: int = DEFAULT_MAX_ENTRIES
    #: where the feeds are read from, their ``rel="self"`` links: ``URL/<query>.atom``
    #: (None: each feed's file where it is written)
    feed_base_url: str | None = None
    #: None: ``PARTITIONS_PER_CORE`` per executor core, at the job's first start
    state_partitions: int | None = None
    #: None: ``GROUPS_PER_PARTITION`` per state partition, at the job's first start
    buckets: int | None = None
    #: where the values found hot are recorded (None: hot values are not spread)
    hot_folder: str | None = None
    #: how many groups a hot value is spread over
    salts: int = DEFAULT_HOT_SALTS
    #: stored documents under one value in one group that make it hot
    hot_threshold: int = DEFAULT_HOT_THRESHOLD
    #: how a join group matches a keyed chain's last block (``groups.join_plans``)
    join_plan: str = "adaptive"
    #: memory one join group may spend on kept chain prefixes (adaptive plan)
    cache_memory: int = DEFAULT_CACHE_MEMORY
    max_records_per_batch: int | None = None
    once: bool = False
    trigger_seconds: float = 1.0
    #: where the run records the offsets subscription events took effect at (its
    #: epoch's folder, ``pair.epochs``; None: the registry's own)
    applied: str | None = None
    #: JSON of the lease and epoch the sink checks before each commit (``sink.Fence``;
    #: None: no lease, as in ``xscl run --engine spark``)
    fence: str | None = None
    #: the spool offsets the job reads, ``[start, end)`` (None: from the first retained
    #: record; on, as the spool grows): a history scan's span (``spark_plugin.history_scan``)
    start_offset: int | None = None
    end_offset: int | None = None
    #: the job's published spool: what its join groups PUBLISH, read back by the next
    #: micro-batch (None: beside the checkpoint, ``CHECKPOINT-published``). Not per epoch:
    #: what a fenced-out primary appends is what its successor would (by result id)
    published: str | None = None

    def published_spool(self) -> str:
        return self.published or f"{self.checkpoint.rstrip('/')}-published"


def start_job(spark: Any, plan: JobPlan) -> Any:
    """Start the streaming query (driver, once); returns Spark's ``StreamingQuery``.

    Staging files a crashed run left are removed first: no task of this job runs yet,
    and a replayed batch stages its files anew.
    """
    from pyspark.sql.streaming.state import GroupStateTimeout

    from xscl.results.commit import clear_staging

    clear_staging(plan.output)
    published = plan.published_spool()
    if not _has_offsets(plan.checkpoint):
        # a new query reads the published spool from its start: what an earlier run of
        # the name published is not this one's (and would be kept out as duplicates)
        shutil.rmtree(published, ignore_errors=True)
    partitions = (
        plan.state_partitions or PARTITIONS_PER_CORE * spark.sparkContext.defaultParallelism
    )
    shape = settle(
        plan.checkpoint,
        JobShape(partitions, plan.buckets or GROUPS_PER_PARTITION * partitions, plan.salts),
    )
    # the stateful operator's partitioning is read when the query starts (and then kept
    # in its checkpoint); the session's own setting is restored afterwards
    previous = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", str(shape.state_partitions))
    parts = GroupParts(plan.output, plan.results_format, plan.feed_entries, plan.channels)
    spread = plan.hot_folder is not None and shape.salts > 1
    route = RouteTask(
        plan.registry,
        group_keys(shape.buckets, shape.state_partitions),
        shape.salts,
        plan.allowed_lateness,
        plan.output,
        plan.results_format,
        plan.feed_entries,
        plan.applied,
        plan.hot_folder if spread else None,
        plan.channels,
    )
    reader = (
        spark.readStream.format("xscl-routed")
        .option("path", plan.spool)
        .option("registry", plan.registry)
        .option("applied", plan.applied or "")
        .option("partitionsPerBatch", str(spark.sparkContext.defaultParallelism))
        .option("route", route.to_json())
        .option("published", published)
    )
    if plan.max_records_per_batch:
        reader = reader.option("maxRecordsPerBatch", str(plan.max_records_per_batch))
    if plan.start_offset is not None:
        reader = reader.option("startOffset", str(plan.start_offset))
    if plan.end_offset is not None:
        reader = reader.option("endOffset", str(plan.end_offset))
    routed = reader.load()
    joined = routed.groupBy("group").applyInPandasWithState(
        JoinGroups(
            plan.registry,
            plan.spool,
            plan.allowed_lateness,
            parts,
            plan.hot_threshold if spread else None,
            plan.applied,
            published,
            plan.join_plan,
            plan.cache_memory,
        ),
        OUTPUT_DDL,
        STATE_DDL,
        "append",
        GroupStateTimeout.NoTimeout,
    )
    writer = (
        # a real projection first: the pandas operator's columnar rows fed straight to a
        # shuffle fail in Spark 4.3 (ClassCastException: ColumnarBatchRow -> UnsafeRow)
        joined.selectExpr("concat(kind, '') AS kind", "query", "result_id", "end", "line")
        .repartition(shape.state_partitions, "query")
        .writeStream.format("xscl-job-output")
        .option("path", plan.output)
        .option("format", plan.results_format)
        .option("feedEntries", str(plan.feed_entries))
        .option("feedBaseUrl", plan.feed_base_url or "")
        .option("registry", plan.registry)
        .option("hotValues", plan.hot_folder or "")
        .option("fence", plan.fence or "")
        .option("published", published)
        .option("checkpointLocation", plan.checkpoint)
        .queryName(plan.name)
    )
    writer = triggered(writer, plan.once, plan.trigger_seconds)
    try:
        return writer.start()
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", previous)


def _has_offsets(checkpoint: str) -> bool:
    """Whether Spark planned a batch in ``checkpoint`` (a restart, not a new query)."""
    offsets = Path(checkpoint) / "offsets"
    return offsets.is_dir() and any(offsets.iterdir())


def triggered(writer: Any, once: bool, seconds: float) -> Any:
    """``writer`` with the job's trigger: ``availableNow`` for ``--once``, else every
    ``seconds`` (the XSCL and the CEL query share it)."""
    if once:
        return writer.trigger(availableNow=True)
    return writer.trigger(processingTime=f"{seconds} seconds")
