"""The streaming job's entry point: ``python -m xscl.spark_plugin.submit`` or spark-submit.

    spark-submit --master local[2] xscl/spark_plugin/submit.py \\
        --queries queries.xscl --spool xscl-data/spool --home xscl-data [--once]

The driver takes the job's lease or stands by until it lapses (``pair``: a second
instance is a standby), seeds the subscription registry (``HOME/registry/NAME``)
from ``--queries`` when it is empty, forks its epoch's folders from the last
committed batch (``pair.epochs``), builds the one Spark plan (``job.plan``) and waits:
Stage 1, the joins (state in Spark's RocksDB state store under
``HOME/checkpoints/NAME/e<epoch>``), result records, dead letters and Atom feeds all
run in executor tasks; the driver's commit checks the lease, renames the tasks' files
and writes one marker per micro-batch under ``HOME/results/NAME/e<epoch>``.
``xscl subscribe`` / ``xscl unsubscribe`` change the registry while the job runs.

Ship the package installed or on ``PYTHONPATH`` on every node: ``--py-files`` does not
reach the Python process that plans the ``xscl-spool`` source
(docs/architecture.md, "Spark").
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xscl.cli.job_args import add_job_arguments
from xscl.connectors.durable import write_atomically
from xscl.connectors.spool import read_head
from xscl.errors import ConnectorIOError, JavaNotFoundError, LeaseStoreError, SubscriptionError
from xscl.results.read import count_results, read_results
from xscl.service.subscriptions import SubscriptionLog
from xscl.spark_plugin.progress import BatchProgress, CommittedResults, parsed_progress

if TYPE_CHECKING:
    from xscl.spark_plugin.session import XsclHome


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
    #: spool records this run read (Spark's input rows)
    documents: int = 0
    #: results in the results directory at the end (all runs)
    results: int = 0
    #: from the streaming query's start until it stopped (counting results is after)
    seconds: float = 0.0
    #: one entry per micro-batch of this run, from the ``StreamingQueryListener``
    batches: list[BatchProgress] = field(default_factory=list)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the job; exit 0 when it ends normally, 2 on bad queries or arguments."""
    return run(build_parser().parse_args(argv))


def run(args: argparse.Namespace) -> int:
    """Run the job with parsed options (``xscl serve`` calls this); the exit code."""
    return run_job(args).exit_code


