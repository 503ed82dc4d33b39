"""Parquet result parts hold the same records as JSON Lines, under the same commit protocol."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from tests.profiles import examples
from xscl.engine import ResultRecord
from xscl.engine.json_lines import JsonLineEncoder
from xscl.errors import ResultsDirectoryError
from xscl.results import parquet as results_parquet
from xscl.results.commit import STAGING, StagedPart, clear_staging, commit_batch
from xscl.results.parquet import StagedParquet
from xscl.results.read import compact, count_results, read_results

TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
#: 2001-09-09 (1e15 us) plus up to a day, and a pre-1970 moment
TS = st.one_of(st.integers(10**15, 10**15 + 86_400_000_000), st.just(-1_500_000))


@st.composite
def result_records(draw: st.DrawFn) -> ResultRecord:
    """A record as the engine makes them: whole XML or ``SELECT *`` pieces, 1-3 docs."""
    docs = tuple(
        (draw(st.sampled_from(["S", "T"])), draw(TEXT), draw(TS))
        for _ in range(draw(st.integers(1, 3)))
    )
    names = draw(st.lists(st.sampled_from(["x", "y", "z1"]), unique=True, max_size=3))
    nodes = tuple((n, draw(st.sampled_from(["0", "3", "2/@id"]))) for n in sorted(names))
    values = tuple((n, draw(TEXT)) for n in sorted(names))
    common = {
        "query": draw(st.sampled_from(["Q1", "q2", "A.b-c"])),
        "result_id": draw(st.text("0123456789abcdef", min_size=32, max_size=32)),
        "docs": docs,
        "nodes": nodes,
        "values": values,
        "start_micros": min(t for _, _, t in docs),
        "end_micros": max(t for _, _, t in docs),
    }
    if draw(st.booleans()):
        return ResultRecord(**common, built_xml=draw(TEXT))
    return ResultRecord(**common, xml_parts=tuple(draw(st.lists(TEXT, min_size=1, max_size=4))))


def _commit(root: Path, name: str, records: list[ResultRecord]) -> None:
    with StagedParquet(root / STAGING) as staged:
        for record in records:
            staged.write(record)
    part = staged.part()
    commit_batch(str(root), name, [part] if part is not None else [])


@examples(40, suppress=list(HealthCheck))
@given(
    records=st.lists(result_records(), max_size=12, unique_by=lambda r: r.result_id),
    group_rows=st.sampled_from([1, 3, results_parquet.ROW_GROUP_ROWS]),
)
def test_parquet_parts_read_back_as_the_json_lines_records(
    records: list[ResultRecord], group_rows: int, tmp_path_factory: pytest.TempPathFactory
) -> None:
    root = tmp_path_factory.mktemp("pq")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(results_parquet, "ROW_GROUP_ROWS", group_rows)
        _commit(root, "00000000000000000000", records)
    encoder = JsonLineEncoder()
    expected = [json.loads(encoder.encode(r)) for r in records]
    assert list(read_results(root)) == expected  # same records, same order
    assert count_results(root) == len(records)
    parts = sorted(root.glob("part-*"))
    assert [p.suffix for p in parts] == ([".parquet"] if records else [])
    assert not any((root / STAGING).glob("*"))


def _record(n: int, xml: str = "<result/>") -> ResultRecord:
    return ResultRecord(
        "Q1", f"{n:032x}", (("S", f"d{n}", 10**15 + n),), (("x", "0"),), (("x", f"v{n}"),),
        10**15 + n, 10**15 + n, built_xml=xml,
    )  # fmt: skip


def test_a_batch_with_many_row_groups_keeps_order_and_bounds_the_buffer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyarrow.parquet as pq

    monkeypatch.setattr(results_parquet, "ROW_GROUP_CHARS", 2_000)
    records = [_record(n, "<result>" + "é" * 300 + "</result>") for n in range(40)]
    _commit(tmp_path, "00000000000000000003", records)
    (part,) = tmp_path.glob("part-00000000000000000003-00000.parquet")
    assert pq.ParquetFile(part).num_row_groups == 6  # 7 records of 317 chars, then 5
    assert [r["result_id"] for r in read_results(tmp_path)] == [r.result_id for r in records]


def test_a_replayed_batch_and_a_mixed_directory_stay_exactly_once(tmp_path: Path) -> None:
    _commit(tmp_path, "00000000000000000000", [_record(0), _record(1)])
    _commit(tmp_path, "00000000000000000000", [_record(0), _record(1)])  # replay: no-op
    # the job restarted with --results-format jsonl, and emits result 1 again
    staging = tmp_path / STAGING
    lines = JsonLineEncoder()
    (staging / "j.jsonl").write_bytes(lines.encode(_record(1)) + lines.encode(_record(2)))
    part = StagedPart(0, str(staging / "j.jsonl"), 2)
    commit_batch(str(tmp_path), "00000000000000000001", [part])
    assert [r["result_id"] for r in read_results(tmp_path)] == [
        _record(n).result_id for n in range(3)
    ]
    assert count_results(tmp_path) == 3  # result 1 in both formats counts once
    out = tmp_path / "all.jsonl"
    assert compact(tmp_path, out) == 3
    assert [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()] == [
        json.loads(lines.encode(_record(n))) for n in range(3)
    ]


def test_a_failed_batch_commits_nothing_and_its_staged_file_is_cleared(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), StagedParquet(tmp_path / STAGING) as staged:
        staged.write(_record(0))
        staged.write(_record(1))
        staged._flush()  # a row group is in the file already
        raise RuntimeError("the driver's batch failed")
    assert staged.path is not None and staged.path.exists()
    assert list(read_results(tmp_path)) == []
    assert clear_staging(tmp_path) == 1  # what the next start of the job does


def test_a_damaged_part_is_a_coded_error(tmp_path: Path) -> None:
    _commit(tmp_path, "00000000000000000000", [_record(0)])
    (part,) = tmp_path.glob("part-*.parquet")
    part.write_bytes(part.read_bytes()[:40])
    with pytest.raises(ResultsDirectoryError, match="not readable Parquet") as caught:
        list(read_results(tmp_path))
    assert caught.value.code == "XSCL-S004"
    with pytest.raises(ResultsDirectoryError, match="not readable Parquet"):
        count_results(tmp_path)


@pytest.mark.spark
def test_spark_reads_the_committed_parts_as_a_table(spark: Any, tmp_path: Path) -> None:
    records = [_record(n) for n in range(5)]
    _commit(tmp_path, "00000000000000000000", records[:3])
    _commit(tmp_path, "00000000000000000001", records[3:])
    frame = spark.read.parquet(str(tmp_path))  # _staging and _commits are skipped
    rows = frame.orderBy("result_id").collect()
    assert [r["result_id"] for r in rows] == [r.result_id for r in records]
    assert rows[0]["docs"][0]["docid"] == "d0"
    assert rows[0]["values"] == {"x": "v0"}
    assert frame.schema["docs"].dataType.elementType["ts"].dataType.typeName() == "timestamp"
