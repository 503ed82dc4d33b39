"""Command-line options of the streaming job, shared by ``xscl serve`` and spark-submit.

Kept free of Spark imports so that ``xscl --help`` stays fast.
"""

from __future__ import annotations

import argparse

#: Default job name: the checkpoint and results folder under ``--home``.
DEFAULT_NAME = "xscl"
#: Default number of newest entries kept in each query's Atom feed.
DEFAULT_FEED_ENTRIES = 200
#: Formats of the committed result part files (``--results-format``).
RESULTS_FORMATS = ("jsonl", "parquet")


def add_job_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the streaming job's options to ``parser`` (runs on the driver, once)."""
    parser.add_argument(
        "--queries",
        metavar="FILE.xscl",
        help="the job's first subscriptions (needed unless its registry already holds some; "
        "later ones: 'xscl subscribe')",
    )
    parser.add_argument("--spool", help="spool directory (default: HOME/spool)")
    parser.add_argument(
        "--home", default="xscl-data", help="checkpoints and results (default %(default)s)"
    )
    parser.add_argument("--name", default=DEFAULT_NAME, help="job name: checkpoint/results folder")
    parser.add_argument("--master", help="Spark master (default: local[2], or spark-submit's)")
    parser.add_argument("--once", action="store_true", help="process what is there, then exit")
    parser.add_argument("--trigger-seconds", type=float, default=1.0, metavar="S")
    parser.add_argument("--max-records-per-batch", type=int, metavar="N")
    parser.add_argument("--allowed-lateness", metavar="DURATION", help="e.g. 10m (default none)")
    parser.add_argument("--feed-entries", type=int, default=DEFAULT_FEED_ENTRIES, metavar="N")
    parser.add_argument("--output", metavar="RESULTS.jsonl", help="with --once: the result set")
    parser.add_argument(
        "--results-format",
        choices=RESULTS_FORMATS,
        default="jsonl",
        help="the committed result files under HOME/results/NAME: 'jsonl' (spec section 4 "
        "records, one per line) or 'parquet' (the same fields as a table, zstd: far fewer "
        "bytes when results repeat their documents) (default %(default)s)",
    )
    parser.add_argument(
        "--join-state",
        choices=("disk", "memory"),
        default="disk",
        help="where the stored documents live: 'disk' (an SQLite file under HOME/state; the "
        "driver holds one micro-batch's reach, a restart replays nothing) or 'memory' (the "
        "driver's heap, snapshotted; faster, bounded by memory) (default %(default)s)",
    )
    parser.add_argument(
        "--hold-mb",
        type=int,
        default=256,
        metavar="MB",
        help="with --join-state disk: about how many MB of recently used stored documents "
        "the driver keeps between micro-batches; the rest is read back when a batch can "
        "join with it (default %(default)s; 0 holds nothing)",
    )
    parser.add_argument(
        "--snapshot-seconds",
        type=float,
        default=60.0,
        metavar="S",
        help="with --join-state memory: save the state at most every S seconds, so a "
        "restart replays only the spool after it (default %(default)s)",
    )
    parser.add_argument("--quiet", action="store_true", help="no per-batch progress lines")
