"""``xscl subscribe`` / ``xscl unsubscribe`` / ``xscl subscriptions``: a job's registry.

They edit (or list) the durable subscription log of the streaming job NAME under
``--home`` (``xscl.spark_plugin.subscriptions``). A running ``xscl serve`` picks a
change up at its next micro-batch: no restart, no state lost. A query subscribed
while the job runs matches documents that arrive after it takes effect.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from xscl.spark_plugin.job_args import DEFAULT_NAME


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sub = subparsers.add_parser(
        "subscribe",
        help="add the queries of a file to a streaming job (takes effect next micro-batch)",
        description=(
            "Validate FILE against the job's current subscriptions and add its queries "
            "to the job's registry (HOME/registry/NAME). A running 'xscl serve' applies "
            "them from its next micro-batch on; they match documents arriving from then "
            "on. Exit 2 (nothing added) if a query is invalid, an id is already "
            "subscribed, or PUBLISH would form a cycle."
        ),
    )
    sub.add_argument("file", metavar="FILE.xscl")
    _job_options(sub)
    sub.set_defaults(func=run_subscribe)
    unsub = subparsers.add_parser(
        "unsubscribe",
        help="remove queries from a streaming job by id (takes effect next micro-batch)",
    )
    unsub.add_argument("ids", nargs="+", metavar="ID")
    _job_options(unsub)
    unsub.set_defaults(func=run_unsubscribe)
    listing = subparsers.add_parser(
        "subscriptions", help="list a streaming job's subscribed query ids"
    )
    _job_options(listing)
    listing.add_argument("--json", action="store_true", help="one JSON object per event")
    listing.set_defaults(func=run_list)


def _job_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--home", default="xscl-data", help="the job's home (default %(default)s)")
    parser.add_argument("--name", default=DEFAULT_NAME, help="the job's name (default %(default)s)")


def run_subscribe(args: argparse.Namespace) -> int:
    from xscl.cli.common import print_errors
    from xscl.spark_plugin.subscriptions import SubscriptionError, SubscriptionLog

    log = SubscriptionLog(Path(args.home) / "registry" / args.name)
    try:
        text = Path(args.file).read_text(encoding="utf-8")
    except OSError as exc:
        print(f"xscl subscribe: cannot read {args.file}: {exc.strerror}", file=sys.stderr)
        return 2
    try:
        event = log.subscribe(text, source=args.file)
    except SubscriptionError as exc:
        print(f"xscl subscribe: {exc}", file=sys.stderr)
        print_errors(exc.errors, source=args.file)
        return 2
    print(f"subscribed {', '.join(event.ids)} (registry event {event.version} in {log.folder})")
    return 0


def run_unsubscribe(args: argparse.Namespace) -> int:
    from xscl.spark_plugin.subscriptions import SubscriptionError, SubscriptionLog

    log = SubscriptionLog(Path(args.home) / "registry" / args.name)
    try:
        event = log.unsubscribe(args.ids)
    except SubscriptionError as exc:
        print(f"xscl unsubscribe: {exc}", file=sys.stderr)
        return 2
    print(f"unsubscribed {', '.join(event.ids)} (registry event {event.version} in {log.folder})")
    return 0


def run_list(args: argparse.Namespace) -> int:
    from xscl.spark_plugin.subscriptions import SubscriptionError, SubscriptionLog, describe

    log = SubscriptionLog(Path(args.home) / "registry" / args.name)
    try:
        if args.json:
            applied = log.applied()
            for event in log.events():
                print(json.dumps({**describe(event), "offset": applied.get(event.version)}))
        else:
            for qid in sorted(log.current()):
                print(qid)
    except SubscriptionError as exc:
        print(f"xscl subscriptions: {exc}", file=sys.stderr)
        return 2
    return 0