def run_job(args: argparse.Namespace) -> JobReport:
    """Run the job with parsed options (driver); what it did.

    Everything a user can get wrong is checked before Spark starts and said in one
    line: exit 2 for an unreadable or invalid ``--queries`` or a bad option, 1 for a
    ``--home`` or ``--output`` that cannot be written or a spool that cannot be read.
    Then the instance takes the job's lease or stands by (``_start``).
    """
    from xscl.cli.common import load_queries, parse_duration, print_errors
    from xscl.spark_plugin.session import XsclHome

    lateness = None
    if args.allowed_lateness is not None:
        try:
            lateness = parse_duration(args.allowed_lateness)
        except ValueError as exc:
            print(f"xscl serve: --allowed-lateness: {exc}", file=sys.stderr)
            return JobReport(2)
    text = None
    if args.queries:
        try:
            text = Path(args.queries).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            print(f"xscl serve: cannot read --queries {args.queries}: {_reason(exc)}",
                  file=sys.stderr)  # fmt: skip
            return JobReport(2)
    home = XsclHome(Path(args.home).resolve())
    problem = _unwritable(args)
    if problem is not None:
        print(f"xscl serve: {problem}", file=sys.stderr)
        return JobReport(1)
    log = SubscriptionLog(home.registry / args.name)
    if text is None and not log.versions():
        print(
            f"xscl serve: no queries: give --queries FILE or 'xscl subscribe FILE --home "
            f"{args.home} --name {args.name}' first",
            file=sys.stderr,
        )
        return JobReport(2)
    if text is not None and log.versions():
        # an empty registry is seeded by the primary (_run_primary): two instances
        # started at once must not both subscribe the file
        loaded = load_queries(args.queries)
        if loaded.errors:
            print_errors(loaded.errors, source=args.queries)
            return JobReport(2)
        if set(log.current()) != {q.qid for q in loaded.queries}:
            print(
                f"xscl serve: the job's registry {log.folder} already holds other "
                "subscriptions; --queries is ignored (use 'xscl subscribe' / 'xscl unsubscribe')",
                file=sys.stderr,
            )
    spool = Path(args.spool).resolve() if args.spool else home.spool
    try:
        waiting = read_head(spool)
    except OSError as exc:  # a ConnectorIOError too: a damaged HEAD
        print(f"xscl serve: cannot read the spool {spool}: {_reason(exc)}; give --spool "
              "the folder 'xscl poll --spool' fills", file=sys.stderr)  # fmt: skip
        return JobReport(1)
    if waiting == 0:
        print(f"xscl serve: nothing in the spool {spool}: fill it with `xscl poll --spool "
              f"{spool} FEED...`", file=sys.stderr)  # fmt: skip
    cel = None
    if getattr(args, "cel_queries", None):
        from xscl.spark_plugin.cel import serve as cel_serve

        xscl_queries = list(log.current().values()) if log.versions() else []
        if not xscl_queries and text is not None:
            xscl_queries = list(load_queries(args.queries).queries)
        cel = cel_serve.check(args.cel_queries, args.cel_reorder_slack, xscl_queries)
        if cel is None:
            return JobReport(2)
    try:
        return _start(args, home, log, spool, lateness, cel)
    except (JavaNotFoundError, LeaseStoreError) as exc:
        print(f"xscl serve: {exc}", file=sys.stderr)
        return JobReport(1)
    except OSError as exc:  # the home changed under us, the disk filled up, ...
        print(f"xscl serve: I/O error: {_reason(exc)} (--home {args.home}); {_HOME_ADVICE}",
              file=sys.stderr)  # fmt: skip
        return JobReport(1)


#: What to do about a home that cannot be written.
_HOME_ADVICE = "pass a --home you can write to"


def _compile_subscriptions(spark: Any, registry: str) -> None:
    """Compile the subscriptions not compiled yet, on the executors (driver, at start;
    ``compiled.spark_job``). Workers register from the texts what is not compiled, so a
    failure here only costs their start-up time."""
    from xscl.spark_plugin.compile_job import compile_registry

    started = time.perf_counter()
    try:
        events = compile_registry(spark, registry)
    except Exception as exc:  # an optimisation: the job runs from the texts
        print(f"xscl serve: compiling the subscriptions failed (workers register them "
              f"from their texts): {exc}", file=sys.stderr)  # fmt: skip
        return
    if events:
        seconds = time.perf_counter() - started
        print(f"xscl serve: compiled subscription event(s) {', '.join(map(str, events))} "
              f"on the executors in {seconds:.1f} s", file=sys.stderr)  # fmt: skip


def _unwritable(args: argparse.Namespace) -> str | None:
    """Why the job could not write its ``--home`` or ``--output``; None when it can."""
    from xscl.cli.common import OUTPUT_ADVICE, unwritable_file, unwritable_folder

    problem = unwritable_folder(args.home)
    if problem is not None:
        return f"cannot write --home {args.home}: {problem}; {_HOME_ADVICE}"
    if args.output:
        problem = unwritable_file(args.output)
        if problem is not None:
            return f"cannot write --output {args.output}: {problem}; {OUTPUT_ADVICE}"
    return None


def _reason(exc: BaseException) -> str:
    """One line for an error reading or writing a path."""
    from xscl.cli.common import os_error_reason

    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 text ({exc.reason} at byte {exc.start})"
    if isinstance(exc, OSError) and not isinstance(exc, ConnectorIOError):
        return os_error_reason(exc)
    return str(exc)


