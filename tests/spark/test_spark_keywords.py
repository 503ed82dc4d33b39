"""``--engine spark`` with 5,000 keyword subscriptions equals the reference (issue 34).

Stage 1 on the executors is the job's subscriptions' own (built in each worker
from the registry), so it screens function predicates with the same presearch
index as the local engine; one-block queries are matched where Stage 1 runs.
The keywords are words of the items' own titles (some match) and
of nothing (most do not), in several cases, so the index's case folding is
exercised; a few are ``matches()`` and ``lower-case`` shapes.  Small
micro-batches put most of the items through the executors.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.engine_local.test_engine_local_feeds import DATA, feed_documents
from xscl import reference
from xscl.connectors.document import Document, write_envelopes
from xscl.engine.subscriptions import Subscriptions
from xscl.lang.parser import parse_queries
from xscl.spark_plugin.batch import run_batch

pytestmark = [pytest.mark.spark, pytest.mark.shared_data]

SUBSCRIPTIONS = 5_000


def keyword_queries(docs: list[Document]) -> str:
    words = sorted({w for d in docs for w in re.findall(r"[A-Za-z]{4,}", d.xml)})
    lines = []
    for n in range(SUBSCRIPTIONS):
        word = words[n % len(words)] if n % 2 == 0 else f"absent{n}"
        if n % 7 == 0:
            word = word.upper()
        if n % 50 == 1:
            predicate = f"matches(title, '^{words[n % len(words)]}|{word}$', 'i')"
        elif n % 50 == 3:
            predicate = f"contains(lower-case(title), '{word.lower()}')"
        else:
            predicate = f"contains(title, '{word}')"
        lines.append(f"k{n}: feed//item->x[{predicate}];")
    return "\n".join(lines) + "\n"


@pytest.mark.skipif(not DATA.is_dir(), reason=f"shared test data not found at {DATA}")
def test_five_thousand_keyword_subscriptions_equal_reference(spark: Any, tmp_path: Path) -> None:
    docs = feed_documents(days=1)
    unique = len({d.docid for d in docs})
    queries = list(parse_queries(keyword_queries(docs)))
    assert Subscriptions().stage1.presearch, "the executors' Stage 1 screens with the index"
    ref_docs = [reference.make_document(d.stream, d.docid, d.ts_micros, d.xml) for d in docs]
    expected = {r.result_id: r.to_json_dict() for r in reference.evaluate(queries, ref_docs)}
    source = tmp_path / "items.jsonl"
    with source.open("w", encoding="utf-8") as handle:
        write_envelopes((Document(d.stream, d.docid, d.ts_micros, d.xml) for d in docs), handle)
    out = tmp_path / "spark.jsonl"
    summary = run_batch(queries, source, out, max_records_per_batch=-(-unique // 3))
    got = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(expected) > 50 and summary.micro_batches >= 3
    assert {r["result_id"]: r for r in got} == expected
