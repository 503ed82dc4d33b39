"""``xscl serve`` on Spark: the job's lease, its epoch, its one streaming query (driver).

The command line checks everything a user can get wrong before Spark starts and hands
this module one frozen ``ServeRequest`` (``xscl.cli.serve``). Then the instance takes
the job's lease or stands by until it lapses (``xscl.service.pair``: a second instance
is a standby), seeds the subscription registry (``HOME/registry/NAME``) from
``--queries`` when it is empty, forks its epoch's folders from the last committed batch
(``service.pair.epochs``), builds the one Spark plan (``job.plan``) and waits: Stage 1,
the joins (state in Spark's RocksDB state store under ``HOME/checkpoints/NAME/e<epoch>``),
result records, dead letters and Atom feeds all run in executor tasks; the driver's
commit checks the lease, renames the tasks' files and writes one marker per micro-batch
under ``HOME/results/NAME/e<epoch>``. ``xscl subscribe`` / ``xscl unsubscribe`` change
the registry while the job runs.

Where it runs: the driver, once per ``xscl serve`` (or spark-submit of ``submit.py``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from xscl.connectors.durable import write_atomically
from xscl.engine.groups.join_plans import DEFAULT_CACHE_MEMORY
from xscl.errors import SubscriptionError
from xscl.results.read import count_results, read_results
from xscl.service.subscriptions import SubscriptionLog
from xscl.spark_plugin.cel.serve import CelServe
from xscl.spark_plugin.progress import BatchProgress, CommittedResults, parsed_progress
from xscl.spark_plugin.session import STORAGE_UNWRITABLE, XsclHome


@dataclass(frozen=True)
class ServeRequest:
    """One checked ``xscl serve`` run: plain values only (``xscl.cli.serve`` builds it)."""

    home: XsclHome
    name: str
    spool: Path
    #: the queries file that seeds an empty registry (None: the registry's own)
    queries: str | None
    master: str | None = None
    once: bool = False
    quiet: bool = False
    #: with ``once``: where the result set is written at the end
    output: str | None = None
    allowed_lateness: int | None = None
    results_format: str = "jsonl"
    #: results of one match for many queries written once (``results.record_lines``)
    channels: bool = True
    feed_entries: int = 200
    #: where the feeds are served (``--feed-base-url``): their ``rel="self"`` links are
    #: ``URL/<query>.atom``; None: the stable ``HOME/results/NAME/feeds`` folder
    feed_base_url: str | None = None
    state_partitions: int | None = None
    value_groups: int | None = None
    hot_salts: int = 8
    hot_threshold: int = 500
    #: how a join group matches a keyed chain's last block (``groups.join_plans``)
    join_plan: str = "adaptive"
    cache_memory: int = DEFAULT_CACHE_MEMORY
    max_records_per_batch: int | None = None
    trigger_seconds: float = 1.0
    #: seconds between two looks at a running batch's stages (``stage_progress``)
    progress_seconds: float = 5.0
    lease: str = "file"
    lease_seconds: float = 3.0
    renew_seconds: float = 1.0
    lease_name: str | None = None
    lease_namespace: str | None = None
    cel: CelServe | None = None
    #: ``--fresh-workers``: auto, on or off (``worker_reuse``)
    fresh_workers: str = "auto"


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


def serve(request: ServeRequest) -> JobReport:
    """Take the job's lease or stand by until it lapses, then run as primary (driver).

    A standby starts Spark and keeps it warm while it waits (``pair.warm``); as primary
    the instance forks its epoch's folders from the last committed batch
    (``service.pair.epochs``) and runs the job there until it ends, or until another
    instance takes the lease over (exit ``EXIT_FENCED``).
    """
    from xscl.errors import JavaNotFoundError, LeaseStoreError

    try:
        return _start(request)
    except KeyboardInterrupt:  # before the lease was taken, or while standing by
        print("xscl serve: interrupted before the job started", file=sys.stderr)
        return JobReport(EXIT_INTERRUPTED)
    except (JavaNotFoundError, LeaseStoreError) as exc:
        print(f"xscl serve: {exc}", file=sys.stderr)
        return JobReport(1)
    except OSError as exc:  # the home changed under us, the disk filled up, ...
        from xscl.cli.common import os_error_reason
        from xscl.cli.serve import HOME_ADVICE

        print(f"xscl serve: I/O error: {os_error_reason(exc)} (--home {request.home.root}); "
              f"{HOME_ADVICE}", file=sys.stderr)  # fmt: skip
        return JobReport(1)


class StartUp:
    """Start-up progress on stderr (driver): one line as each phase begins (the Spark
    session, the registry, the compile job, the streaming query), none with --quiet."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.began = time.perf_counter()

    def phase(self, text: str) -> None:
        if not self.quiet:
            print(f"xscl serve: start-up: {text}", file=sys.stderr, flush=True)

    def seconds(self) -> float:
        """Seconds since the start-up began."""
        return time.perf_counter() - self.began


