"""The streaming job's entry point: ``python -m xscl.spark_plugin.submit`` or spark-submit.

    spark-submit --master local[2] xscl/spark_plugin/submit.py \\
        --queries queries.xscl --spool xscl-data/spool --home xscl-data [--once]

Pipeline (interim, until the Spark-native value-join plan of DESIGN.md lands):
``xscl-spool`` micro-batches (exact offsets, Spark checkpoint under
``HOME/checkpoints/NAME``) -> ``foreachBatch`` on the **driver**, which feeds the
batch, in offset order, to one ``xscl.engine.LocalEngine`` (Stage 1 + the shared join
processor) -> result records committed idempotently by batch id in the
``xscl-results`` layout under ``HOME/results/NAME`` (``results_sink.commit_batch``),
dead letters under ``HOME/results/NAME/deadletters``, one Atom feed per query under
``HOME/results/NAME/feeds``, and one progress line per micro-batch.

Exactly once across restarts: the engine's state lives in the driver's memory, so a
(re)started driver first rebuilds it by replaying the spool below the first batch it
is given, discarding those results: they were all committed before (the sink commits
before Spark logs the batch). A replayed batch finds its commit marker and writes
nothing new. The engine is deterministic in arrival (= offset) order, so the result
set equals a failure-free run. The cost is a warm-up proportional to the spool and
state bounded by driver memory: the distributed plan replaces this.

Ship the package installed or on ``PYTHONPATH`` on every node: ``--py-files`` does not
reach the Python process that plans the ``xscl-spool`` source (DESIGN.md).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xscl.spark_plugin.atom import AtomFeedWriter
from xscl.spark_plugin.job_args import DEFAULT_FEED_ENTRIES, add_job_arguments
from xscl.spark_plugin.progress import BatchProgress
from xscl.spark_plugin.results_sink import (
    STAGING,
    StagedPart,
    commit_batch,
    read_results,
    write_atomically,
)

if TYPE_CHECKING:
    from xscl.engine.local import EngineStats


class DriverEnginePipeline:
    """The ``foreachBatch`` function: one ``LocalEngine`` fed in offset order (driver)."""

    def __init__(
        self,
        queries: Sequence[Any],
        spool: str | Path,
        output: str | Path,
        *,
        allowed_lateness_micros: int | None = None,
        feed_entries: int = DEFAULT_FEED_ENTRIES,
    ) -> None:
        from xscl.engine import LocalEngine

        self.engine = LocalEngine(queries, allowed_lateness_micros=allowed_lateness_micros)
        self.spool = Path(spool)
        self.output = Path(output)
        self.feeds = AtomFeedWriter(self.output / "feeds", max_entries=feed_entries)
        self.next_offset: int | None = None
        self.results_by_batch: dict[int, int] = {}
        self.warmed_up = 0
        self.documents = 0

    def warm_up(self, below: int) -> None:
        """Rebuild the engine's state from spool records ``[0, below)`` (no output)."""
        from xscl.connectors.spool import SpoolReader

        for _offset, doc in SpoolReader(self.spool).iter_range(0, below):
            self.engine.process_one(doc.stream, doc.docid, doc.ts_micros, doc.xml)
        self.warmed_up = below
        self.next_offset = below

    def __call__(self, batch: Any, batch_id: int) -> None:
        """Process one micro-batch (driver, once per batch and replay)."""
        # Sorted here, not with orderBy: a range sort samples (re-reads) the source.
        rows = sorted(
            batch.selectExpr("offset", "stream", "docid", "unix_micros(ts) AS ts", "xml").collect(),
            key=lambda row: row.offset,
        )
        if not rows:
            self._commit(batch_id, [], [])
            return
        if self.next_offset is None:
            self.warm_up(rows[0].offset)
        if rows[0].offset != self.next_offset:
            raise RuntimeError(
                f"batch {batch_id} starts at spool offset {rows[0].offset}, "
                f"expected {self.next_offset}: the checkpoint and the spool disagree"
            )
        records: list[dict[str, Any]] = []
        dead: list[dict[str, Any]] = []
        for row in rows:
            before = len(self.engine.stats.rejections)
            for record in self.engine.process_one(row.stream, row.docid, row.ts, row.xml):
                records.append(record.to_json_dict())
            for rejected in self.engine.stats.rejections[before:]:
                dead.append(
                    {
                        "offset": row.offset,
                        "stream": rejected.stream,
                        "docid": rejected.docid,
                        "reason": rejected.reason,
                        "code": rejected.code,
                    }
                )
        self.next_offset = rows[-1].offset + 1
        self.documents += len(rows)
        self._commit(batch_id, records, dead)

    def _commit(
        self, batch_id: int, records: list[dict[str, Any]], dead: list[dict[str, Any]]
    ) -> None:
        name = f"{batch_id:020d}"
        if dead:
            folder = self.output / "deadletters"
            folder.mkdir(parents=True, exist_ok=True)
            write_atomically(folder / f"{name}.jsonl", _jsonl(dead))
        parts = []
        if records:
            staged = self.output / STAGING / f"{uuid.uuid4().hex}.jsonl"
            staged.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(staged, _jsonl(records))
            parts.append(StagedPart(0, str(staged), len(records)))
        commit_batch(str(self.output), name, parts)
        if records:
            self.feeds.update(records)
        self.results_by_batch[batch_id] = len(records)


