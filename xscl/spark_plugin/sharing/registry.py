"""The sharing graph of a job's registry, built and summarised on Spark.

Nothing per query goes through the driver's Python: the live queries come from the
compiled table (``spark.read.parquet("REGISTRY/compiled")``) and the registry's event
files (``spark.read.json``: who was subscribed and unsubscribed when), the graph's
components from ``components``, and only the summary's few rows are collected.

* A query is live when the newest event naming its id subscribes it (what
  ``subscriptions.apply_event`` does event by event); its row is the one of that
  event's compiled folder. A live query whose event has no compiled folder (its
  compilation failed) is counted, not grouped.
* Vertex ids (LONG): a query's is ``event << 33 | position << 1`` (even, exact,
  the same on every recomputation); a key's (``keys``: template, definition,
  published stream) is odd, from ``monotonically_increasing_id`` over the distinct
  keys, checkpointed so it is computed once.

Where it runs: ``sharing_graph``, ``summarize`` and ``registry_sharing`` on the
driver, once per command (they plan and collect); the reads, joins and aggregations
on the executors. Nothing is pickled: no Python function runs in a task.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from xscl.errors import NoSubscriptionsError
from xscl.service.sharing.keys import DEFINITION, STREAM, TEMPLATE
from xscl.service.sharing.summary import QIDS_SHOWN, GroupSummary, SharingSummary
from xscl.service.subscriptions import SubscriptionLog
from xscl.spark_plugin.sharing.components import ComponentLabels, Components, components_for

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["SharingGraph", "check_registry", "registry_sharing", "sharing_graph", "summarize"]

#: The registry's event files as Spark reads them (their query text is not read).
_EVENTS = "version LONG, op STRING, ids ARRAY<STRING>"


@dataclass(frozen=True)
class SharingGraph:
    """The bipartite graph of a registry's live queries and their sharing keys."""

    #: ``qvid``, ``qid``: one row per live compiled query (checkpointed)
    queries: DataFrame
    #: its rows
    count: int
    #: ``src`` (a query's vertex), ``dst`` (a key's vertex), ``kind`` (the key's);
    #: checkpointed
    edges: DataFrame
    #: ``kind``, ``text``, ``kid`` (the key's vertex): each key once (checkpointed)
    keys: DataFrame
    #: live queries whose subscribe event has no compiled folder
    not_compiled: int


def sharing_graph(spark: SparkSession, registry: str | Path) -> SharingGraph:
    """The sharing graph of the live queries of ``registry`` (module docstring)."""
    from pyspark.sql import functions as F

    registry = Path(registry)
    files = [str(p) for p in sorted(registry.glob("*.json")) if p.stem.isdigit()]
    events = spark.read.schema(_EVENTS).option("multiLine", True).json(files)
    live = (
        events.select("version", "op", F.explode("ids").alias("qid"))
        .groupBy("qid")
        .agg(F.max_by("op", "version").alias("op"), F.max("version").alias("event"))
        .where(F.col("op") == "subscribe")
        .select("qid", "event")
    )
    found = live.join(_compiled(spark, registry), ["qid", "event"], "left")
    qvid = (
        F.shiftleft(F.col("event").cast("long"), 33)
        .bitwiseOR(F.shiftleft(F.col("position").cast("long"), 1))
        .alias("qvid")
    )
    every = found.select(qvid, "qid").localCheckpoint()  # qvid null: not compiled
    counts = every.agg(F.count("qvid").alias("compiled"), F.count("*").alias("live")).first()
    rows = found.where(F.col("position").isNotNull()).select(
        qvid, "template", "definitions", "publish", "blocks"
    )
    publishing = rows.where(F.col("publish").isNotNull())
    published = publishing.select(F.col("publish").alias("text")).distinct()
    streams = F.array_distinct(F.transform("blocks", lambda b: F.get_json_object(b, "$.stream")))
    reads = rows.select("qvid", F.explode(streams).alias("text")).join(
        published, "text", "left_semi"
    )
    keyed = (  # each query's keys once: its definitions made distinct in the row
        rows.select("qvid", F.lit(TEMPLATE).alias("kind"), F.col("template").alias("text"))
        .union(
            rows.select(
                "qvid",
                F.lit(DEFINITION).alias("kind"),
                F.explode(F.array_distinct("definitions")).alias("text"),
            )
        )
        .union(publishing.select("qvid", F.lit(STREAM).alias("kind"), F.col("publish")))
        .union(reads.select("qvid", F.lit(STREAM).alias("kind"), "text"))
    )
    keys = (
        keyed.select("kind", "text")
        .distinct()
        .withColumn("kid", F.monotonically_increasing_id() * 2 + 1)
        .localCheckpoint()
    )
    edges = (
        keyed.join(keys, ["kind", "text"])
        .select(F.col("qvid").alias("src"), F.col("kid").alias("dst"), "kind")
        .localCheckpoint()
    )
    count = 0 if counts is None else int(counts["compiled"])
    not_compiled = 0 if counts is None else int(counts["live"]) - count
    queries = every.where(F.col("qvid").isNotNull())
    return SharingGraph(queries, count, edges, keys, not_compiled)