def _compile_subscriptions(spark: Any, registry: str, startup: StartUp) -> None:
    """Compile the subscriptions not compiled yet, on the executors (driver, at start;
    ``spark_plugin.compile_job``). Workers register from the texts what is not compiled, so a
    failure here only costs their start-up time."""
    from xscl.spark_plugin.compile_job import (
        COMPILE_MIN_QUERIES,
        compile_registry,
        pending_queries,
    )

    pending = pending_queries(registry)
    if pending < COMPILE_MIN_QUERIES:
        return  # each worker registers them from their text, faster than a Spark job
    startup.phase(
        f"compiling {pending:,} new subscriptions on the executors (a Spark job), so that "
        "each worker loads them ready-made instead of parsing every query's text"
    )
    try:
        compile_registry(spark, registry, COMPILE_MIN_QUERIES)
    except Exception as exc:  # an optimisation: the job runs from the texts
        print(f"xscl serve: compiling the subscriptions failed (workers register them "
              f"from their texts): {exc}", file=sys.stderr)  # fmt: skip


def _start(r: ServeRequest) -> JobReport:
    """``serve``, with the errors left to it."""
    from xscl.service.pair.epochs import newest_epoch
    from xscl.service.pair.lease import job_lease, pair_folder
    from xscl.service.pair.member import PairMember, Renewer, StandbyBoard

    home = r.home
    log = SubscriptionLog(home.registry / r.name)
    lease = job_lease(r.lease, home.root, r.name, r.lease_seconds, r.lease_name, r.lease_namespace)
    board = StandbyBoard(pair_folder(home.root, r.name) / "standbys")
    member = PairMember(
        lease, board, r.renew_seconds, floor=lambda: newest_epoch(home.root, r.name)
    )
    record = member.try_take()
    spark = None
    startup = StartUp(r.quiet)
    if record is None:  # a standby: Spark is started and kept warm while it waits
        from xscl.service.pair.epochs import EpochFolders
        from xscl.spark_plugin.pair.warm import StandbyWarmer

        spark = _session(r, startup, _subscription_count(log)[0])
        scratch = home.tmp / f"standby-{lease.identity.holder}"
        plan = _job_plan(r, log, EpochFolders(home.root, r.name, 0))
        warmer = StandbyWarmer(spark, plan, scratch)
        try:
            record = member.stand_by(warm=warmer)
        finally:
            warmer.stop()
        print(f"xscl serve: took the lease over at epoch {record.epoch}", file=sys.stderr)
        startup = StartUp(r.quiet)
    renewer = Renewer(lease, record.epoch, r.renew_seconds, _fenced_exit)
    renewer.start()
    try:
        with Interrupts() as interrupts:
            report = _run_primary(r, log, spark, lease, record.epoch, startup, interrupts)
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
_STORAGE = re.compile(STORAGE_UNWRITABLE)
#: Where Spark's text of a failed query goes on to its plan (never of use to a user).
_PLAN = "\n=== Streaming Query ==="
#: Exit code of a job stopped by Ctrl-C (SIGINT): 128 + 2, as a shell reports it.
EXIT_INTERRUPTED = 130


