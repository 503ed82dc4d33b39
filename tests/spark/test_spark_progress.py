"""The progress listener: one line per micro-batch with docs, results, lag and state."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from xscl.spark_plugin.progress import (
    CommittedResults,
    ProgressPrinter,
    batch_progress,
    observe_results,
)


def test_batch_progress_parses_a_progress_object() -> None:
    figures = batch_progress(
        {
            "name": "serve",
            "batchId": 4,
            "numInputRows": 95,  # the job's source: one row per routed copy of a document
            "processedRowsPerSecond": 39.6,
            "durationMs": {"triggerExecution": 2400},
            "eventTime": {"watermark": "2006-06-01T10:00:00.000Z"},
            "stateOperators": [
                {"numRowsTotal": 7, "memoryUsedBytes": 100},
                {"numRowsTotal": 3, "memoryUsedBytes": 50},
            ],
            "sources": [
                {
                    "startOffset": '{"offset":10}',
                    "endOffset": '{"offset":40}',
                    "latestOffset": '{"offset":55}',
                }
            ],
            "sink": {"numOutputRows": -1},
            "observedMetrics": {"xscl": {"results": 9}},
        }
    )
    assert (figures.documents, figures.results, figures.lag) == (30, 9, 15)  # 40 - 10 records
    assert (figures.state_rows, figures.state_bytes) == (10, 150)
    assert figures.line() == (
        "[serve] batch 4: 30 docs, 9 results, 12.5 docs/s, 2400 ms, "
        "watermark 2006-06-01T10:00:00.000Z, lag 15, state 10 rows / 150 bytes"
    )
    unknown = batch_progress({"batchId": 0, "sources": [{"endOffset": None}]})
    assert (unknown.results, unknown.lag, unknown.watermark) == (None, None, None)


@pytest.mark.spark
def test_listener_reports_each_micro_batch(spark: Any, tmp_path: Path, spool_kit: Any) -> None:
    spool_kit.fill(tmp_path / "spool", spool_kit.docs(20))
    lines: list[str] = []
    printer = ProgressPrinter(lines.append)
    spark.streams.addListener(printer)
    try:
        docs = (
            spark.readStream.format("xscl-spool")
            .option("path", str(tmp_path / "spool"))
            .option("maxRecordsPerBatch", "8")
            .load()
            .withWatermark("ts", "1 hour")
            .dropDuplicates(["stream", "docid"])
        )
        results = observe_results(docs.where("offset % 2 = 0"))
        query = (
            results.writeStream.format("noop")
            .queryName("progress_test")
            .option("checkpointLocation", str(tmp_path / "ck"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(120)
        assert query.exception() is None
        assert printer.wait_for(3, timeout=30)
    finally:
        spark.streams.removeListener(printer)
    with_data = [b for b in printer.batches if b.documents]
    assert [b.documents for b in with_data] == [8, 8, 4]
    assert [b.results for b in with_data] == [4, 4, 2]
    assert [b.lag for b in with_data] == [12, 4, 0]
    assert with_data[-1].state_rows == 20
    assert with_data[-1].watermark is not None
    assert all(line.startswith("[progress_test] batch ") for line in lines)


def test_results_come_from_the_committed_marker(tmp_path: Path) -> None:
    class _Event:
        class progress:  # shaped like Spark's event
            json = (
                '{"name": "serve", "batchId": 2, "numInputRows": 5, "sink": {"numOutputRows": 9},'
                ' "stateOperators": [{"numRowsTotal": 42, "memoryUsedBytes": 8192}]}'
            )

    commits = tmp_path / "_commits"
    commits.mkdir()
    (commits / f"{2:020d}.json").write_text('{"batch": "2", "parts": [], "rows": 3}')
    lines: list[str] = []
    printer = ProgressPrinter(lines.append, results=CommittedResults(tmp_path))
    printer.onQueryProgress(_Event())
    assert lines == [
        "[serve] batch 2: 5 docs, 3 results, 0.0 docs/s, 0 ms, "
        "watermark -, lag -, state 42 rows / 8192 bytes"
    ]
    assert CommittedResults(tmp_path).get(3) is None  # not committed (yet)
    only_cel = ProgressPrinter(lines.append, results=CommittedResults(tmp_path), query="serve.cel")
    only_cel.onQueryProgress(_Event())  # the XSCL query's batch: not this printer's
    assert len(lines) == 1 and not only_cel.batches


@pytest.mark.spark
def test_status_figures_are_gauges_of_sparks_metrics_system(spark: Any) -> None:
    from xscl.service.pair.status import JobStatus
    from xscl.spark_plugin.pair.metrics import (
        GAUGES,
        SOURCE_NAME,
        metrics_system,
        register_status_source,
    )

    reads: list[float] = []

    def read() -> JobStatus:
        reads.append(time.monotonic())
        primary = {"pid": 1, "host": "h", "epoch": 3, "holder": "x", "expires": 0.0,
                   "live": True}
        return JobStatus("job", primary, [{"pid": 2}], 7, 40, 55, 15, 2, 12)

    register_status_source(spark, read)
    register_status_source(spark, read)  # a second job of the process replaces the first
    sources = metrics_system(spark).getSourcesByName(SOURCE_NAME)
    assert sources.size() == 1
    source = sources.apply(0)
    gauges = source.metricRegistry().getGauges()
    got = {name: gauges.get(name).getValue() for name in GAUGES}
    assert got == {"epoch": 3, "standbys": 1, "last_batch": 7, "committed_offset": 40,
                   "spool_head": 55, "lag": 15, "published_lag": 2, "results": 12}
    assert len(reads) == 1  # one read of the home serves every gauge for a second


def test_the_listener_prints_no_failure_the_command_tells_it() -> None:
    """Spark's text of a failed query is pages long (traces, the plan); ``xscl serve``
    tells the failure in one line itself (``serve.query_failure``)."""

    class _Terminated:
        id = "q-1"
        exception = "java.io.IOException: No space left on device\n\tat a.b(C.java:1)\n" * 40

    lines: list[str] = []
    printer = ProgressPrinter(lines.append)
    printer.onQueryTerminated(_Terminated())
    assert lines == [] and printer.terminated.is_set()