def _start(
    args: argparse.Namespace,
    home: XsclHome,
    log: SubscriptionLog,
    spool: Path,
    lateness: int | None,
    cel: Any = None,
) -> JobReport:
    """Take the job's lease or stand by until it lapses, then run as primary (driver).

    A standby starts Spark and keeps it warm while it waits (``pair.warm``); as primary
    the instance forks its epoch's folders from the last committed batch
    (``pair.epochs``) and runs the job there until it ends, or until another instance
    takes the lease over (exit ``EXIT_FENCED``).
    """
    from xscl.service.pair.epochs import newest_epoch
    from xscl.service.pair.lease import job_lease, pair_folder
    from xscl.service.pair.member import PairMember, Renewer, StandbyBoard

    lease = job_lease(
        args.lease, home.root, args.name, args.lease_seconds, args.lease_name,
        args.lease_namespace,
    )  # fmt: skip
    board = StandbyBoard(pair_folder(home.root, args.name) / "standbys")
    member = PairMember(
        lease, board, args.renew_seconds, floor=lambda: newest_epoch(home.root, args.name)
    )
    record = member.try_take()
    spark = None
    if record is None:  # a standby: Spark is started and kept warm while it waits
        from xscl.service.pair.epochs import EpochFolders
        from xscl.spark_plugin.pair.warm import StandbyWarmer

        spark = _session(args, home)
        scratch = home.tmp / f"standby-{lease.identity.holder}"
        plan = _job_plan(args, log, spool, lateness, EpochFolders(home.root, args.name, 0))
        warmer = StandbyWarmer(spark, plan, scratch)
        try:
            record = member.stand_by(warm=warmer)
        finally:
            warmer.stop()
        print(f"xscl serve: took the lease over at epoch {record.epoch}", file=sys.stderr)
    renewer = Renewer(lease, record.epoch, args.renew_seconds, _fenced_exit)
    renewer.start()
    try:
        report = _run_primary(args, home, log, spool, lateness, spark, lease, record.epoch, cel)
    finally:
        renewer.stop()
    if report.exit_code != EXIT_FENCED:
        lease.release(record.epoch)
    return report


#: Exit code of an instance fenced out by a newer epoch of its lease.
EXIT_FENCED = 3
#: Exit code of a job whose results folder could not be written (``XSCL-S023``): the
#: batch was not committed; restart once the folder is writable again.
EXIT_UNWRITABLE = 4
_UNWRITABLE = re.compile(r"XSCL-S023 [^\n]*")


def _fenced_exit(reason: str) -> None:
    """The lease was taken over: say so in one line and stop now (renewer thread)."""
    from xscl.errors import LeaseLostError

    print(
        f"xscl serve: {LeaseLostError.default_code} {reason}; this instance "
        f"(pid {os.getpid()}) stops: nothing it writes from now on is read",
        file=sys.stderr,
        flush=True,
    )
    sys.stdout.flush()
    os._exit(EXIT_FENCED)


def _session(args: argparse.Namespace, home: XsclHome) -> Any:
    import xscl
    from xscl.spark_plugin.session import build_session

    print(f"xscl {xscl.__version__} from {Path(xscl.__file__).parent}", file=sys.stderr)
    return build_session(args.master, f"xscl-{args.name}", home=home.root)


def _job_plan(
    args: argparse.Namespace, log: SubscriptionLog, spool: Path, lateness: int | None, folders: Any
) -> Any:
    """The job's plan over ``folders`` (an epoch's, ``pair.epochs``), without a fence."""
    from xscl.spark_plugin.job.plan import JobPlan

    return JobPlan(
        spool=str(spool),
        registry=str(log.folder),
        output=str(folders.results),
        checkpoint=str(folders.checkpoint),
        name=args.name,
        allowed_lateness=lateness,
        results_format=args.results_format,
        feed_entries=args.feed_entries,
        state_partitions=args.state_partitions,
        buckets=args.value_groups,
        hot_folder=str(folders.hot_values),
        salts=max(1, args.hot_salts),
        hot_threshold=max(1, args.hot_threshold),
        max_records_per_batch=args.max_records_per_batch,
        once=args.once,
        trigger_seconds=args.trigger_seconds,
        applied=str(folders.applied),
    )


