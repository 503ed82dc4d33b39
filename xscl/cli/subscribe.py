"""``xscl subscribe`` / ``xscl unsubscribe`` / ``xscl subscriptions``: a job's registry.

They edit (or list) the durable subscription log of the streaming job NAME under
``--home`` (``xscl.service.subscriptions``). A running ``xscl serve`` picks a
change up at its next micro-batch: no restart, no state lost. A query subscribed
while the job runs matches documents that arrive after it takes effect; ``--history
D`` records how far back its history reaches (``xscl.service.history``: the results
it would have had, subscribed D earlier).

Exit codes: 0 done; 2 nothing done because of the input (an invalid query, an
unknown or taken id, a PUBLISHed stream other queries still read, a missing or
unreadable registry to list); 1 the registry under ``--home`` cannot be written.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from xscl.cli.common import cannot_read, duration_argument, os_error_reason, unwritable_folder
from xscl.cli.job_args import DEFAULT_NAME
from xscl.errors import XsclSyntaxError
from xscl.lang.source import read_source
from xscl.lang.unbounded import unbounded_joins

if TYPE_CHECKING:
    from xscl.service.subscriptions import SubscriptionLog

_HOME_ADVICE = "pass a --home you can write to"


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
    sub.add_argument(
        "--history",
        type=duration_argument,
        metavar="D",
        help=(
            "give the queries their results over the spool's documents within D before "
            "they take effect, e.g. 7d; 0: none (default: each query's window; INF or one "
            "block: 7d; never before the spool's retained range)"
        ),
    )
    _job_options(sub)
    sub.set_defaults(func=run_subscribe)
    unsub = subparsers.add_parser(
        "unsubscribe",
        help="remove queries from a streaming job by id (takes effect next micro-batch)",
        description=(
            "Remove the queries ID... from the job's registry. Refused (exit 2, nothing "
            "removed) when a query PUBLISHes a stream that another subscribed query, not "
            "removed with it, reads: name the readers too, or pass --force."
        ),
    )
    unsub.add_argument("ids", nargs="+", metavar="ID")
    unsub.add_argument(
        "--force",
        action="store_true",
        help="remove a publishing query even though other queries read its stream",
    )
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
    from xscl.errors import SubscriptionError
    from xscl.service.subscriptions import SubscriptionLog

    log = SubscriptionLog(Path(args.home) / "registry" / args.name)
    try:
        text = read_source(args.file)
    except (OSError, XsclSyntaxError) as exc:
        return cannot_read("subscribe", args.file, exc)
    try:
        event = log.subscribe(text, source=args.file, history=args.history)
    except SubscriptionError as exc:
        print(f"xscl subscribe: {exc}", file=sys.stderr)
        print_errors(exc.errors, source=args.file)
        return 2
    except OSError as exc:
        _cannot_write("subscribe", args.home, log.folder, exc)
        return 1
    print(f"subscribed {', '.join(event.ids)} (registry event {event.version} in {log.folder})")
    for line in (line for query in event.queries() for line in unbounded_joins(query)):
        print(f"xscl subscribe: warning: {line}", file=sys.stderr)
    _warn_unmatched(log, event.ids, Path(args.home) / "spool")
    return 0


def _warn_unmatched(log: SubscriptionLog, ids: Sequence[str], spool: Path) -> None:
    """Warn about the new queries that cannot match the home's spool (``cli.unmatched``);
    the streams every subscribed query PUBLISHes are known."""
    from xscl.cli.unmatched import warn_unmatched

    current = log.current()
    published = {q.publish for q in current.values() if q.publish is not None}
    warn_unmatched("subscribe", [current[i] for i in ids if i in current], spool, published)


def run_unsubscribe(args: argparse.Namespace) -> int:
    from xscl.errors import SubscriptionError
    from xscl.service.subscriptions import SubscriptionLog, publish_readers

    log = SubscriptionLog(Path(args.home) / "registry" / args.name)
    try:
        if not args.force:
            readers = publish_readers(log.current(), args.ids)
            if readers:
                print(f"xscl unsubscribe: refused: {readers}", file=sys.stderr)
                return 2
        event = log.unsubscribe(args.ids)
    except SubscriptionError as exc:
        print(f"xscl unsubscribe: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        _cannot_write("unsubscribe", args.home, log.folder, exc)
        return 1
    print(f"unsubscribed {', '.join(event.ids)} (registry event {event.version} in {log.folder})")
    return 0


def _cannot_write(command: str, home: str, folder: Path, exc: OSError) -> None:
    reason = unwritable_folder(folder) or os_error_reason(exc)
    print(
        f"xscl {command}: cannot write the job's registry {folder} under --home {home}: "
        f"{reason}; {_HOME_ADVICE}",
        file=sys.stderr,
    )


def registry_problem(home: Path, name: str, folder: Path) -> str | None:
    """Why the registry of job ``name`` under ``home`` cannot be listed; None if it can."""
    try:
        if not home.is_dir():
            what = "is not a directory" if home.exists() else "does not exist"
            return (
                f"--home {home} {what}: pass the --home the job was started with "
                "('xscl serve --home HOME' or 'xscl subscribe FILE --home HOME')"
            )
        if not folder.is_dir():
            registry = home / "registry"
            jobs: list[str] = []
            if registry.is_dir():
                jobs = sorted(p.name for p in registry.iterdir() if p.is_dir())
            if jobs:
                there = f"jobs with a registry there: {', '.join(jobs)} (pass --name)"
            else:
                there = f"add queries with 'xscl subscribe FILE --home {home} --name {name}'"
            return f"no registry of job {name!r} under --home {home} ({folder}); {there}"
        os.listdir(folder)
    except OSError as exc:
        return f"cannot read the registry under --home {home}: {os_error_reason(exc)}"
    return None


def run_list(args: argparse.Namespace) -> int:
    from xscl.errors import SubscriptionError
    from xscl.service.subscriptions import SubscriptionLog, describe

    log = SubscriptionLog(Path(args.home) / "registry" / args.name)
    problem = registry_problem(Path(args.home), args.name, log.folder)
    if problem is not None:
        print(f"xscl subscriptions: {problem}", file=sys.stderr)
        return 2
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