def _jsonl(items: list[dict[str, Any]]) -> bytes:
    text = "".join(json.dumps(i, ensure_ascii=False, separators=(",", ":")) + "\n" for i in items)
    return text.encode("utf-8")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="xscl.spark_plugin.submit",
        description="Run XSCL queries continuously over a spool with Spark Structured Streaming.",
    )
    add_job_arguments(parser)
    return parser


@dataclass
class JobReport:
    """What one run of the job did (driver): for ``xscl serve``, tests and benchmarks."""

    exit_code: int
    #: documents processed this run (not counting the warm-up replay)
    documents: int = 0
    #: spool records replayed to rebuild the state after a restart
    warmed_up: int = 0
    #: results in the results directory at the end (all runs)
    results: int = 0
    seconds: float = 0.0
    #: one entry per micro-batch of this run, from the ``StreamingQueryListener``
    batches: list[BatchProgress] = field(default_factory=list)
    engine_stats: EngineStats | None = None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the job; exit 0 when it ends normally, 2 on bad queries or arguments."""
    return run(build_parser().parse_args(argv))


def run(args: argparse.Namespace) -> int:
    """Run the job with parsed options (``xscl serve`` calls this); the exit code."""
    return run_job(args).exit_code


def run_job(args: argparse.Namespace) -> JobReport:
    """Run the job with parsed options (driver); what it did."""
    import xscl
    from xscl.cli.common import load_queries, parse_duration, print_errors

    lateness = None
    if args.allowed_lateness is not None:
        try:
            lateness = parse_duration(args.allowed_lateness)
        except ValueError as exc:
            print(f"--allowed-lateness: {exc}", file=sys.stderr)
            return JobReport(2)
    loaded = load_queries(args.queries)
    if loaded.errors:
        print_errors(loaded.errors, source=args.queries)
        return JobReport(2)
    from xscl.spark_plugin.progress import ProgressPrinter
    from xscl.spark_plugin.session import XsclHome, build_session

    home = XsclHome(Path(args.home).resolve())
    spool = Path(args.spool).resolve() if args.spool else home.spool
    output = home.results / args.name
    print(f"xscl {xscl.__version__} from {Path(xscl.__file__).parent}", file=sys.stderr)
    spark = build_session(args.master, f"xscl-{args.name}", home=home.root)
    pipeline = DriverEnginePipeline(
        loaded.queries,
        spool,
        output,
        allowed_lateness_micros=lateness,
        feed_entries=args.feed_entries,
    )
    printer = ProgressPrinter(
        None if args.quiet else _stderr_line, results=pipeline.results_by_batch
    )
    spark.streams.addListener(printer)
    reader = spark.readStream.format("xscl-spool").option("path", str(spool))
    if args.max_records_per_batch:
        reader = reader.option("maxRecordsPerBatch", str(args.max_records_per_batch))
    writer = (
        reader.load()
        .writeStream.foreachBatch(pipeline)
        .queryName(args.name)
        .option("checkpointLocation", str(home.checkpoints / args.name))
    )
    if args.once:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{args.trigger_seconds} seconds")
    started = time.perf_counter()
    query = writer.start()
    try:
        query.awaitTermination()
    except KeyboardInterrupt:
        query.stop()
    finally:
        _drain_progress(spark, query, printer)
    report = JobReport(
        0,
        documents=pipeline.documents,
        warmed_up=pipeline.warmed_up,
        batches=list(printer.batches),
        engine_stats=pipeline.engine.stats,
    )
    if query.exception() is not None:
        print(f"xscl: the streaming query failed: {query.exception()}", file=sys.stderr)
        report.exit_code = 1
        return report
    total = sum(1 for _ in read_results(output))
    if args.output:
        records = sorted(read_results(output), key=lambda r: (r["query"], r["result_id"]))
        write_atomically(Path(args.output), _jsonl(records))
    print(
        f"xscl: {pipeline.documents} documents this run (+{pipeline.warmed_up} replayed to "
        f"rebuild state), {total} results in "
        f"{output} ({time.perf_counter() - started:.1f} s)",
        file=sys.stderr,
    )
    report.results = total
    report.seconds = time.perf_counter() - started
    return report


def _drain_progress(spark: Any, query: Any, printer: Any, timeout: float = 30.0) -> None:
    """Wait for the last batch's progress event (they are asynchronous), then detach.

    Without this the process may exit while Spark still calls the listener, which
    logs Py4J errors and loses the last progress line.
    """
    last = query.lastProgress
    if last is not None:
        batch_id = int(last["batchId"])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(b.batch_id >= batch_id for b in list(printer.batches)):
                break
            time.sleep(0.1)
    spark.streams.removeListener(printer)


def _stderr_line(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
