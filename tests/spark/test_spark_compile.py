"""The compile job (``compiled.spark_job``): the registry's texts compiled on the executors,
each subscribe event once."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from xscl.service.compiled import table
from xscl.service.compiled.sources import FromTable, FromTexts
from xscl.service.compiled.table import compiled_folder
from xscl.service.subscriptions import SubscriptionLog
from xscl.spark_plugin import compile_job as spark_job
from xscl.spark_plugin.worker_daemon import COMPILE_ENV


def _queries(first: int, count: int) -> str:
    return "".join(
        f"Q{i}: S//item->i[./a->x] JOIN {{x = y, {i}s}} T//entry[./b{i % 7}->y];\n"
        for i in range(first, first + count)
    )


def test_the_job_compiles_each_event_once_in_parts(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 30 queries in parts of 10, at most one per core: two parts, each yielded in
    # batches of 4 (a task holds a batch, not its part)
    monkeypatch.setattr(spark_job, "QUERIES_PER_PART", 10)
    monkeypatch.setattr(spark_job, "QUERIES_PER_BATCH", 4)
    monkeypatch.setattr(table, "ROWS_PER_BATCH", 3)  # and read back 3 rows at a time
    log = SubscriptionLog(tmp_path)
    log.subscribe(_queries(0, 30), source="a.xscl")
    log.unsubscribe(["Q3"])
    assert [(p.event, p.part, p.parts) for p in spark_job.pending_parts(tmp_path, 2)] == [
        (1, 0, 2),
        (1, 1, 2),
    ]
    assert spark_job.compile_registry(spark, tmp_path) == [1]
    # its tasks ran in a daemon of their own (which builds no subscriptions); the mark
    # is gone, so the streaming job's daemon is another, built from the table
    assert COMPILE_ENV not in spark.sparkContext.environment
    assert spark_job.compile_registry(spark, tmp_path) == []  # a restart compiles nothing
    log.subscribe(_queries(30, 5), source="b.xscl")
    assert spark_job.compile_registry(spark, tmp_path) == [3]  # only the new event
    assert not compiled_folder(tmp_path, 2).exists()  # an unsubscribe needs no rows
    assert sorted(p.name for p in (tmp_path / "compiled").iterdir()) == ["event=1", "event=3"]
    for version in (1, 3):
        event = log.event(version)
        assert list(FromTable(tmp_path).compiled(event)) == list(FromTexts().compiled(event))
