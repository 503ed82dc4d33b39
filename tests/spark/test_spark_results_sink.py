"""``xscl-results``: idempotent by batch id and result id, readable and compactable."""

from __future__ import annotations

import itertools
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xscl.engine.json_lines import JsonLineEncoder
from xscl.engine.output import ResultRecord
from xscl.errors import ResultsDirectoryError
from xscl.results.commit import StagedPart, commit_batch
from xscl.results.read import committed_markers, compact, count_results, read_results
from xscl.spark_plugin.results_sink import StagedMessage, staged


def _stage(root: Path, name: str, lines: list[dict[str, Any]]) -> StagedPart:
    staging = root / "_staging"
    staging.mkdir(parents=True, exist_ok=True)
    path = staging / name
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return StagedPart(int(name.split(".")[0]), str(path), len(lines))


def test_commit_is_idempotent_by_batch_id(tmp_path: Path) -> None:
    records = [{"query": "Q", "result_id": f"r{i}"} for i in range(4)]
    parts = [_stage(tmp_path, "0.jsonl", records[:2]), _stage(tmp_path, "1.jsonl", records[2:])]
    # what the tasks reported, as the driver's commit gets it (a task with no message too)
    messages = [*map(StagedMessage, parts), None]
    assert commit_batch(str(tmp_path), "00000000000000000007", staged(messages))
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
@pytest.mark.parametrize("part_format", ["jsonl", "parquet"])
def test_streaming_sink_survives_replay_without_duplicates(
    spark: Any, tmp_path: Path, spool_kit: Any, part_format: str
) -> None:
    spool, results, checkpoint = tmp_path / "spool", tmp_path / "results", tmp_path / "ck"
    docs = spool_kit.docs(20)
    spool_kit.fill(spool, docs)

    def run() -> None:
        query = (
            _pass_through(spark, spool)
            .writeStream.format("xscl-results")
            .option("path", str(results))
            .option("format", part_format)
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(120)
        assert query.exception() is None

    run()
    parts_before = sorted((p.name, p.read_bytes()) for p in results.glob("part-*"))
    assert {name.rsplit(".", 1)[1] for name, _ in parts_before} == {part_format}
    # Crash after the sink committed batch 2 but before Spark logged it: batch 2 replays.
    (checkpoint / "commits" / "2").unlink()
    (checkpoint / "commits" / ".2.crc").unlink(missing_ok=True)
    run()
    assert sorted((p.name, p.read_bytes()) for p in results.glob("part-*")) == parts_before
    assert not list((results / "_staging").iterdir())
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
    from xscl.results.commit import STAGING, clear_staging

    staging = tmp_path / STAGING
    staging.mkdir()
    (staging / "orphan.jsonl").write_text('{"result_id": "x"}\n', encoding="utf-8")
    assert clear_staging(tmp_path) == 1
    assert list(staging.iterdir()) == []
    assert clear_staging(tmp_path / "missing") == 0


_TYPED_COLUMNS = (
    "query STRING, result_id STRING, "
    "docs ARRAY<STRUCT<stream: STRING, docid: STRING, ts: TIMESTAMP>>, "
    "nodes MAP<STRING, STRING>, score DOUBLE, xml STRING"
)


@pytest.mark.spark
def test_parquet_parts_read_back_like_json_lines(spark: Any, tmp_path: Path) -> None:
    import datetime as dt

    moment = dt.datetime(2009, 5, 1, 12, 30, 0, 250, tzinfo=dt.timezone.utc)
    rows = [
        (
            "Q",
            f"r{i}",
            [("feeds", f"d{i}", moment + dt.timedelta(days=i))],
            {"x": f"v{i}"},
            i / 4,
            f"<result n='{i}'/>",
        )
        for i in range(6)
    ]
    rows.append(("Q", "r0", [], {}, None, None))  # a repeated result id: dropped
    frame = spark.createDataFrame(rows, _TYPED_COLUMNS).repartition(2)
    as_json, as_parquet = str(tmp_path / "jsonl"), str(tmp_path / "parquet")
    frame.write.format("xscl-results").mode("append").save(as_json)
    frame.write.format("xscl-results").option("format", "parquet").mode("append").save(as_parquet)
    by_id = {r["result_id"]: r for r in read_results(as_json)}
    assert by_id == {r["result_id"]: r for r in read_results(as_parquet)}
    assert len(by_id) == 6 and by_id["r1"]["nodes"] == {"x": "v1"}
    assert count_results(as_parquet) == count_results(as_json) == 6
    assert by_id["r2"]["docs"] == [
        {"stream": "feeds", "docid": "d2", "ts": "2009-05-03T12:30:00.000250Z"}
    ]
    parts = sorted(Path(as_parquet).glob("part-*.parquet"))
    assert parts and not list(Path(as_parquet).glob("part-*.jsonl"))
    # The parts are plain Parquet in the DataFrame's schema.
    table = spark.read.parquet(*map(str, parts))
    assert table.schema.simpleString() == frame.schema.simpleString()
    assert {row["result_id"] for row in table.collect()} == set(by_id)
    frame.limit(2).write.format("xscl-results").option("format", "parquet").mode("overwrite").save(
        as_parquet
    )
    assert len(list(read_results(as_parquet))) == 2
    assert not [p for p in parts if p.exists()]
    with pytest.raises(Exception, match="'format' is 'csv'; use one of jsonl, parquet"):
        frame.write.format("xscl-results").option("format", "csv").mode("append").save(as_parquet)


def test_staged_record_batches_drop_repeats_and_skip_empty_tasks(tmp_path: Path) -> None:
    import pyarrow as pa

    from xscl.results.parquet import stage_record_batches

    def batch(ids: list[str]) -> pa.RecordBatch:
        return pa.record_batch(
            {
                "result_id": ids,
                "stamp": pa.array([0] * len(ids), pa.timestamp("us", tz="UTC")),
                "tags": pa.array([[("k", "v")]] * len(ids), pa.map_(pa.string(), pa.string())),
            }
        )

    staged = stage_record_batches(
        str(tmp_path), [batch(["a", "b", "a"]), batch(["b"]), batch(["c"])]
    )
    assert staged.rows == 3
    assert stage_record_batches(str(tmp_path), [batch([])]) == StagedPart(0, None, 0)
    assert commit_batch(str(tmp_path), "1", [staged])
    assert list(read_results(tmp_path)) == [
        {"result_id": i, "stamp": "1970-01-01T00:00:00Z", "tags": {"k": "v"}} for i in "abc"
    ]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    qids=st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=8),
    ids=st.lists(st.text("0123456789abcdef", min_size=1, max_size=32), min_size=1, max_size=8),
)
def test_count_reads_result_ids_from_the_lines_start(
    tmp_path: Path, qids: list[str], ids: list[str]
) -> None:
    """``count_results`` reads a JSON line's result id from its start (quotes, backslashes
    and any text in the query id); it counts what ``read_results`` yields."""
    encoder = JsonLineEncoder()
    root = tmp_path / f"r{uuid.uuid4().hex}"
    (root / "_staging").mkdir(parents=True)
    staged = root / "_staging" / "0.jsonl"
    records = [
        ResultRecord(qid, rid, (("S", "d", 0),), (), (("x", '"v\\'),), 0, 0, built_xml="<r/>")
        for qid, rid in itertools.product(qids, ids)
    ]
    staged.write_bytes(b"".join(encoder.encode(r) for r in records))
    commit_batch(str(root), "1", [StagedPart(0, str(staged), len(records))])
    assert count_results(root) == len(list(read_results(root))) == len(set(ids))


def test_count_parses_other_lines_whole_and_rejects_broken_ones(tmp_path: Path) -> None:
    commit_batch(
        str(tmp_path),
        "1",
        [_stage(tmp_path, "0.jsonl", [{"result_id": "a", "query": "Q"}, {"result_id": "b"}])],
    )
    assert count_results(tmp_path) == 2
    part = next(tmp_path.glob("part-*.jsonl"))
    part.write_text(part.read_text() + '{"query":"Q","result_id":"c","xml":"<r/>\n')
    with pytest.raises(ResultsDirectoryError, match=r"part-.*:3 is not a JSON record"):
        count_results(tmp_path)
