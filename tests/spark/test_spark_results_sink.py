"""``xscl-results``: idempotent by batch id and result id, readable and compactable."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from xscl.spark_plugin.results_sink import (
    StagedPart,
    commit_batch,
    committed_markers,
    compact,
    read_results,
)


def _stage(root: Path, name: str, lines: list[dict[str, Any]]) -> StagedPart:
    staging = root / "_staging"
    staging.mkdir(parents=True, exist_ok=True)
    path = staging / name
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return StagedPart(int(name.split(".")[0]), str(path), len(lines))


def test_commit_is_idempotent_by_batch_id(tmp_path: Path) -> None:
    records = [{"query": "Q", "result_id": f"r{i}"} for i in range(4)]
    parts = [_stage(tmp_path, "0.jsonl", records[:2]), _stage(tmp_path, "1.jsonl", records[2:])]
    assert commit_batch(str(tmp_path), "00000000000000000007", [*parts, None])
    # The replayed batch stages the same rows again; the marker makes it a no-op.
    replay = [_stage(tmp_path, "0.jsonl", records[:2]), _stage(tmp_path, "1.jsonl", records[2:])]
    assert not commit_batch(str(tmp_path), "00000000000000000007", replay)
    assert not list((tmp_path / "_staging").iterdir())
    assert sorted(p.name for p in tmp_path.glob("part-*")) == [
        "part-00000000000000000007-00000.jsonl",
        "part-00000000000000000007-00001.jsonl",
    ]
    assert [r["result_id"] for r in read_results(tmp_path)] == ["r0", "r1", "r2", "r3"]


def test_reader_dedups_result_ids_across_batches(tmp_path: Path) -> None:
    commit_batch(str(tmp_path), "1", [_stage(tmp_path, "0.jsonl", [{"result_id": "a", "n": 1}])])
    commit_batch(
        str(tmp_path),
        "2",
        [_stage(tmp_path, "0.jsonl", [{"result_id": "a", "n": 2}, {"result_id": "b", "n": 3}])],
    )
    # A part file without a marker (crash before the marker) is invisible.
    (tmp_path / "part-3-00000.jsonl").write_text('{"result_id": "c"}\n')
    assert [(r["result_id"], r["n"]) for r in read_results(tmp_path)] == [("a", 1), ("b", 3)]
    out = tmp_path / "all.jsonl"
    assert compact(tmp_path, out) == 2
    assert [json.loads(x)["result_id"] for x in out.read_text().splitlines()] == ["a", "b"]
    assert [m["rows"] for m in committed_markers(tmp_path)] == [1, 2]


def _pass_through(spark: Any, spool: Path) -> Any:
    return (
        spark.readStream.format("xscl-spool")
        .option("path", str(spool))
        .option("maxRecordsPerBatch", "8")
        .load()
        .selectExpr(
            "'Q' AS query",
            "substr(sha2(concat(stream, ':', docid), 256), 1, 32) AS result_id",
            "array(named_struct('stream', stream, 'docid', docid, 'ts', ts)) AS docs",
            "xml",
        )
    )


@pytest.mark.spark
def test_streaming_sink_survives_replay_without_duplicates(
    spark: Any, tmp_path: Path, spool_kit: Any
) -> None:
    spool, results, checkpoint = tmp_path / "spool", tmp_path / "results", tmp_path / "ck"
    docs = spool_kit.docs(20)
    spool_kit.fill(spool, docs)

    def run() -> None:
        query = (
            _pass_through(spark, spool)
            .writeStream.format("xscl-results")
            .option("path", str(results))
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(120)
        assert query.exception() is None

    run()
    lines_before = sorted(p.read_text() for p in results.glob("part-*"))
    # Crash after the sink committed batch 2 but before Spark logged it: batch 2 replays.
    (checkpoint / "commits" / "2").unlink()
    (checkpoint / "commits" / ".2.crc").unlink(missing_ok=True)
    run()
    assert sorted(p.read_text() for p in results.glob("part-*")) == lines_before
    records = list(read_results(results))
    assert len(records) == 20
    assert [r["docs"][0]["docid"] for r in records] == [d.docid for d in docs]
    assert records[1]["docs"][0]["ts"] == docs[1].ts  # RFC 3339, microseconds kept
    assert [m["batch"] for m in committed_markers(results)] == [f"{b:020d}" for b in range(3)]


@pytest.mark.spark
def test_batch_writes_append_and_overwrite(spark: Any, tmp_path: Path) -> None:
    rows = [("Q", f"r{i}", f"<result n='{i}'/>") for i in range(5)]
    frame = spark.createDataFrame(rows, "query STRING, result_id STRING, xml STRING")
    target = str(tmp_path / "out")
    frame.write.format("xscl-results").mode("append").save(target)
    frame.write.format("xscl-results").mode("append").save(target)  # same results again
    assert sorted(r["result_id"] for r in read_results(target)) == [f"r{i}" for i in range(5)]
    assert len(committed_markers(target)) == 2
    frame.limit(2).write.format("xscl-results").mode("overwrite").save(target)
    assert len(list(read_results(target))) == 2
    with pytest.raises(Exception, match="result_id"):
        frame.drop("result_id").write.format("xscl-results").mode("append").save(target)


def test_clear_staging_removes_what_a_crash_left(tmp_path: Path) -> None:
    from xscl.spark_plugin.results_sink import STAGING, clear_staging

    staging = tmp_path / STAGING
    staging.mkdir()
    (staging / "orphan.jsonl").write_text('{"result_id": "x"}\n', encoding="utf-8")
    assert clear_staging(tmp_path) == 1
    assert list(staging.iterdir()) == []
    assert clear_staging(tmp_path / "missing") == 0
