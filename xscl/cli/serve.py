"""``xscl serve``: run the queries continuously over the spool as a Spark streaming job."""

from __future__ import annotations

import argparse

from xscl.cli.job_args import add_job_arguments


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
            "  xscl poll --spool xscl-data/spool --stream news examples/rss/feeds/news.atom\n"
            "  xscl serve --queries examples/rss/queries.xscl --home xscl-data --once"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_job_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from xscl.spark_plugin.submit import run as run_job

    return run_job(args)
