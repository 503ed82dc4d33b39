"""Command-line options of the streaming job, shared by ``xscl serve`` and spark-submit.

Kept free of Spark imports so that ``xscl --help`` stays fast.
"""

from __future__ import annotations

import argparse

from xscl.engine.groups.join_plans import DEFAULT_CACHE_MEMORY, JOIN_PLANS
from xscl.engine.groups.value_group import DEFAULT_HOT_THRESHOLD
from xscl.engine.routing import DEFAULT_HOT_SALTS
from xscl.results.atom import DEFAULT_MAX_ENTRIES
from xscl.results.parts import RESULTS_FORMATS
from xscl.service.pair.lease import DEFAULT_LEASE_SECONDS, DEFAULT_RENEW_SECONDS, LEASE_KINDS
from xscl.spark_plugin.stage_progress import DEFAULT_INTERVAL as DEFAULT_PROGRESS_SECONDS

#: Default job name: the checkpoint and results folder under ``--home``.
DEFAULT_NAME = "xscl"
#: Default number of newest entries kept in each query's Atom feed.
DEFAULT_FEED_ENTRIES = DEFAULT_MAX_ENTRIES


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
    parser.add_argument(
        "--trigger-seconds",
        type=float,
        default=1.0,
        metavar="S",
        help="without --once: start a micro-batch every S seconds when documents wait "
        "(default %(default)s)",
    )
    parser.add_argument(
        "--max-records-per-batch",
        type=int,
        metavar="N",
        help="at most N spool records per micro-batch (default: all that are waiting)",
    )
    parser.add_argument("--allowed-lateness", metavar="DURATION", help="e.g. 10m (default none)")
    parser.add_argument(
        "--cel-queries",
        metavar="FILE.cel",
        help="run CEL queries beside the XSCL ones, over their PUBLISHed results and the "
        "events added with 'xscl cel publish': FILE's valid queries seed an empty CEL "
        "registry (HOME/registry/NAME.cel); 'xscl cel subscribe' / 'unsubscribe' change it "
        "while the job runs (docs/cel.md 10)",
    )
    parser.add_argument(
        "--cel-reorder-slack",
        metavar="DURATION",
        default="0s",
        help="CEL events ending more than DURATION before the job's clock are late "
        "(dead letters, CEL-E007); default %(default)s",
    )
    parser.add_argument(
        "--feed-entries",
        type=int,
        default=DEFAULT_FEED_ENTRIES,
        metavar="N",
        help="newest results kept in each query's Atom feed (default %(default)s)",
    )
    parser.add_argument(
        "--feed-base-url",
        metavar="URL",
        help="where the feeds are served, e.g. https://example.org/xscl: each feed's "
        'rel="self" link is then URL/<query>.atom (default: its file under '
        "HOME/results/NAME/feeds, which always holds the newest feeds; CEL feeds keep "
        "theirs under HOME/results/NAME.cel/feeds)",
    )
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
        "--no-channels",
        dest="channels",
        action="store_false",
        help="write one JSON line per result, even when many queries share one match "
        "(default: such results are one channel line naming each query and its result "
        "id; readers see the same records either way: docs/architecture.md, 'Channels')",
    )
    parser.add_argument(
        "--state-partitions",
        type=int,
        metavar="N",
        help="partitions of the join state in Spark's state store (RocksDB): how many tasks "
        "share the joins of a micro-batch. Fixed at the job's first start (restarts keep "
        "it); to grow onto more executors later, give 2-4 per core you will ever run, e.g. "
        "64 for 16 cores (default: 2 per executor core at the first start)",
    )
    parser.add_argument(
        "--value-groups",
        type=int,
        metavar="N",
        help="how many join groups string values are hashed into (each holds the stored "
        "documents of its values). Fixed at the job's first start; each group costs a call "
        "per micro-batch, more groups spread hot values further (default: 4 per state "
        "partition)",
    )
    parser.add_argument(
        "--hot-salts",
        type=int,
        default=DEFAULT_HOT_SALTS,
        metavar="S",
        help="a hot string value (a category, a prolific author) is spread over S join "
        "groups once a group stores more than --hot-threshold documents under it; 1 never "
        "spreads (default %(default)s)",
    )
    parser.add_argument(
        "--hot-threshold",
        type=int,
        default=DEFAULT_HOT_THRESHOLD,
        metavar="N",
        help="documents stored under one value in one join group that make it hot "
        "(default %(default)s)",
    )
    parser.add_argument(
        "--join-plan",
        choices=JOIN_PLANS,
        default="adaptive",
        help="how a join group matches the last block of a chain keyed by one value: "
        "'probe' walks the stored documents of the other blocks, 'cache' keeps the "
        "matches of the first blocks as they arrive, 'adaptive' measures both per group "
        "and uses the cheaper, under --cache-memory; the results are the same "
        "(default %(default)s; docs/architecture.md, 'Probe or cache')",
    )
    parser.add_argument(
        "--cache-memory",
        type=_mebibytes,
        default=DEFAULT_CACHE_MEMORY,
        metavar="MiB",
        help="memory in MiB one join group may spend on kept chain prefixes under "
        f"--join-plan adaptive; 0 never keeps any (default {DEFAULT_CACHE_MEMORY >> 20})",
    )
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="no start-up or per-batch progress lines (errors and the final count remain)",
    )
    parser.add_argument(
        "--progress-seconds",
        type=_positive_seconds,
        default=DEFAULT_PROGRESS_SECONDS,
        metavar="S",
        help="a micro-batch still running after S seconds prints a line every S seconds "
        "while its counts change: the tasks done of its stages (routing, join groups, "
        "writing) and the documents read (default %(default)s)",
    )
    pair = parser.add_argument_group(
        "process pair",
        "start the job twice (same --home and --name, or the same Kubernetes Lease):\n"
        "the first to take the lease is the primary, the others stand by (Spark started\n"
        "and warm) and take over when its lease lapses; every take-over starts a new\n"
        "epoch and fences the old primary out of every output ('xscl status' shows them)",
    )
    add_lease_arguments(pair)
    pair.add_argument(
        "--lease-seconds",
        type=float,
        default=DEFAULT_LEASE_SECONDS,
        metavar="S",
        help="a standby takes over once the lease went S seconds unrenewed (default %(default)s)",
    )
    pair.add_argument(
        "--renew-seconds",
        type=float,
        default=DEFAULT_RENEW_SECONDS,
        metavar="S",
        help="the primary renews its lease every S seconds (default %(default)s)",
    )


