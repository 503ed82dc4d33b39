"""The in-process engine drops a document that can only be the newest of its matches
once the allowed lateness has passed it (``engine.partner_reach``), as the job's value
groups do (``tests/spark/test_spark_job_early_eviction.py``); no result is lost (the
generated workloads with lateness: ``test_engine_local_reference.py``)."""

from __future__ import annotations

from tests.workloads import reference_records
from xscl.connectors.document import Document
from xscl.engine import LocalEngine
from xscl.lang import parse_queries

SECOND = 1_000_000
LATER = "later: S//item[./a->x] FOLLOWED BY {x = y, 20s} T//item[./a->y];"


def test_the_newest_of_every_match_is_kept_for_the_lateness_only() -> None:
    docs = [Document("ST"[n % 2], f"d{n}", n * SECOND, "<item><a>v</a></item>") for n in range(30)]
    engine = LocalEngine(parse_queries(LATER), allowed_lateness_micros=2 * SECOND)
    got = {r.result_id for r in engine.process(docs)}
    assert got == {r["result_id"] for r in reference_records(LATER, docs, 2 * SECOND)} and got
    kept = {docid for _stream, docid in engine.state.docs}
    assert kept == {f"d{n}" for n in (27, 29)} | {f"d{n}" for n in range(8, 30, 2)}


def test_an_inf_window_keeps_the_older_side_and_drops_the_newest() -> None:
    """With an INF window the S documents stay; the T documents still go."""
    text = LATER.replace("20s", "INF")
    docs = [Document("ST"[n % 2], f"d{n}", n * SECOND, "<item><a>v</a></item>") for n in range(12)]
    engine = LocalEngine(parse_queries(text), allowed_lateness_micros=2 * SECOND)
    assert len(engine.process(docs)) == len(reference_records(text, docs, 2 * SECOND)) == 21
    kept = {docid for _stream, docid in engine.state.docs}
    assert kept == {f"d{n}" for n in range(0, 12, 2)} | {"d9", "d11"}
