"""``xscl run --engine spark`` (``xscl.spark_plugin.batch``) against the reference evaluator."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.workloads import Workload, local_records, run_seed, seeded_workload
from xscl.cli.main import main
from xscl.connectors.document import Document, write_envelopes
from xscl.reference import load_queries
from xscl.reference import run_batch as reference_run_batch
from xscl.spark_plugin.batch import run_batch

pytestmark = pytest.mark.spark
REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
#: The generated workloads' seed: another each run; XSCL_WORKLOAD_SEED=N repeats run N.
SEED = run_seed("XSCL_WORKLOAD_SEED")


def _workload(redeliver: bool) -> tuple[int, Workload]:
    """36 documents from ``tests/workloads.py`` with 10 to 120 results (and its seed)."""
    return seeded_workload(
        SEED,
        lambda w: 10 <= len(local_records(w.text, w.docs, limit=120)) <= 120,
        queries=(4, 6),
        documents=(36, 36),
        redeliver=redeliver,
    )


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _by_id(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    by_id = {r["result_id"]: r for r in records}
    assert len(by_id) == len(records), "a result_id occurs twice"
    return by_id


@pytest.mark.parametrize("example", ["thesis", "rss"])
def test_cli_spark_engine_gives_the_expected_results(
    spark: Any, example: str, tmp_path: Path
) -> None:
    folder = EXAMPLES / example
    out = tmp_path / "results.jsonl"
    code = main(["run", "--engine", "spark", "--queries", str(folder / "queries.xscl"),
                 "--input", str(folder / "documents.jsonl"), "--output", str(out)])
    assert code == 0
    got = _records(out)
    reference = tmp_path / "reference.jsonl"
    reference_run_batch((folder / "queries.xscl").read_text(encoding="utf-8"),
                        folder / "documents.jsonl", reference)
    assert _by_id(got) == _by_id(_records(reference))
    assert _by_id(got) == _by_id(_records(folder / "expected-results.jsonl"))
    # Same order as the local engine: sorted by (query, result_id).
    assert [(r["query"], r["result_id"]) for r in got] == sorted(
        (r["query"], r["result_id"]) for r in got
    )
    assert _records(tmp_path / "results.deadletter.jsonl") == []


def test_generated_workload_over_several_micro_batches_equals_reference(
    spark: Any, tmp_path: Path
) -> None:
    seed, workload = _workload(redeliver=True)
    text = workload.text
    source = _envelopes(tmp_path / "docs.jsonl", workload.docs)
    expected = tmp_path / "reference.jsonl"
    reference = reference_run_batch(text, source, expected)
    summary = run_batch(
        load_queries(text), source, tmp_path / "spark.jsonl", max_records_per_batch=5
    )
    story = f"workload seed {seed} (XSCL_WORKLOAD_SEED={SEED}): {workload!r}"
    assert _by_id(_records(tmp_path / "spark.jsonl")) == _by_id(_records(expected)), story
    assert (summary.documents, summary.results) == (reference.documents, reference.results)
    assert summary.micro_batches >= 8  # 36 lines or more, at most 5 per micro-batch


def test_duplicates_count_once_and_malformed_lines_become_dead_letters(
    spark: Any, tmp_path: Path
) -> None:
    good = (EXAMPLES / "thesis" / "documents.jsonl").read_text(encoding="utf-8").splitlines()
    bad_xml = json.dumps({"stream": "S", "docid": "broken", "ts": "2009-04-01T09:10:00Z",
                          "xml": "<book><author>x</book>"})
    source = tmp_path / "docs.jsonl"
    source.write_text(
        "\n".join([good[0], good[0], "this is not json", bad_xml, good[1], good[0]]) + "\n",
        encoding="utf-8",
    )
    queries = (EXAMPLES / "thesis" / "queries.xscl").read_text(encoding="utf-8")
    expected = tmp_path / "reference.jsonl"
    reference = reference_run_batch(queries, source, expected)
    summary = run_batch(load_queries(queries), source, tmp_path / "spark.jsonl")
    got = _records(tmp_path / "spark.jsonl")
    assert _by_id(got) == _by_id(_records(expected))
    assert sorted(r["query"] for r in got) == ["Q1", "Q2"]
    assert (summary.documents, summary.duplicates) == (2, 2)
    assert summary.dead_letters == reference.dead_letters == 2
    dead = _records(tmp_path / "spark.deadletter.jsonl")
    assert [d["line"] for d in dead] == [3, 4]
    assert dead[1]["docid"] == "broken" and dead[1]["code"].startswith("XSCL-")
    assert all(d["reason"] for d in dead)


def _envelopes(path: Path, docs: Sequence[Document]) -> Path:
    with path.open("w", encoding="utf-8") as handle:
        write_envelopes(docs, handle)
    return path


def test_order_within_the_allowed_lateness_does_not_matter_and_later_is_dead(
    spark: Any, tmp_path: Path
) -> None:
    """Spec 3.3: results depend on timestamps within the lateness; later ones are counted."""
    seed, workload = _workload(redeliver=False)
    text, story = workload.text, f"workload seed {seed} (XSCL_WORKLOAD_SEED={SEED})"
    docs = sorted(workload.docs, key=lambda d: d.ts_micros)
    lateness = 2_000_000  # timestamps lie in 0..5 s
    # Permute: reverse runs of documents whose timestamps span at most the lateness.
    permuted: list[Any] = []
    run: list[Any] = []
    for doc in docs:
        if run and doc.ts_micros - run[0].ts_micros > lateness:
            permuted.extend(reversed(run))
            run = []
        run.append(doc)
    permuted.extend(reversed(run))
    assert permuted != docs
    in_order = reference_run_batch(text, _envelopes(tmp_path / "sorted.jsonl", docs),
                                   tmp_path / "sorted-results.jsonl")
    summary = run_batch(load_queries(text), _envelopes(tmp_path / "permuted.jsonl", permuted),
                        tmp_path / "spark.jsonl", allowed_lateness_micros=lateness,
                        max_records_per_batch=4)
    assert in_order.results > 0 and summary.late == 0, story
    assert _by_id(_records(tmp_path / "spark.jsonl")) == _by_id(
        _records(tmp_path / "sorted-results.jsonl")), story

    # Two documents far older than the watermark, at the end: dead letters, counted.
    stale = [type(d)(d.stream, d.docid + "-stale", d.ts_micros - 60_000_000, d.xml)
             for d in docs[-2:]]
    late_input = _envelopes(tmp_path / "late.jsonl", [*permuted, *stale])
    reference = reference_run_batch(text, late_input, tmp_path / "late-reference.jsonl",
                                    allowed_lateness_micros=lateness)
    summary = run_batch(load_queries(text), late_input, tmp_path / "late-spark.jsonl",
                        allowed_lateness_micros=lateness, max_records_per_batch=4)
    assert summary.late == 2 and summary.dead_letters == reference.dead_letters == 2
    dead = _records(tmp_path / "late-spark.deadletter.jsonl")
    assert {d["docid"] for d in dead} == {d.docid for d in stale}
    assert {d["code"] for d in dead} == {"XSCL-R008"}
    assert _by_id(_records(tmp_path / "late-spark.jsonl")) == _by_id(
        _records(tmp_path / "late-reference.jsonl")), story


def test_micro_batches_count_those_that_read_documents_routed_nowhere(
    spark: Any, tmp_path: Path
) -> None:
    """A micro-batch whose documents bind nothing routes no row (Spark's numInputRows is
    0) but still read them: it is counted (a generated workload once ran 7 for 36 lines
    in batches of 5)."""
    nothing = [Document("S", f"n{i}", i, "<other/>") for i in range(5)]
    matching = [Document("S", "s", 10, "<item><a>v</a></item>"),
                Document("T", "t", 11, "<item><a>v</a></item>")]  # fmt: skip
    source = _envelopes(tmp_path / "docs.jsonl", [*nothing, *matching])
    text = "Q: S//item[./a->x] JOIN {x = y, INF} T//item[./a->y];"
    summary = run_batch(
        load_queries(text), source, tmp_path / "spark.jsonl", max_records_per_batch=5
    )
    assert (summary.documents, summary.results, summary.micro_batches) == (7, 1, 2)
