"""``xscl serve``: run the queries continuously over the spool as a Spark streaming job."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from xscl.cli.job_args import add_job_arguments
from xscl.connectors.spool import read_head
from xscl.errors import ConnectorIOError, XsclSyntaxError
from xscl.spark_plugin.worker_reuse import FRESH_WORKERS_FROM

if TYPE_CHECKING:
    from xscl.spark_plugin.serve import JobReport

#: What to do about a home that cannot be written.
HOME_ADVICE = "pass a --home you can write to"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="run queries continuously over the spool (Spark Structured Streaming)",
        description=(
            "Run every query of --queries continuously over the durable spool (fill it "
            "with 'xscl poll'). With no cluster configured this is the embedded default: "
            "Spark local mode with checkpoints, spool and results under --home. Each "
            "start-up phase prints a line (registry, Spark, compile job, streaming query) and "
            "each micro-batch one with documents, results, docs/s, watermark, lag and state "
            "size as it ends; a batch still running after --progress-seconds prints the tasks "
            "done of its stages (routing, join groups, writing) and the documents read while "
            "they change (--quiet: none of these). "
            "Results go to HOME/results/NAME (JSON Lines, exactly once across restarts), "
            "with one Atom feed per query under HOME/results/NAME/feeds (--feed-base-url: where "
            "they are served). Stop with Ctrl-C (exit 130, after one line saying which batch "
            "it stopped after); restarting with the same --home resumes from the checkpoint. "
            "Exit 4 (XSCL-S023, XSCL-S024): the results folder, or the checkpoint under --home, "
            "could not be written (a full or read-only disk); the batch was not committed. "
            "Started twice, the second instance is a hot standby that takes over in seconds."
        ),
        epilog=(
            "example:\n"
            "  xscl poll --form raw --spool xscl-data/spool --stream vendor "
            "examples/rss/feeds/vendor.rss\n"
            "  xscl poll --form raw --spool xscl-data/spool --stream news "
            "examples/rss/feeds/news.atom\n"
            "  xscl serve --queries examples/rss/queries.xscl --home xscl-data --once"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_job_arguments(parser)
    parser.add_argument(
        "--fresh-workers",
        choices=("auto", "on", "off"),
        default="auto",
        help="on: every Spark task's Python worker is forked afresh from the daemon that "
        "built the subscriptions (spark.python.worker.reuse=false), so the pages a worker "
        "copies go when its task ends; each task pays a fork and pyspark's imports. auto "
        f"(default): on when the registry holds {FRESH_WORKERS_FROM:,} subscriptions or "
        "more at start (docs/architecture.md, 'Fresh workers for large registries'); a "
        "--conf spark.python.worker.reuse in PYSPARK_SUBMIT_ARGS wins",
    )
    parser.set_defaults(func=run)


#: A --queries file up to this size is parsed once more before Spark starts, for the
#: warnings of ``cli.unmatched`` (a larger one was subscribed with 'xscl subscribe',
#: which warned, or is a benchmark's: its parse would delay the start).
SURVEY_MAX_BYTES = 1 << 20


def build_parser() -> argparse.ArgumentParser:
    """The job's own parser (``spark-submit xscl/spark_plugin/submit.py ...``)."""
    parser = argparse.ArgumentParser(
        prog="xscl.spark_plugin.submit",
        description="Run XSCL queries continuously over a spool with Spark Structured Streaming.",
    )
    add_job_arguments(parser)
    # under spark-submit Spark's own settings rule: give it spark.python.worker.reuse
    parser.set_defaults(fresh_workers="off")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the job; exit 0 when it ends normally, 2 on bad queries or arguments."""
    return run(build_parser().parse_args(argv))


def run(args: argparse.Namespace) -> int:
    """``xscl serve`` with parsed options; the exit code."""
    return run_job(args).exit_code


def run_job(args: argparse.Namespace) -> JobReport:
    """Run the job with parsed options (driver); what it did.

    Everything a user can get wrong is checked before Spark starts and said in one
    line: exit 2 for an unreadable or invalid ``--queries`` or a bad option, 1 for a
    ``--home`` or ``--output`` that cannot be written or a spool that cannot be read.
    Then ``spark_plugin.serve`` runs the job from one frozen ``ServeRequest``.
    """
    from xscl.cli.common import cannot_read, load_queries, parse_duration, print_errors
    from xscl.lang.source import read_source
    from xscl.service.subscriptions import SubscriptionLog
    from xscl.spark_plugin import serve as spark_serve
    from xscl.spark_plugin.serve import JobReport
    from xscl.spark_plugin.session import XsclHome

    lateness = None
    if args.allowed_lateness is not None:
        try:
            lateness = parse_duration(args.allowed_lateness)
        except ValueError as exc:
            print(f"xscl serve: --allowed-lateness: {exc}", file=sys.stderr)
            return JobReport(2)
    base_url = getattr(args, "feed_base_url", None)
    if base_url is not None and not _absolute_url(base_url):
        print(f"xscl serve: --feed-base-url {base_url!r} is not an absolute URL; give where "
              "the feeds are served, e.g. https://example.org/xscl", file=sys.stderr)  # fmt: skip
        return JobReport(2)
    text = None
    if args.queries:
        try:
            text = read_source(args.queries)
        except (OSError, XsclSyntaxError) as exc:
            return JobReport(cannot_read("serve", args.queries, exc, option="--queries"))
        _warn_unmatched(args, text)
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
    request = spark_serve.ServeRequest(
        home=home, name=args.name, spool=spool, queries=args.queries, master=args.master,
        once=args.once, quiet=args.quiet, output=args.output, allowed_lateness=lateness,
        results_format=args.results_format, channels=args.channels,
        feed_entries=args.feed_entries,
        feed_base_url=base_url,
        state_partitions=args.state_partitions, value_groups=args.value_groups,
        hot_salts=args.hot_salts, hot_threshold=args.hot_threshold,
        join_plan=args.join_plan, cache_memory=args.cache_memory,
        max_records_per_batch=args.max_records_per_batch, trigger_seconds=args.trigger_seconds,
        progress_seconds=args.progress_seconds,
        lease=args.lease, lease_seconds=args.lease_seconds, renew_seconds=args.renew_seconds,
        lease_name=args.lease_name, lease_namespace=args.lease_namespace, cel=cel,
        fresh_workers=args.fresh_workers,
    )  # fmt: skip
    report = spark_serve.serve(request)
    if cel is not None and cel.rejected and report.exit_code == 0:
        # some CEL queries were rejected (printed above): the others ran
        from dataclasses import replace

        from xscl.cli.common import EXIT_REJECTED

        print(f"xscl serve: {cel.rejected} error(s) in --cel-queries (printed at the start); "
              f"exit {EXIT_REJECTED}", file=sys.stderr)  # fmt: skip
        return replace(report, exit_code=EXIT_REJECTED)
    return report


def _absolute_url(text: str) -> bool:
    """Whether ``text`` is an absolute URL a feed reader can open (http, https, file).

    >>> _absolute_url("https://example.org/x"), _absolute_url("feeds/"), _absolute_url("file:///f")
    (True, False, True)
    """
    from urllib.parse import urlsplit

    parts = urlsplit(text)
    if parts.scheme in ("http", "https"):
        return bool(parts.netloc) and not any(c.isspace() for c in text)
    return parts.scheme == "file" and parts.path.startswith("/")


def _unwritable(args: argparse.Namespace) -> str | None:
    """Why the job could not write its ``--home`` or ``--output``; None when it can."""
    from xscl.cli.common import OUTPUT_ADVICE, unwritable_file, unwritable_folder

    problem = unwritable_folder(args.home)
    if problem is not None:
        return f"cannot write --home {args.home}: {problem}; {HOME_ADVICE}"
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


def _warn_unmatched(args: argparse.Namespace, text: str) -> None:
    """Warn about the queries of ``text`` (--queries) that cannot match the spool,
    before Spark starts (``cli.unmatched``); a large file is not parsed twice."""
    from xscl.cli.unmatched import warn_unmatched
    from xscl.lang.parser import parse_file

    if len(text) > SURVEY_MAX_BYTES:
        return
    spool = Path(args.spool) if args.spool else Path(args.home) / "spool"
    warn_unmatched("serve", parse_file(text, source=args.queries).queries, spool)
