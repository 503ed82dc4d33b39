"""``xscl serve``: run the queries continuously over the spool as a Spark streaming job."""

from __future__ import annotations

import argparse
from pathlib import Path

from xscl.cli.job_args import add_job_arguments
from xscl.errors import XsclSyntaxError


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="run queries continuously over the spool (Spark Structured Streaming)",
        description=(
            "Run every query of --queries continuously over the durable spool (fill it "
            "with 'xscl poll'). With no cluster configured this is the embedded default: "
            "Spark local mode with checkpoints, spool and results under --home. Each "
            "micro-batch prints documents, results, docs/s, watermark, lag and state size. "
            "Results go to HOME/results/NAME (JSON Lines, exactly once across restarts), "
            "with one Atom feed per query under HOME/results/NAME/feeds. Stop with Ctrl-C; "
            "restarting with the same --home resumes from the checkpoint. Started twice, "
            "the second instance is a hot standby that takes over in seconds."
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
    parser.set_defaults(func=run)


#: A --queries file up to this size is parsed once more before Spark starts, for the
#: warnings of ``cli.unmatched`` (a larger one was subscribed with 'xscl subscribe',
#: which warned, or is a benchmark's: its parse would delay the start).
SURVEY_MAX_BYTES = 1 << 20


def run(args: argparse.Namespace) -> int:
    from xscl.cli.common import cannot_read
    from xscl.lang.source import read_source
    from xscl.spark_plugin.submit import run as run_job

    if args.queries:
        try:
            text = read_source(args.queries)
        except (OSError, XsclSyntaxError) as exc:
            return cannot_read("serve", args.queries, exc, option="--queries")
        _warn_unmatched(args, text)
    return run_job(args)


def _warn_unmatched(args: argparse.Namespace, text: str) -> None:
    """Warn about the queries of ``text`` (--queries) that cannot match the spool,
    before Spark starts (``cli.unmatched``); a large file is not parsed twice."""
    from xscl.cli.unmatched import warn_unmatched
    from xscl.lang.parser import parse_file

    if len(text) > SURVEY_MAX_BYTES:
        return
    spool = Path(args.spool) if args.spool else Path(args.home) / "spool"
    warn_unmatched("serve", parse_file(text, source=args.queries).queries, spool)