def _mebibytes(text: str) -> int:
    """A number of MiB, 0 or more, as bytes (``--cache-memory``).

    >>> _mebibytes("64")
    67108864
    """
    return int(_number(text, "MiB", 0.0, strict=False) * (1 << 20))


def _positive_seconds(text: str) -> float:
    """A number of seconds above 0 (``--progress-seconds``).

    >>> _positive_seconds("0.5")
    0.5
    """
    return _number(text, "seconds", 0.0, strict=True)


def _number(text: str, unit: str, least: float, *, strict: bool) -> float:
    """``text`` as a number of ``unit``, above ``least`` (``strict``) or at least it.

    >>> _number("-1", "MiB", 0.0, strict=False)
    Traceback (most recent call last):
    argparse.ArgumentTypeError: must be 0 MiB or more: '-1'
    """
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of {unit}: {text!r}") from None
    if value < least or (strict and value == least):
        bound = f"above {least:g} {unit}" if strict else f"{least:g} {unit} or more"
        raise argparse.ArgumentTypeError(f"must be {bound}: {text!r}")
    return value


def add_lease_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """Where a job's lease is kept: ``xscl serve`` and ``xscl status`` share these."""
    parser.add_argument(
        "--lease",
        choices=LEASE_KINDS,
        default="file",
        help="where the lease is kept: 'file' (HOME/pair/NAME on the shared home) or "
        "'kubernetes' (a coordination.k8s.io Lease; needs the 'k8s' extra and a pod's "
        "service account) (default %(default)s)",
    )
    parser.add_argument(
        "--lease-name",
        metavar="NAME",
        help="with --lease kubernetes: the Lease object (default xscl-<--name>)",
    )
    parser.add_argument(
        "--lease-namespace",
        metavar="NS",
        help="with --lease kubernetes: its namespace (default: the pod's own)",
    )
