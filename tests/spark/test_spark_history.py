"""History on subscribe on Spark, end to end: a query subscribed with ``--history`` to a
running job; the scans the driver owes it (``service.history_runs`` with
``spark_plugin.history_scan.SparkScanner``: the job's plan run once, availableNow, over
the history) and the live job's results are disjoint, and together they are
``xscl.reference``'s over the history and the new documents, as if the query had been
subscribed at the history's start; a join of a history document with a live one is
committed once, by the closing scan, or by the follow-up scans of an INF window, which
go on from the scan's own checkpoint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.spark.test_spark_subscriptions import BY_AUTHOR, FOLLOW, SAME_TAG, _docs
from xscl.cli.main import main
from xscl.connectors.spool import Spool, SpoolReader
from xscl.lang.parser import parse_file
from xscl.reference import evaluate, make_document
from xscl.results.read import read_results
from xscl.service.history import history_span
from xscl.service.history_runs import HistoryRuns
from xscl.service.subscriptions import SubscriptionLog
from xscl.spark_plugin.history_scan import SparkScanner
from xscl.spark_plugin.job.plan import JobPlan, start_job

pytestmark = pytest.mark.spark


def _job(tmp_path: Path, later: str) -> tuple[list[str], Path, Path, Path, JobPlan]:
    """A home whose job runs BY_AUTHOR, the ``later`` queries' file beside it, and the
    job's plan: (the home's CLI options, registry, spool, results, plan)."""
    home = ["--home", str(tmp_path / "home"), "--name", "job"]
    registry = tmp_path / "home" / "registry" / "job"
    spool_path, output = tmp_path / "spool", tmp_path / "out"
    (tmp_path / "first.xscl").write_text(BY_AUTHOR, encoding="utf-8")
    (tmp_path / "later.xscl").write_text(later, encoding="utf-8")
    assert main(["subscribe", str(tmp_path / "first.xscl"), *home]) == 0
    plan = JobPlan(
        spool=str(spool_path),
        registry=str(registry),
        output=str(output),
        checkpoint=str(tmp_path / "checkpoint"),
        name=f"history_{tmp_path.name}",
        allowed_lateness=0,
        trigger_seconds=0.2,
        state_partitions=2,
        buckets=8,
    )
    return home, registry, spool_path, output, plan


def test_subscribe_with_history_to_a_running_job(spark: Any, tmp_path: Path) -> None:
    home, registry, spool_path, output, plan = _job(tmp_path, FOLLOW)
    docs = _docs(0, 20)
    with Spool(spool_path, sync=False) as spool:
        query = start_job(spark, plan)
        try:
            spool.append(docs[:10])
            query.processAllAvailable()
            later = ["subscribe", str(tmp_path / "later.xscl"), "--history", "15s"]
            assert main([*later, *home]) == 0
            spool.append(docs[10:])
            query.processAllAvailable()
        finally:
            query.stop()
    assert query.exception() is None
    log = SubscriptionLog(registry)
    assert log.applied() == {1: 0, 2: 10}
    runs = HistoryRuns(
        log,
        str(spool_path),
        tmp_path / "history",
        SparkScanner(spark, str(spool_path), 0, str(tmp_path / "scans")),
        allowed_lateness=0,
    )
    # the clock (57 s) has passed the history's (27 s) + 20 s: first and closing scans
    made = runs.step()
    assert made > 0 and runs.step() == 0
    history = list(read_results(tmp_path / "history" / "2"))
    live = [r for r in read_results(output) if r["query"] == "follow"]
    span = history_span(SpoolReader(spool_path), 10, 15_000_000)
    assert (span.start, span.since) == (4, 10)  # 27 s - 15 s: the document at 12 s
    assert {r["result_id"] for r in history}.isdisjoint(r["result_id"] for r in live)
    queries = parse_file(FOLLOW).queries
    reference = evaluate(queries, [make_document(d.stream, d.docid, d.ts_micros, d.xml)
                                   for d in docs[span.start :]])  # fmt: skip
    assert {r["result_id"] for r in history + live} == {r.result_id for r in reference}
    assert len(history) + len(live) == len(reference)
    crossing = [r for r in history if max(int(d["docid"][1:]) for d in r["docs"]) >= 10]
    assert crossing, "a join of a history document with a live one, by the history"


def test_an_inf_window_is_followed_from_the_scan_s_checkpoint(spark: Any, tmp_path: Path) -> None:
    home, registry, spool_path, output, plan = _job(tmp_path, SAME_TAG)
    docs = _docs(0, 20)
    scanner = SparkScanner(spark, str(spool_path), 0, str(tmp_path / "scans"))
    runs = HistoryRuns(
        SubscriptionLog(registry),
        str(spool_path),
        tmp_path / "history",
        scanner,
        allowed_lateness=0,
        follow_seconds=0.0,
    )
    made = []
    with Spool(spool_path, sync=False) as spool:
        query = start_job(spark, plan)
        try:
            spool.append(docs[:10])
            query.processAllAvailable()
            later = ["subscribe", str(tmp_path / "later.xscl"), "--history", "15s"]
            assert main([*later, *home]) == 0
            spool.append(docs[10:15])
            query.processAllAvailable()
            made.append(runs.step())  # the first scan, then a follow-up up to 15
            spool.append(docs[15:])
            query.processAllAvailable()
        finally:
            query.stop()
    assert query.exception() is None
    made.append(runs.step())  # a follow-up: only offsets 15..20 read by the kept scan
    assert made[0] > 0 and made[1] > 0, made
    assert 2 not in runs.finished  # an INF window never closes
    (work,) = scanner.kept.values()
    logged = (work.folder / "checkpoint" / "offsets").glob("[0-9]*")
    offsets = sorted(logged, key=lambda path: int(path.name))
    assert '{"offset":20,"published":0}' in offsets[-1].read_text().replace(" ", "")
    assert '{"offset":15,"published":0}' in offsets[-2].read_text().replace(" ", "")
    history = list(read_results(tmp_path / "history" / "2"))
    live = [r for r in read_results(output) if r["query"] == "same_tag"]
    span = history_span(SpoolReader(spool_path), 10, 15_000_000)
    assert {r["result_id"] for r in history}.isdisjoint(r["result_id"] for r in live)
    reference = evaluate(parse_file(SAME_TAG).queries,
                         [make_document(d.stream, d.docid, d.ts_micros, d.xml)
                          for d in docs[span.start :]])  # fmt: skip
    assert {r["result_id"] for r in history + live} == {r.result_id for r in reference}
    assert len(history) + len(live) == len(reference)
    late = [r for r in history if max(int(d["docid"][1:]) for d in r["docs"]) >= 15]
    assert late, "a history document joined with one of the last follow-up's"