class Interrupts:
    """Ctrl-C (SIGINT) as a request to stop, while this instance is the primary (driver,
    main thread). Raised as ``KeyboardInterrupt`` inside a Py4J call, it broke the
    connection mid-answer and printed pages of Py4J tracebacks; here the first Ctrl-C
    only sets ``requested``, which the job checks between start-up phases and while it
    waits for the streaming query (``_await``), then stops the query and the session;
    the JVM's stderr is hushed (``session.hush_jvm_stderr``): Spark's records of the
    stop (the aborted write, the killed tasks, the workers' broken pipes) are echoes.
    A second Ctrl-C exits at once. pyspark's ``SparkContext`` installs a handler of its
    own (it raises ``KeyboardInterrupt``): ``arm`` again once the session is built."""

    def __init__(self) -> None:
        self.requested = threading.Event()
        self._previous: Any = None
        self._installed = False

    def __enter__(self) -> Interrupts:
        return self.arm()

    def arm(self) -> Interrupts:
        """Make Ctrl-C set ``requested`` (from the main thread only, as Python allows)."""
        if threading.current_thread() is threading.main_thread():
            previous = signal.signal(signal.SIGINT, self._handle)
            if not self._installed:
                self._previous = previous
                self._installed = True
        return self

    def __exit__(self, *exc: object) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, self._previous)

    def _handle(self, signum: int, frame: Any) -> None:
        from xscl.spark_plugin.session import hush_jvm_stderr

        if self.requested.is_set():
            print("xscl serve: interrupted again; exiting now", file=sys.stderr, flush=True)
            os._exit(EXIT_INTERRUPTED)
        hush_jvm_stderr()  # what Spark says while the job stops echoes this one line
        self.requested.set()


def query_failure(text: str, home: Path, what: str = "the streaming query") -> tuple[int, str]:
    """The exit code and the line that tell a failed query's ``text`` (Spark's, with its
    traces and plan): a results folder (``XSCL-S023``) or a home (``XSCL-S024``) that
    cannot be written exit with 4 in one line; any other failure exits with 1, its text
    cut before the query's plan.

    >>> code, line = query_failure("java.io.IOException: No space left on device", Path("/h"))
    >>> code, line.split(":")[0]
    (4, "XSCL-S024 the job's home /h cannot be written (its checkpoint or Spark's working files)")
    """
    from xscl.errors import CheckpointWriteError

    unwritable = _UNWRITABLE.search(text)
    if unwritable is not None:
        return EXIT_UNWRITABLE, unwritable.group(0)
    storage = _STORAGE.search(text)
    if storage is not None:
        error = CheckpointWriteError(
            f"the job's home {home} cannot be written (its checkpoint or Spark's working "
            f"files): {storage.group(1)}"
        )
        return EXIT_UNWRITABLE, str(error)
    return 1, f"{what} failed: {text.split(_PLAN)[0].rstrip()}"


def _await(query: Any, interrupts: Interrupts, every: Callable[[], object] | None = None) -> bool:
    """Wait for ``query`` to end (True), or for a Ctrl-C (False); raises the query's
    failure as Spark does. ``every``: called about every ``_STEP_SECONDS`` meanwhile
    (the history scans the subscriptions are owed, ``_history_runs``)."""
    last = time.monotonic()
    while not interrupts.requested.is_set():
        if query.awaitTermination(0.5):
            return True
        if every is not None and time.monotonic() - last >= _STEP_SECONDS:
            every()
            last = time.monotonic()
    return False


