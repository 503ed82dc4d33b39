"""``xscl-spool``: exact offsets, backfills, limits, and byte-identical replay."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path
from typing import Any

import pytest

from xscl.errors import DataSourceOptionError
from xscl.spark_plugin.spool_source import SpoolOptions, read_range, split_range

pytestmark = pytest.mark.spark


def test_split_range_covers_exactly() -> None:
    ranges = split_range(3, 26, 10)
    assert [(r.start, r.end) for r in ranges] == [(3, 13), (13, 23), (23, 26)]
    assert split_range(5, 5, 10) == []


def test_options_are_validated() -> None:
    with pytest.raises(DataSourceOptionError, match=r"XSCL-S002.*path"):
        SpoolOptions.parse({})
    with pytest.raises(DataSourceOptionError, match="startOffset"):
        SpoolOptions.parse({"path": "x", "startOffset": "yesterday"})
    with pytest.raises(DataSourceOptionError, match="maxRecordsPerBatch"):
        SpoolOptions.parse({"path": "x", "maxRecordsPerBatch": "0"})


def test_read_range_is_exact_and_arrow_typed(tmp_path: Path, spool_kit: Any) -> None:
    docs = spool_kit.docs(5)
    spool_kit.fill(tmp_path / "spool", docs)
    batches = list(read_range(str(tmp_path / "spool"), 1, 4))
    table = batches[0].to_pydict()
    assert table["offset"] == [1, 2, 3]
    assert table["docid"] == [d.docid for d in docs[1:4]]
    assert str(batches[0].schema.field("ts").type) == "timestamp[us, tz=UTC]"
    with pytest.raises(OSError, match="XSCL-S003"):
        list(read_range(str(tmp_path / "spool"), 3, 9))


def test_batch_backfill_reads_a_range(spark: Any, tmp_path: Path, spool_kit: Any) -> None:
    docs = spool_kit.docs(25)
    spool_kit.fill(tmp_path / "spool", docs)
    df = (
        spark.read.format("xscl-spool")
        .option("path", str(tmp_path / "spool"))
        .option("startOffset", "4")
        .option("endOffset", "21")
        .option("maxRecordsPerBatch", "5")
        .load()
    )
    assert df.schema.simpleString() == (
        "struct<offset:bigint,stream:string,docid:string,ts:timestamp,xml:string,"
        "newest_before:bigint,version:int>"
    )
    assert df.rdd.getNumPartitions() == 4
    rows = sorted(df.collect(), key=lambda r: r.offset)
    assert [r.offset for r in rows] == list(range(4, 21))
    assert [r.xml for r in rows] == [d.xml for d in docs[4:21]]
    micros = [
        int((r.ts.replace(tzinfo=dt.timezone.utc) - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc))
            / dt.timedelta(microseconds=1))
        for r in rows
    ]
    assert micros == [spool_kit.base_ts + i * 1_000_001 for i in range(4, 21)]


def _run_capture(spark: Any, spool: Path, checkpoint: Path, captured: dict[int, Any]) -> None:
    def keep(batch: Any, batch_id: int) -> None:
        captured[batch_id] = [tuple(r) for r in batch.orderBy("offset").collect()]

    query = (
        spark.readStream.format("xscl-spool")
        .option("path", str(spool))
        .option("maxRecordsPerBatch", "10")
        .option("recordsPerPartition", "4")
        .load()
        .writeStream.foreachBatch(keep)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None


def test_stream_micro_batches_and_byte_identical_replay(
    spark: Any, tmp_path: Path, spool_kit: Any
) -> None:
    spool, checkpoint = tmp_path / "spool", tmp_path / "ck"
    docs = spool_kit.docs(25)
    spool_kit.fill(spool, docs)
    first: dict[int, Any] = {}
    _run_capture(spark, spool, checkpoint, first)
    assert sorted(first) == [0, 1, 2]
    assert [len(first[b]) for b in (0, 1, 2)] == [10, 10, 5]
    assert [row[0] for b in (0, 1, 2) for row in first[b]] == list(range(25))

    # Forget that batch 2 was committed: Spark must replay it at the same offsets.
    (checkpoint / "commits" / "2").unlink()
    (checkpoint / "commits" / ".2.crc").unlink(missing_ok=True)
    spool_kit.fill(spool, spool_kit.docs(3, start=25))  # new data must not leak into the replay
    second: dict[int, Any] = {}
    _run_capture(spark, spool, checkpoint, second)
    assert second[2] == first[2]
    assert [row[0] for row in second[3]] == [25, 26, 27]
    shutil.rmtree(checkpoint)