def _start_cel(
    spark: Any,
    cel: Any,
    args: argparse.Namespace,
    home: XsclHome,
    epoch: int,
    log: SubscriptionLog,
    fence: str | None,
) -> Any:
    """Start the CEL query beside the XSCL one (``cel.serve``); say where it writes."""
    from xscl.events.event_folder import events_folder
    from xscl.spark_plugin.cel import serve as cel_serve

    query = cel_serve.start(spark, cel, args, home.root, epoch, log.folder, fence)
    print(
        f"xscl serve: CEL queries {cel.path} -> {home.root / 'results' / (args.name + '.cel')} "
        f"(events: {events_folder(home.root, args.name)})",
        file=sys.stderr,
    )
    return query


def _register_metrics(
    spark: Any, args: argparse.Namespace, home: XsclHome, spool: Path, lease: Any
) -> None:
    """``xscl status``'s figures as gauges of Spark's metrics system (``pair.metrics``)."""
    from xscl.service.pair.lease import pair_folder
    from xscl.service.pair.member import StandbyBoard
    from xscl.service.pair.status import job_status
    from xscl.spark_plugin.pair.metrics import register_status_source

    board = StandbyBoard(pair_folder(home.root, args.name) / "standbys")
    try:
        register_status_source(spark, lambda: job_status(home.root, args.name, lease, spool, board))
    except Exception as exc:  # metrics are a convenience: the job runs without them
        print(f"xscl serve: status metrics not registered: {exc}", file=sys.stderr)


