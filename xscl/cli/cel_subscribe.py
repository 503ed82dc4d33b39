"""``xscl cel subscribe FILE`` / ``xscl cel unsubscribe ID...``: a job's CEL registry.

They append to the CEL registry of the job NAME under ``--home``
(``HOME/registry/NAME.cel``, ``xscl.service.cel_subscriptions``), whether or not
the job runs: a running ``xscl serve --cel-queries`` applies the change at its
next micro-batch (no restart, no state lost), a stopped one at its next start
(docs/cel.md 10.7). A subscribed query sees the events of the epochs the job
processes from then on.

Exit codes: 0 done; 2 a query was rejected (its coded error printed; the file's
valid queries are subscribed all the same, as a bad query never affects the others),
or nothing done (no valid query, an unknown id, a PUBLISHed stream other queries
still read); 1 the registry under ``--home`` cannot be written.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

from xscl.cli.common import (
    EXIT_REJECTED,
    cannot_read,
    os_error_reason,
    print_errors,
    unwritable_folder,
)
from xscl.cli.job_args import DEFAULT_NAME
from xscl.errors import SubscriptionError, XsclSyntaxError
from xscl.lang.source import read_source

if TYPE_CHECKING:
    from xscl.service.cel_subscriptions import CelSubscriptionLog

_EFFECT = (
    "a running 'xscl serve --cel-queries' applies it at its next micro-batch, a stopped "
    "job at its next start"
)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``subscribe`` and ``unsubscribe`` to ``xscl cel``."""
    sub = commands.add_parser(
        "subscribe",
        help="add the queries of a CEL file to a job (takes effect next micro-batch)",
        description=(
            "Validate FILE against the job's subscribed CEL queries and the streams its "
            "XSCL queries PUBLISH, and add its valid queries to the job's CEL registry "
            f"(HOME/registry/NAME.cel); {_EFFECT}. They see the events of the epochs the "
            "job processes from then on. FILE may declare again, with the same attributes, "
            "the streams the job knows. A query with an error is printed with its code and "
            "not added; the others are (exit 2). A query that reads a stream another "
            "subscribed query PUBLISHes joins that query's partition groups, or is "
            "rejected (CEL-S005) when it cannot be partitioned like them."
        ),
        epilog="example: xscl cel subscribe examples/cel/stocks.cel --home xscl-data",
    )
    sub.add_argument("file", metavar="FILE.cel")
    _job_options(sub)
    sub.set_defaults(func=run_subscribe)
    unsub = commands.add_parser(
        "unsubscribe",
        help="remove CEL queries from a job by id (takes effect next micro-batch)",
        description=textwrap.fill(
            f"Remove the CEL queries ID... from the job's CEL registry; {_EFFECT}. Refused "
            "(exit 2, nothing removed) for an id that is not subscribed (CEL-S003) or a "
            "query whose PUBLISHed stream another query, not removed with it, reads "
            "(CEL-S004).",
            width=79,
        ),
        epilog=(
            "example: xscl cel subscribe examples/cel/stocks.cel --home xscl-data\n"
            "         xscl cel unsubscribe rising --home xscl-data"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    unsub.add_argument("ids", nargs="+", metavar="ID")
    _job_options(unsub)
    unsub.set_defaults(func=run_unsubscribe)


def _job_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--home", default="xscl-data", help="the job's home (default %(default)s)")
    parser.add_argument("--name", default=DEFAULT_NAME, help="the job's name (default %(default)s)")


def _log(args: argparse.Namespace) -> CelSubscriptionLog:
    """The job's CEL registry, with the catalog of the streams its XSCL queries PUBLISH
    (``SubscriptionError`` when the XSCL registry cannot be read)."""
    from xscl.events.from_xscl import xscl_catalog
    from xscl.service.cel_subscriptions import CelSubscriptionLog, cel_registry
    from xscl.service.subscriptions import SubscriptionLog

    home = Path(args.home)
    xscl = SubscriptionLog(home / "registry" / args.name)
    queries = list(xscl.current().values()) if xscl.versions() else []
    return CelSubscriptionLog(cel_registry(home, args.name), xscl_catalog(queries))


def run_subscribe(args: argparse.Namespace) -> int:
    try:
        text = read_source(args.file, code="CEL-P012")
    except (OSError, XsclSyntaxError) as exc:
        return cannot_read("cel subscribe", args.file, exc)
    try:
        log = _log(args)
        event, errors = log.subscribe(text, source=args.file)
    except SubscriptionError as exc:
        print(f"xscl cel subscribe: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        _cannot_write("subscribe", args.home, args.name, exc)
        return 1
    print_errors(errors, source=args.file)
    if event is None:
        print(f"xscl cel subscribe: {len(errors)} error(s) and no valid query in {args.file}; "
              "nothing was subscribed", file=sys.stderr)  # fmt: skip
        return 2
    print(f"subscribed {', '.join(event.ids)} (CEL registry event {event.version} in {log.folder})")
    if errors:
        print(f"xscl cel subscribe: {len(errors)} error(s) above: those queries were rejected, "
              f"the other {len(event.ids)} subscribed (exit {EXIT_REJECTED})",
              file=sys.stderr)  # fmt: skip
        return EXIT_REJECTED
    return 0


def run_unsubscribe(args: argparse.Namespace) -> int:
    try:
        log = _log(args)
        event = log.unsubscribe(args.ids)
    except SubscriptionError as exc:
        print(f"xscl cel unsubscribe: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        _cannot_write("unsubscribe", args.home, args.name, exc)
        return 1
    print(
        f"unsubscribed {', '.join(event.ids)} (CEL registry event {event.version} in {log.folder})"
    )
    return 0


def _cannot_write(command: str, home: str, name: str, exc: OSError) -> None:
    from xscl.service.cel_subscriptions import cel_registry

    folder = cel_registry(Path(home), name)
    reason = unwritable_folder(folder) or os_error_reason(exc)
    print(
        f"xscl cel {command}: cannot write the job's CEL registry {folder} under --home "
        f"{home}: {reason}; pass a --home you can write to",
        file=sys.stderr,
    )
