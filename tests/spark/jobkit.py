"""Helpers of the streaming job's tests: the committed result set, the reference's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from xscl.connectors.document import Document, write_envelopes
from xscl.reference import run_batch as reference_run_batch
from xscl.results.read import read_results
from xscl.spark_plugin.job.plan import JobPlan, start_job


def run_once(spark: Any, work: Path, spool: Path, registry: Path, **options: Any) -> Any:
    """The job's plan run once (``availableNow``) on the shared session, results and
    checkpoint under ``work``; the finished ``StreamingQuery``."""
    plan = JobPlan(
        spool=str(spool),
        registry=str(registry),
        output=str(work / "out"),
        checkpoint=str(work / "checkpoint"),
        name=f"job_{work.name}",
        once=True,
        **{"state_partitions": 2, "buckets": 16, **options},
    )
    query = start_job(spark, plan)
    query.awaitTermination()
    assert query.exception() is None
    return query


def committed_by_id(results: Path) -> dict[str, dict[str, Any]]:
    """The committed records of a results folder by id; fails if one is committed twice."""
    got: dict[str, dict[str, Any]] = {}
    for record in read_results(results):
        assert record["result_id"] not in got, "a result committed twice"
        got[record["result_id"]] = record
    return got


def reference_by_id(
    work: Path, text: str, docs: list[Document], lateness: int | None = None
) -> dict[str, dict[str, Any]]:
    """``xscl.reference``'s records for ``docs`` (file order = their order), by id."""
    source = work / "docs.jsonl"
    with open(source, "w", encoding="utf-8") as handle:
        write_envelopes(docs, handle)
    out = work / "reference.jsonl"
    reference_run_batch(text, source, out, allowed_lateness_micros=lateness)
    records = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    return {r["result_id"]: r for r in records}


def subscribed(work: Path, text: str) -> Any:
    """A worker's queries (``LiveQueries``) after ``text`` is subscribed and applied
    at offset 0 in a registry under ``work``."""
    from xscl.service.live_queries import LiveQueries
    from xscl.service.subscriptions import SubscriptionLog

    log = SubscriptionLog(work / "registry")
    log.subscribe(text, source="q.xscl")
    log.record_applied(1, 0)
    return LiveQueries().at(str(work / "registry"), 1)
