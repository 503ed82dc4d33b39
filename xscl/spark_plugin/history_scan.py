"""History on subscribe on Spark: a subscription's history scanned as a batch job on
the executors (docs/architecture.md, "History on subscribe").

The scan is the job's own plan (``job.plan``) run once (``availableNow``) over the job's
spool from the history's first offset to ``end``, with a registry of its own holding
only the new queries (event 1: they see every document of the scan, so they are
subscribed at ``span.start``), into a results folder of its own. Stage 1, the join
groups and the result parts run in executor tasks as in the live job; the driver only
plans, then reads the committed records and keeps those the history owns
(``service.history``: a document before ``since``). To tell them apart the driver reads
the keys of ``[since, end)`` only: the documents that arrived after the subscription,
few next to the history.

``SparkScanner`` is this scan as the ``HistoryScanner`` that ``xscl serve``'s
``service.history_runs.HistoryRuns`` runs between micro-batches.

Runs on the driver (planning and the commit, once per scan); the tasks are the job's
(``job/``), so what they pickle is what the job's tasks pickle.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xscl.connectors.spool import SpoolReader
from xscl.lang.parser import parse_file
from xscl.service.history import HistorySpan
from xscl.service.namespaces import registry_id
from xscl.service.subscriptions import SubscriptionEvent


def scan_on_spark(
    spark: Any,
    *,
    spool: str | Path,
    text: str,
    span: HistorySpan,
    end: int,
    ids: Sequence[str] | None = None,
    namespace: str = "",
    allowed_lateness: int | None = None,
    scratch: str | Path | None = None,
) -> list[dict[str, Any]]:
    """The history's results of the queries ``ids`` (None: all; registry ids, the
    file's ids in ``namespace``, ``service.namespaces``) of ``text`` over
    ``[span.start, end)`` of the spool (``end`` at least ``span.since``), as result
    records (JSON dicts), by result id. ``scratch``: where the scan's registry,
    checkpoint and results go (removed after)."""
    from xscl.results.read import read_results
    from xscl.service.subscriptions import SubscriptionLog
    from xscl.spark_plugin.batch import _run_once
    from xscl.spark_plugin.job.plan import JobPlan

    end = max(end, span.since)
    if span.start >= end:
        return []
    work = Path(tempfile.mkdtemp(prefix="xscl-history-", dir=scratch))
    try:
        SubscriptionLog(work / "registry").subscribe(
            text, source="history", namespace=namespace, only=ids
        )
        plan = JobPlan(
            spool=str(spool),
            registry=str(work / "registry"),
            output=str(work / "results"),
            checkpoint=str(work / "checkpoint"),
            name=f"xscl_history_{uuid.uuid4().hex}",
            allowed_lateness=allowed_lateness,
            once=True,
            start_offset=span.start,
            end_offset=end,
        )
        _run_once(spark, plan)
        records = list(read_results(work / "results"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    live = {doc.key for _offset, doc in SpoolReader(spool).iter_range(span.since, end)}
    queries = [
        q
        for q in parse_file(text).queries
        if ids is None or registry_id(namespace, q.qid) in ids
    ]
    published = {q.publish for q in queries if q.publish is not None}
    owned = [r for r in records if _owned(r, live, published)]
    return sorted(owned, key=lambda r: (r["query"], r["result_id"]))


def _owned(record: dict[str, Any], live: set[tuple[str, str]], published: set[str]) -> bool:
    """A spool document of ``record`` is not among the live ones: it is in the history
    (a document PUBLISHed inside the scan does not decide, as in ``service.history``)."""
    return any(
        (doc["stream"], doc["docid"]) not in live
        for doc in record["docs"]
        if doc["stream"] not in published
    )


@dataclass(frozen=True)
class SparkScanner:
    """``service.history_runs.HistoryScanner`` on Spark: ``scan_on_spark`` in the job's
    session (driver, once per scan a ``HistoryRuns`` step owes)."""

    spark: Any
    spool: str
    allowed_lateness: int | None = None
    scratch: str | None = None

    def __call__(
        self, event: SubscriptionEvent, ids: Sequence[str], span: HistorySpan, end: int
    ) -> list[dict[str, Any]]:
        return scan_on_spark(
            self.spark,
            spool=self.spool,
            text=event.text,
            ids=ids,
            namespace=event.namespace,
            span=span,
            end=end,
            allowed_lateness=self.allowed_lateness,
            scratch=self.scratch,
        )
