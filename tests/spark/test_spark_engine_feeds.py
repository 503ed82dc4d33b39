"""``--engine spark`` = the reference on real feed items with generated queries.

The items of ``../shared/data/feeds-stream-youthopp`` (daily snapshots that
re-deliver items) with the hand-written queries (a three-block chain among them)
and 20 queries generated as in thesis 6.6.1: 1-3 value joins, JOIN and FOLLOWED
BY, windows 6h / 1d / 3d / INF. Small micro-batches so that most of them are
evaluated by Stage 1 on the executors (``mapInArrow``), not on the driver.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.engine_local.test_engine_local_feeds import (
    DATA,
    HAND_WRITTEN,
    feed_documents,
    generated_queries,
)
from xscl import reference
from xscl.connectors.document import Document, write_envelopes
from xscl.lang.parser import parse_queries
from xscl.spark_plugin.batch import run_batch

pytestmark = [pytest.mark.spark, pytest.mark.shared_data]


@pytest.mark.skipif(not DATA.is_dir(), reason=f"shared test data not found at {DATA}")
def test_feed_items_with_generated_queries_equal_reference(spark: Any, tmp_path: Path) -> None:
    docs = feed_documents(days=4)
    unique = len({d.docid for d in docs})
    text = HAND_WRITTEN + generated_queries(seed=11, count=20)
    queries = list(parse_queries(text))
    ref_docs = [reference.make_document(d.stream, d.docid, d.ts_micros, d.xml) for d in docs]
    expected = {r.result_id: r.to_json_dict() for r in reference.evaluate(queries, ref_docs)}
    source = tmp_path / "items.jsonl"
    with source.open("w", encoding="utf-8") as handle:
        write_envelopes((Document(d.stream, d.docid, d.ts_micros, d.xml) for d in docs), handle)
    out = tmp_path / "spark.jsonl"
    summary = run_batch(queries, source, out, max_records_per_batch=-(-unique // 6))
    got = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(expected) > 20 and summary.micro_batches >= 6
    assert {r["result_id"]: r for r in got} == expected
    assert len(got) == len(expected)
    assert summary.duplicates == len(docs) - unique > 0
    assert {"same_author", "topic_chain"} <= {r["query"] for r in got}