#: How often the driver looks for history scans to run while the job streams.
_STEP_SECONDS = 2.0


def _history_runs(
    r: ServeRequest, spark: Any, plan: Any, results_root: Path, lease: Any, epoch: int
) -> Callable[[], object]:
    """One step of the history scans the job owes (``service.history_runs``: Spark
    batch jobs of the job's plan over each new subscription's history), run on the
    driver between waits, only while this instance holds the lease at ``epoch``."""
    from xscl.service.history_runs import HistoryRuns
    from xscl.spark_plugin.history_scan import SparkScanner

    # each followed scan's registry, checkpoint and results: the epoch's own folder; an
    # older epoch's kept scans are not read again (this epoch's start afresh)
    work = r.home.state / r.name / "history-scans" / f"e{epoch:08d}"
    for older in work.parent.glob("e*") if work.parent.is_dir() else ():
        if older.name < work.name:
            shutil.rmtree(older, ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    runs = HistoryRuns(
        SubscriptionLog(plan.registry, plan.applied),
        str(r.spool),
        results_root / "history",
        SparkScanner(spark, str(r.spool), r.allowed_lateness, str(work)),
        allowed_lateness=r.allowed_lateness,
        report=lambda line: print(f"xscl serve: {line}", file=sys.stderr),
    )

    def step() -> object:
        return runs.step() if lease.holds(epoch) else 0

    return step


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


def _session(r: ServeRequest, startup: StartUp, subscriptions: int) -> Any:
    """Spark, started with the job's settings (``subscriptions``: how many the registry
    holds, for ``--fresh-workers auto``)."""
    import xscl
    from xscl.spark_plugin.session import MASTER_ENV, build_session, submitted_settings
    from xscl.spark_plugin.worker_reuse import REUSE_SETTING, fresh_workers

    master = r.master or os.environ.get(MASTER_ENV) or "local[2] unless spark-submit set one"
    startup.phase(
        f"starting Spark (master {master}; xscl {xscl.__version__} from "
        f"{Path(xscl.__file__).parent})"
    )
    from xscl.spark_plugin.worker_daemon import PREBUILD_ENV, WARM_ENV

    registry = r.home.registry / r.name
    conf = {
        f"spark.executorEnv.{PREBUILD_ENV}": str(registry),
        f"spark.executorEnv.{WARM_ENV}": str(r.spool),
    }
    given = REUSE_SETTING in submitted_settings(os.environ.get("PYSPARK_SUBMIT_ARGS", ""))
    if not given and fresh_workers(r.fresh_workers, subscriptions):
        conf[REUSE_SETTING] = "false"
        startup.phase(
            f"each task gets a fresh Python worker, forked from the daemon that builds the "
            f"{subscriptions:,} subscriptions (--fresh-workers {r.fresh_workers})"
        )
    return build_session(r.master, f"xscl-{r.name}", conf, home=r.home.root)


def _job_plan(r: ServeRequest, log: SubscriptionLog, folders: Any) -> Any:
    """The job's plan over ``folders`` (an epoch's, ``pair.epochs``), without a fence."""
    from xscl.spark_plugin.job.plan import JobPlan

    return JobPlan(
        spool=str(r.spool),
        registry=str(log.folder),
        output=str(folders.results),
        checkpoint=str(folders.checkpoint),
        name=r.name,
        allowed_lateness=r.allowed_lateness,
        results_format=r.results_format,
        channels=r.channels,
        feed_entries=r.feed_entries,
        feed_base_url=r.feed_base_url or folders.feeds_link.as_uri(),
        state_partitions=r.state_partitions,
        buckets=r.value_groups,
        hot_folder=str(folders.hot_values),
        salts=max(1, r.hot_salts),
        hot_threshold=max(1, r.hot_threshold),
        join_plan=r.join_plan,
        cache_memory=r.cache_memory,
        max_records_per_batch=r.max_records_per_batch,
        once=r.once,
        trigger_seconds=r.trigger_seconds,
        applied=str(folders.applied),
        published=str(folders.published),
    )


def _subscription_count(log: SubscriptionLog) -> tuple[int, int]:
    """How many queries the registry holds, and its version (the events' ids only: no
    query is parsed)."""
    ids: set[str] = set()
    version = 0
    for event in log.events():
        version = event.version
        if event.op == "subscribe":
            ids.update(event.ids)
        elif event.op == "unsubscribe":
            ids.difference_update(event.ids)
    return len(ids), version


def _start_cel(
    spark: Any, r: ServeRequest, cel: CelServe, epoch: int, log: SubscriptionLog, fence: str | None
) -> Any:
    """Start the CEL query beside the XSCL one (``cel.serve``); say where it writes."""
    from xscl.events.event_folder import events_folder
    from xscl.spark_plugin.cel import serve as cel_serve

    root = r.home.root
    query = cel_serve.start(
        spark, cel, root, r.name, epoch, log.folder, fence, r.once, r.trigger_seconds,
        r.feed_entries,
    )  # fmt: skip
    print(
        f"xscl serve: CEL queries {cel.path} -> {root / 'results' / (r.name + '.cel')} "
        f"(events: {events_folder(root, r.name)})",
        file=sys.stderr,
    )
    return query


def _register_metrics(spark: Any, r: ServeRequest, lease: Any) -> None:
    """``xscl status``'s figures as gauges of Spark's metrics system (``pair.metrics``)."""
    from xscl.service.pair.lease import pair_folder
    from xscl.service.pair.member import StandbyBoard
    from xscl.service.pair.status import job_status
    from xscl.spark_plugin.pair.metrics import register_status_source

    root = r.home.root
    board = StandbyBoard(pair_folder(root, r.name) / "standbys")
    try:
        register_status_source(spark, lambda: job_status(root, r.name, lease, r.spool, board))
    except Exception as exc:  # metrics are a convenience: the job runs without them
        print(f"xscl serve: status metrics not registered: {exc}", file=sys.stderr)


def _run_primary(
    r: ServeRequest,
    log: SubscriptionLog,
    spark: Any,
    lease: Any,
    epoch: int,
    startup: StartUp,
    interrupts: Interrupts,
) -> JobReport:
    """The job as the lease's holder at ``epoch`` (driver); it seeds an empty registry
    from ``--queries`` (only the lease's holder, so two instances never both do).

    With ``r.cel`` the CEL query runs beside the XSCL one; with ``--once`` after it
    (so it reads every result the XSCL run committed)."""
    from xscl.cli.common import os_error_reason, print_errors
    from xscl.cli.serve import HOME_ADVICE
    from xscl.errors import LegacyHomeError, OutputWriteError
    from xscl.results.commit import unwritable_as_error
    from xscl.service.pair.epochs import EpochFolders, start_epoch
    from xscl.spark_plugin.job.plan import start_job
    from xscl.spark_plugin.job.sink import fence_of
    from xscl.spark_plugin.progress import ProgressPrinter
    from xscl.spark_plugin.stage_progress import StageProgress

    cel = r.cel
    if r.queries and not log.versions():
        # subscribe parses and validates the file (once: load_queries took 16.7 s at 100k)
        startup.phase(f"subscribing the queries of {r.queries} in the job's registry {log.folder}")
        try:
            log.subscribe(Path(r.queries).read_text(encoding="utf-8"), source=r.queries)
        except SubscriptionError as exc:
            print(f"xscl serve: {exc}", file=sys.stderr)
            print_errors(exc.errors, source=r.queries)
            return JobReport(2)
        except OSError as exc:
            print(f"xscl serve: cannot write the job's registry {log.folder}: "
                  f"{os_error_reason(exc)}; {HOME_ADVICE}", file=sys.stderr)  # fmt: skip
            return JobReport(1)
    folders = EpochFolders(r.home.root, r.name, epoch)
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
    if interrupts.requested.is_set():
        return _interrupted(spark, after)
    subscriptions, version = _subscription_count(log)  # once: it reads every event's ids
    if spark is None:
        spark = _session(r, startup, subscriptions)
    interrupts.arm()
    held = f"{subscriptions:,} subscription(s) at version {version}"
    startup.phase(f"{held} in the job's registry {log.folder}")
    plan = replace(_job_plan(r, log, folders), fence=fence_of(lease.spec(), epoch))
    printer = ProgressPrinter(
        None if r.quiet else _stderr_line, results=CommittedResults(output), query=plan.name
    )
    spark.streams.addListener(printer)
    _compile_subscriptions(spark, plan.registry, startup)
    if interrupts.requested.is_set():
        spark.streams.removeListener(printer)
        return _interrupted(spark, after)
    started = time.perf_counter()
    query = start_job(spark, plan)
    stages = None
    if not r.quiet:
        stages = StageProgress(
            spark, query, folders.checkpoint, _stderr_line, interval=r.progress_seconds,
            name=plan.name,
        ).start()  # fmt: skip
    startup.phase(
        f"streaming query started after {startup.seconds():.1f} s; one line per micro-batch "
        f"follows (results under {folders.results_root})"
    )
    _register_metrics(spark, r, lease)
    cel_query = None
    if cel is not None and not r.once:
        cel_query = _start_cel(spark, r, cel, epoch, log, plan.fence)
    ended = False
    history = _history_runs(r, spark, plan, folders.results_root, lease, epoch)
    try:
        ended = _await(query, interrupts, history)
        if ended and query.exception() is None:
            history()  # --once: the scans the run's subscriptions are owed, after it
        if ended and cel is not None and r.once and query.exception() is None:
            cel_query = _start_cel(spark, r, cel, epoch, log, plan.fence)
            ended = _await(cel_query, interrupts)
    except Exception:  # StreamingQueryException: reported from query.exception() below
        ended = True
    finally:
        if stages is not None:
            stages.stop()
        if not ended:
            query.stop()
        if cel_query is not None:
            cel_query.stop()
        _drain_progress(spark, query, printer)
    if not ended:
        done = [b.batch_id for b in list(printer.batches)]
        return _interrupted(spark, max(done, default=after))
    if cel_query is not None and cel_query.exception() is not None:
        code, line = query_failure(str(cel_query.exception()), r.home.root, "the CEL query")
        print(f"xscl serve: {line}", file=sys.stderr)
        return JobReport(code)
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
        report.exit_code, line = query_failure(str(query.exception()), r.home.root)
        print(f"xscl serve: {line}", file=sys.stderr)
        return report
    if r.output:
        records = sorted(
            read_results(folders.results_root), key=lambda r: (r["query"], r["result_id"])
        )
        write_atomically(Path(r.output), jsonl(records))
        total = len(records)
    else:
        total = count_results(folders.results_root)
    said = ""
    if cel is not None:  # the CEL query's results, in their own folder
        cel_root = r.home.root / "results" / f"{r.name}.cel"
        said = f"; {sum(1 for _ in read_results(cel_root, key='id'))} CEL results in {cel_root}"
    print(
        f"xscl: {report.documents} documents read this run; {total} results in total in "
        f"{folders.results_root}{said} (job {report.seconds:.1f} s)",
        file=sys.stderr,
    )
    report.results = total
    return report


def _interrupted(spark: Any, batch: int) -> JobReport:
    """Ctrl-C: say where the job stopped in one line and stop the session (driver)."""
    where = f"after batch {batch}" if batch >= 0 else "before its first batch"
    print(f"xscl serve: interrupted; stopped {where}", file=sys.stderr, flush=True)
    if spark is not None:
        spark.stop()
    return JobReport(EXIT_INTERRUPTED)


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