def _run_primary(
    args: argparse.Namespace,
    home: XsclHome,
    log: SubscriptionLog,
    spool: Path,
    lateness: int | None,
    spark: Any,
    lease: Any,
    epoch: int,
    cel: Any = None,
) -> JobReport:
    """The job as the lease's holder at ``epoch`` (driver); it seeds an empty registry
    from ``--queries`` (only the lease's holder, so two instances never both do).

    ``cel`` (``cel.serve.CelServe``): the CEL query runs beside the XSCL one; with
    ``--once`` after it (so it reads every result the XSCL run committed)."""
    from xscl.cli.common import print_errors
    from xscl.errors import LegacyHomeError, OutputWriteError
    from xscl.service.pair.epochs import EpochFolders, start_epoch
    from xscl.spark_plugin.job.plan import start_job
    from xscl.spark_plugin.job.sink import fence_of, unwritable_as_error
    from xscl.spark_plugin.progress import ProgressPrinter

    if args.queries and not log.versions():
        # subscribe parses and validates the file (once: load_queries took 16.7 s at 100k)
        try:
            log.subscribe(Path(args.queries).read_text(encoding="utf-8"), source=args.queries)
        except SubscriptionError as exc:
            print(f"xscl serve: {exc}", file=sys.stderr)
            print_errors(exc.errors, source=args.queries)
            return JobReport(2)
        except OSError as exc:
            print(f"xscl serve: cannot write the job's registry {log.folder}: "
                  f"{_reason(exc)}; {_HOME_ADVICE}", file=sys.stderr)  # fmt: skip
            return JobReport(1)
    folders = EpochFolders(home.root, args.name, epoch)
    try:
        with unwritable_as_error(str(folders.results_root)):
            after = start_epoch(folders)
    except LegacyHomeError as exc:
        print(f"xscl serve: {exc}", file=sys.stderr)
        return JobReport(2)
    except OutputWriteError as exc:
        print(f"xscl serve: {exc}", file=sys.stderr)
        return JobReport(EXIT_UNWRITABLE)
    print(
        f"xscl serve: primary at epoch {epoch}, continuing after batch {after} "
        f"(checkpoint {folders.checkpoint})",
        file=sys.stderr,
    )
    output = folders.results
    if spark is None:
        spark = _session(args, home)
    plan = replace(
        _job_plan(args, log, spool, lateness, folders), fence=fence_of(lease.spec(), epoch)
    )
    printer = ProgressPrinter(
        None if args.quiet else _stderr_line, results=CommittedResults(output), query=plan.name
    )
    spark.streams.addListener(printer)
    _compile_subscriptions(spark, plan.registry)
    started = time.perf_counter()
    query = start_job(spark, plan)
    _register_metrics(spark, args, home, spool, lease)
    cel_query = None
    if cel is not None and not args.once:
        cel_query = _start_cel(spark, cel, args, home, epoch, log, plan.fence)
    try:
        query.awaitTermination()
        if cel is not None and args.once and query.exception() is None:
            cel_query = _start_cel(spark, cel, args, home, epoch, log, plan.fence)
            cel_query.awaitTermination()
    except KeyboardInterrupt:
        query.stop()
    except Exception:  # StreamingQueryException: reported from query.exception() below
        pass
    finally:
        if cel_query is not None:
            cel_query.stop()
        _drain_progress(spark, query, printer)
    if cel_query is not None and cel_query.exception() is not None:
        print(f"xscl serve: the CEL query failed: {cel_query.exception()}", file=sys.stderr)
        return JobReport(1)
    batches = list(printer.batches)
    report = JobReport(
        0,
        documents=sum(b.documents for b in batches),
        seconds=time.perf_counter() - started,
        batches=batches,
    )
    if query.exception() is not None:
        if not lease.holds(epoch):  # the sink's commit found a newer epoch
            from xscl.service.pair.lease import lost_message

            _fenced_exit(lost_message(epoch, lease.read()))
        unwritable = _UNWRITABLE.search(str(query.exception()))
        if unwritable is not None:
            print(f"xscl serve: {unwritable.group(0)}", file=sys.stderr)
            report.exit_code = EXIT_UNWRITABLE
            return report
        print(f"xscl serve: the streaming query failed: {query.exception()}", file=sys.stderr)
        report.exit_code = 1
        return report
    if args.output:
        records = sorted(
            read_results(folders.results_root), key=lambda r: (r["query"], r["result_id"])
        )
        write_atomically(Path(args.output), jsonl(records))
        total = len(records)
    else:
        total = count_results(folders.results_root)
    print(
        f"xscl: {report.documents} documents read this run; {total} results in total in "
        f"{folders.results_root} (job {report.seconds:.1f} s)",
        file=sys.stderr,
    )
    report.results = total
    return report


def _drain_progress(spark: Any, query: Any, printer: Any, timeout: float = 30.0) -> None:
    """Wait for the last batch's progress event and for the query's termination event
    (both are delivered asynchronously), then detach the listener.

    Without this the process may exit while Spark still calls the listener, which
    logs Py4J errors and loses the last progress line. A caught-up run has no batch
    with documents, so it only waits for the termination event (milliseconds).
    """
    deadline = time.monotonic() + timeout
    last = query.lastProgress
    if last is not None and parsed_progress(last).documents > 0:
        batch_id = int(last["batchId"])
        while time.monotonic() < deadline:
            if any(b.batch_id >= batch_id for b in list(printer.batches)):
                break
            time.sleep(0.1)
    printer.terminated.wait(max(0.0, min(10.0, deadline - time.monotonic())))
    spark.streams.removeListener(printer)


def jsonl(items: Sequence[dict[str, Any]]) -> bytes:
    """Compact JSON Lines, UTF-8."""
    text = "".join(json.dumps(i, ensure_ascii=False, separators=(",", ":")) + "\n" for i in items)
    return text.encode("utf-8")


def _stderr_line(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
