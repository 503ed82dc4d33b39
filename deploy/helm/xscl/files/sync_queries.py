"""Bring a job's subscriptions to a query file through ``xscl unsubscribe`` / ``subscribe``.

    python sync_queries.py --queries FILE.xscl --home HOME [--name NAME]

Run by the chart's subscriptions Job after each ``helm install`` / ``upgrade``: queries
whose id left the file are unsubscribed, new ids subscribed, and a query whose text
changed under the same id is unsubscribed and subscribed again (as any subscription
made while the job runs, it matches documents that arrive from then on). The running
``xscl serve`` applies the changes at its next micro-batch; nothing restarts.

An empty registry is left alone: ``xscl serve --queries`` subscribes the file at its
start, and subscribing here too could race it.

Exit codes: 0 the registry matches the file; 2 an invalid query, or a removal that
``xscl unsubscribe`` refuses (a PUBLISHed stream other kept queries read); 1 the
registry cannot be written. Each step is printed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from xscl.cli.common import load_queries, print_errors
from xscl.cli.job_args import DEFAULT_NAME
from xscl.lang.ast import Query
from xscl.service.subscriptions import SubscriptionLog, publish_readers
from xscl.spark_plugin.batch import registry_text


@dataclass(frozen=True)
class Plan:
    """What to change in the registry: ids to remove (first), then queries to add."""

    remove: tuple[str, ...]
    add: tuple[Query, ...]
    #: ``--force`` for the removal: only queries that come back are PUBLISHers others read
    force: bool


def same_query(a: Query, b: Query) -> bool:
    """Equal up to whether the id was written (registry texts always write it)."""
    return replace(a, explicit_id=True) == replace(b, explicit_id=True)


def plan_changes(current: Mapping[str, Query], wanted: Sequence[Query]) -> Plan:
    """The removals and additions that turn ``current`` into ``wanted``."""
    by_id = {q.qid: q for q in wanted}
    gone = [qid for qid in current if qid not in by_id]
    changed = [q.qid for q in wanted if q.qid in current and not same_query(current[q.qid], q)]
    add = tuple(q for q in wanted if q.qid not in current or q.qid in changed)
    remove = (*gone, *changed)
    # Force only when every stranded reader reads a changed publisher, which comes back
    # at once; a publisher that goes for good while its readers stay is refused by xscl.
    kept = {qid: q for qid, q in current.items() if qid not in changed}
    force = publish_readers(current, remove) is not None and publish_readers(kept, gone) is None
    return Plan(remove, add, force)


def xscl(*args: str) -> int:
    """Run ``xscl ARGS`` with this interpreter; its exit code (its output goes through)."""
    return subprocess.run([sys.executable, "-m", "xscl", *args], check=False).returncode


def build_parser() -> argparse.ArgumentParser:
    """The command line (the chart passes it these options)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", required=True, metavar="FILE.xscl")
    parser.add_argument("--home", required=True)
    parser.add_argument("--name", default=DEFAULT_NAME)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    loaded = load_queries(args.queries)
    if loaded.errors:
        print_errors(loaded.errors, source=args.queries)
        print(f"sync_queries: {args.queries} has invalid queries; nothing changed", file=sys.stderr)
        return 2
    log = SubscriptionLog(Path(args.home) / "registry" / args.name)
    if not log.versions():
        print(
            f"sync_queries: the registry {log.folder} is empty: "
            f"xscl serve subscribes {args.queries} at its start"
        )
        return 0
    plan = plan_changes(log.current(), loaded.queries)
    job = ("--home", args.home, "--name", args.name)
    if plan.remove:
        code = xscl("unsubscribe", *plan.remove, *job, *(("--force",) if plan.force else ()))
        if code != 0:
            return code
    if plan.add:
        with tempfile.TemporaryDirectory() as folder:
            changes = Path(folder) / "queries.xscl"
            changes.write_text(registry_text(plan.add), encoding="utf-8")
            code = xscl("subscribe", str(changes), *job)
        if code != 0:
            return code
    if not plan.remove and not plan.add:
        print(f"sync_queries: the registry {log.folder} already holds {args.queries}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
