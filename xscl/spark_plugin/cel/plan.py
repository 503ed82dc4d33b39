"""The CEL streaming query's one Spark plan, built on the driver (the driver only plans).

::

    xscl-cel-events: committed XSCL results + events files     driver plans; executors read,
      -> events routed to their groups (class:bucket)           convert and route
      -> groupBy(group).applyInPandasWithState(CelGroups)       executors, RocksDB state
      -> repartition(query) -> xscl-job-output                  tasks write; driver commits

It runs beside the XSCL query in the same session (``xscl serve --cel-queries``)
or alone (``xscl cel run --engine spark``), with its own checkpoint and results
folder. Its queries are the CEL registry's (``service.cel_subscriptions``), read
at every batch: the group keys are ``NAME:bucket`` of the registry's named
classes (``events.live_classes``), so a restart must keep ``buckets``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xscl.spark_plugin.cel.groups import STATE_DDL, CelGroups
from xscl.spark_plugin.job.join_groups import OUTPUT_DDL
from xscl.spark_plugin.job.plan import triggered

#: Buckets per keyed class by default (each group costs a Python call per batch).
DEFAULT_BUCKETS = 4


@dataclass(frozen=True)
class CelPlan:
    """Everything the CEL query's plan depends on (driver)."""

    #: the CEL registry folder (``service.cel_subscriptions``)
    cel_registry: str
    #: JSON of the PUBLISHed XSCL streams' schemas (``from_xscl.xscl_catalog``)
    catalog: str
    output: str
    checkpoint: str
    name: str
    xscl_results: str | None = None
    #: the XSCL job's checkpoint folder holding one folder per epoch
    xscl_checkpoints: str | None = None
    xscl_registry: str | None = None
    events: str | None = None
    buckets: int = DEFAULT_BUCKETS
    slack: int = 0
    release_all: bool = False
    once: bool = False
    trigger_seconds: float = 1.0
    feed_entries: int = 50
    #: the feeds' ``rel="self"`` links are ``URL/<query>.atom`` (None: their files)
    feed_base_url: str | None = None
    #: JSON of the lease and epoch the sink checks before each commit (None: no lease)
    fence: str | None = None


def start_cel_job(spark: Any, plan: CelPlan) -> Any:
    """Start the CEL streaming query (driver, once); returns Spark's ``StreamingQuery``."""
    from pyspark.sql.streaming.state import GroupStateTimeout

    from xscl.results.commit import clear_staging

    clear_staging(plan.output)
    events = (
        spark.readStream.format("xscl-cel-events")
        .option("celRegistry", plan.cel_registry)
        .option("catalog", plan.catalog)
        .option("xsclResults", plan.xscl_results or "")
        .option("xsclCheckpoints", plan.xscl_checkpoints or "")
        .option("xsclRegistry", plan.xscl_registry or "")
        .option("events", plan.events or "")
        .option("buckets", str(plan.buckets))
        .option("slackMicros", str(plan.slack))
        .option("releaseAll", "true" if plan.release_all else "")
        .load()
    )
    grouped = events.groupBy("group").applyInPandasWithState(
        CelGroups(plan.cel_registry, plan.catalog),
        OUTPUT_DDL,
        STATE_DDL,
        "append",
        GroupStateTimeout.NoTimeout,
    )
    writer = (
        grouped.selectExpr("concat(kind, '') AS kind", "query", "result_id", "end", "line")
        .repartition("query")
        .writeStream.format("xscl-job-output")
        .option("path", plan.output)
        .option("format", "jsonl")
        .option("feedEntries", str(plan.feed_entries))
        .option("feedBaseUrl", plan.feed_base_url or "")
        .option("fence", plan.fence or "")
        .option("checkpointLocation", plan.checkpoint)
        .queryName(plan.name)
    )
    return triggered(writer, plan.once, plan.trigger_seconds).start()