def _compiled(spark: SparkSession, registry: Path) -> DataFrame:
    """The compiled table's columns the graph needs (empty when nothing is compiled)."""
    folder = registry / "compiled"
    columns = ["qid", "event", "position", "template", "definitions", "publish", "blocks"]
    if folder.is_dir() and any(folder.glob("event=*")):
        table = spark.read.parquet(str(folder))
        return table.select(*columns).withColumn("event", table["event"].cast("long"))
    schema = (
        "qid STRING, event LONG, position INT, template STRING, definitions ARRAY<STRING>, "
        "publish STRING, blocks ARRAY<STRING>"
    )
    return spark.createDataFrame([], schema)


def summarize(
    graph: SharingGraph, found: ComponentLabels, implementation: str, top: int, started: float
) -> SharingSummary:
    """The summary of ``graph``'s groups (``found``); collects only its own few rows.
    Its ``seconds`` count from ``started`` (a ``time.perf_counter()``) to the end."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    labels = found.labels
    members = graph.queries.join(labels, graph.queries["qvid"] == labels["id"]).select(
        "qid", "component"
    )
    sizes = (
        members.groupBy("component")
        .agg(F.count("*").alias("size"), F.min("qid").alias("first"))
        .localCheckpoint()
    )
    counts = sizes.agg(
        F.count("*").alias("groups"), F.count(F.when(F.col("size") == 1, 1)).alias("singletons")
    ).first()
    largest = sizes.orderBy(F.desc("size"), F.asc("first")).limit(top).collect()
    chosen = F.col("component").isin([row["component"] for row in largest])
    kinds = {
        (row["component"], row["kind"]): row["n"]
        for row in graph.edges.join(labels, graph.edges["src"] == labels["id"])
        .where(chosen)
        .groupBy("component", "kind")
        .agg(F.countDistinct("dst").alias("n"))
        .collect()
    }
    shown: dict[int, list[str]] = {}
    for row in (
        members.where(chosen)
        .withColumn("k", F.row_number().over(Window.partitionBy("component").orderBy("qid")))
        .where(F.col("k") <= QIDS_SHOWN)
        .orderBy("component", "k")
        .collect()
    ):
        shown.setdefault(row["component"], []).append(row["qid"])
    totals = {row["kind"]: row["count"] for row in graph.keys.groupBy("kind").count().collect()}
    return SharingSummary(
        queries=graph.count,
        templates=totals.get(TEMPLATE, 0),
        definitions=totals.get(DEFINITION, 0),
        published_streams=totals.get(STREAM, 0),
        groups=0 if counts is None else int(counts["groups"]),
        singletons=0 if counts is None else int(counts["singletons"]),
        largest=tuple(
            GroupSummary(
                row["size"],
                kinds.get((row["component"], TEMPLATE), 0),
                kinds.get((row["component"], DEFINITION), 0),
                tuple(shown[row["component"]]),
            )
            for row in largest
        ),
        implementation=implementation,
        rounds=found.rounds,
        seconds=time.perf_counter() - started,
        not_compiled=graph.not_compiled,
    )


def check_registry(registry: str | Path) -> None:
    """Raise ``NoSubscriptionsError`` (``XSCL-S015``) when ``registry`` holds no event
    (driver; lists file names only)."""
    if not SubscriptionLog(registry).versions():
        raise NoSubscriptionsError.from_code(
            "XSCL-S015", f"no subscription event in {registry}: nothing was subscribed"
        )


def registry_sharing(
    spark: SparkSession,
    registry: str | Path,
    top: int,
    components: Components | None = None,
) -> SharingSummary:
    """The sharing groups of ``registry``'s live queries (its pending events should be
    compiled first: ``spark_plugin.compile_job.compile_registry``); ``components`` default
    ``components_for(spark)``. Raises ``NoSubscriptionsError`` when the registry has no
    event (``XSCL-S015``) or no live query (``XSCL-S016``)."""
    check_registry(registry)
    chosen = components if components is not None else components_for(spark)
    started = time.perf_counter()
    graph = sharing_graph(spark, registry)
    if graph.count == 0 and graph.not_compiled == 0:
        raise NoSubscriptionsError.from_code(
            "XSCL-S016", f"the registry {registry} holds no subscribed query (all unsubscribed)"
        )
    found = chosen.label(graph.edges.select("src", "dst"))
    return summarize(graph, found, chosen.name, top, started)
