"""Per-client ids in the running job (``service.namespaces``): two API clients and
the command line subscribe the same id, and the job runs each under its registry id
(``<client>~<id>``; the command line's as written) with the results the reference
gives the query under that id. One micro-batch."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from xscl.connectors.document import Document
from xscl.connectors.spool import Spool
from xscl.lang.parser import parse_file
from xscl.reference import evaluate, make_document
from xscl.results.read import read_results
from xscl.service.subscriptions import SubscriptionLog
from xscl.spark_plugin.job.plan import JobPlan, start_job

QUERY = "W1: S//item->i[./author->a] JOIN {a = b, INF} S//item->j[./author->b];\n"
BASE_TS = 1_149_156_000_000_000


def _docs(start: int, count: int) -> list[Document]:
    return [
        Document("S", f"d{i}", BASE_TS + i * 3_000_000, f"<item><author>a{i % 3}</author></item>")
        for i in range(start, start + count)
    ]


def _expected(docs: list[Document], rid: str) -> set[str]:
    """The reference's result ids of the query under registry id ``rid``."""
    ref = [make_document(d.stream, d.docid, d.ts_micros, d.xml) for d in docs]
    queries = [replace(q, qid=rid) for q in parse_file(QUERY).queries]
    return {r.result_id for r in evaluate(queries, ref)}


@pytest.mark.spark
def test_two_clients_one_id_two_queries_in_the_job(spark: Any, tmp_path: Path) -> None:
    registry = tmp_path / "registry"
    log = SubscriptionLog(registry)
    for client in ("alice", "bob"):
        log.subscribe(QUERY, source=f"api:{client}", owner=client, namespace=client)
    log.subscribe(QUERY, source="cli.xscl")
    output = tmp_path / "out"
    plan = JobPlan(
        spool=str(tmp_path / "spool"),
        registry=str(registry),
        output=str(output),
        checkpoint=str(tmp_path / "checkpoint"),
        name=f"namespaces_{tmp_path.name}",
        trigger_seconds=0.2,
        state_partitions=2,
        buckets=16,
    )
    docs = _docs(0, 6)
    spool = Spool(tmp_path / "spool", sync=False)
    spool.append(docs)
    query = start_job(spark, plan)
    try:
        query.processAllAvailable()
    finally:
        query.stop()
        spool.close()
    assert query.exception() is None
    got: dict[str, set[str]] = {}
    for record in read_results(output):
        got.setdefault(record["query"], set()).add(record["result_id"])
    assert got == {rid: _expected(docs, rid) for rid in ("alice~W1", "bob~W1", "W1")}
    assert all(got.values()), "every query has results to compare"
