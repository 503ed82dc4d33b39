"""The streaming job's entry point: ``python -m xscl.spark_plugin.submit`` or spark-submit.

    spark-submit --master local[2] xscl/spark_plugin/submit.py \\
        --queries queries.xscl --spool xscl-data/spool --home xscl-data [--once]

``xscl-spool`` micro-batches (exact offsets, Spark checkpoint under
``HOME/checkpoints/NAME``) -> ``foreachBatch`` with ``pipeline.EnginePipeline``
(subscriptions from ``HOME/registry/NAME``, Stage 1 on the executors, the shared join
processor on the driver) -> result records committed idempotently by batch id under
``HOME/results/NAME``, dead letters under ``HOME/results/NAME/deadletters``, one Atom
feed per query under ``HOME/results/NAME/feeds``, and one progress line per
micro-batch. ``--queries`` seeds an empty registry; ``xscl subscribe`` /
``xscl unsubscribe`` change it while the job runs.

Ship the package installed or on ``PYTHONPATH`` on every node: ``--py-files`` does not
reach the Python process that plans the ``xscl-spool`` source (DESIGN.md).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xscl.connectors.durable import write_atomically
from xscl.spark_plugin.engine_snapshot import SnapshotStore
from xscl.spark_plugin.job_args import add_job_arguments
from xscl.spark_plugin.join_state import JOIN_STATE_FILE, JoinStateStore
from xscl.spark_plugin.pipeline import EnginePipeline, jsonl
from xscl.spark_plugin.progress import BatchProgress
from xscl.spark_plugin.results_sink import count_results, read_results
from xscl.spark_plugin.subscriptions import SubscriptionError, SubscriptionLog

if TYPE_CHECKING:
    from xscl.engine.local import EngineStats


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
    #: from the streaming query's start until it stopped (counting results is after)
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
    from xscl.spark_plugin.session import XsclHome

    lateness = None
    if args.allowed_lateness is not None:
        try:
            lateness = parse_duration(args.allowed_lateness)
        except ValueError as exc:
            print(f"--allowed-lateness: {exc}", file=sys.stderr)
            return JobReport(2)
    home = XsclHome(Path(args.home).resolve())
    log = SubscriptionLog(home.registry / args.name)
    if args.queries and not log.versions():
        # subscribe parses and validates the file (once: load_queries took 16.7 s at 100k)
        try:
            log.subscribe(Path(args.queries).read_text(encoding="utf-8"), source=args.queries)
        except SubscriptionError as exc:
            print(f"xscl: {exc}", file=sys.stderr)
            print_errors(exc.errors, source=args.queries)
            return JobReport(2)
    elif args.queries:
        loaded = load_queries(args.queries)
        if loaded.errors:
            print_errors(loaded.errors, source=args.queries)
            return JobReport(2)
        if set(log.current()) != {q.qid for q in loaded.queries}:
            print(
                f"xscl: the job's registry {log.folder} already holds other subscriptions; "
                "--queries is ignored (use 'xscl subscribe' / 'xscl unsubscribe')",
                file=sys.stderr,
            )
    elif not log.versions():
        print(
            f"xscl: no queries: give --queries FILE or 'xscl subscribe FILE --home {args.home} "
            f"--name {args.name}' first",
            file=sys.stderr,
        )
        return JobReport(2)
    from xscl.spark_plugin.progress import ProgressPrinter
    from xscl.spark_plugin.session import build_session

    spool = Path(args.spool).resolve() if args.spool else home.spool
    output = home.results / args.name
    print(f"xscl {xscl.__version__} from {Path(xscl.__file__).parent}", file=sys.stderr)
    spark = build_session(args.master, f"xscl-{args.name}", home=home.root)
    pipeline = EnginePipeline(
        (),
        spool,
        output,
        subscriptions=log,
        snapshots=SnapshotStore(home.state / args.name) if args.join_state == "memory" else None,
        snapshot_seconds=args.snapshot_seconds,
        join_state=(
            JoinStateStore(home.state / args.name / JOIN_STATE_FILE)
            if args.join_state == "disk"
            else None
        ),
        hold_bytes=max(0, args.hold_mb) * 2**20,
        allowed_lateness_micros=lateness,
        feed_entries=args.feed_entries,
        results_format=args.results_format,
    )
    printer = ProgressPrinter(
        None if args.quiet else _stderr_line,
        results=pipeline.results_by_batch,
        job=pipeline.figures_by_batch,
    )
    spark.streams.addListener(printer)
    reader = (
        spark.readStream.format("xscl-spool")
        .option("path", str(spool))
        .option("partitionsPerBatch", str(spark.sparkContext.defaultParallelism))
    )
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
        if pipeline.join_state is not None:
            pipeline.join_state.close()
    report = JobReport(
        0,
        documents=pipeline.documents,
        warmed_up=pipeline.warmed_up,
        seconds=time.perf_counter() - started,
        batches=list(printer.batches),
        engine_stats=pipeline.engine.stats,
    )
    if query.exception() is not None:
        print(f"xscl: the streaming query failed: {query.exception()}", file=sys.stderr)
        report.exit_code = 1
        return report
    if args.output:
        records = sorted(read_results(output), key=lambda r: (r["query"], r["result_id"]))
        write_atomically(Path(args.output), jsonl(records))
        total = len(records)
    else:
        total = count_results(output)
    restored = (
        "" if pipeline.restored_from is None else f" after the snapshot at {pipeline.restored_from}"
    )
    print(
        f"xscl: {pipeline.documents} documents this run (+{pipeline.warmed_up} replayed to "
        f"rebuild state{restored}), {total} results in "
        f"{output} (job {report.seconds:.1f} s)",
        file=sys.stderr,
    )
    report.results = total
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
