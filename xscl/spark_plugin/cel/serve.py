"""``xscl serve --cel-queries``: the CEL streaming query beside the XSCL one (driver).

Checked before Spark starts (``check``): the CEL file is read and validated
against the schemas of the XSCL streams PUBLISHed by the job's queries
(``from_xscl.xscl_catalog``); every error is printed with its code. The valid
queries run (a bad query never affects the others, docs/cel.md 7) and a job
that ends normally then exits 2; a file without a valid query exits 2 before
Spark starts. Started after the XSCL query in the same session (``start``), as a job
of its own name ``NAME.cel`` with the same epoch and fence: its checkpoint
and results are forked per epoch like the XSCL job's (``pair.epochs``), under
``HOME/checkpoints/NAME.cel`` and ``HOME/results/NAME.cel``. Plain events come
from ``HOME/cel-events/NAME`` (``xscl cel publish``).

The job's queries are its CEL registry's, ``HOME/registry/NAME.cel``
(``service.cel_subscriptions``): ``start`` makes the file's valid queries its
first event when it is empty; otherwise the registry's queries run, as they were
left by the last run and ``xscl cel subscribe`` / ``unsubscribe`` since, and the
file is only checked (docs/cel.md 10.7).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xscl.events.event_folder import events_folder
from xscl.lang.ast import Query

__all__ = ["CelServe", "check"]


@dataclass(frozen=True)
class CelServe:
    """What the CEL query of a serve run needs, checked."""

    path: str
    catalog: str
    slack: int
    #: errors of the rejected queries (printed by ``check``); the valid ones run, and
    #: a job that ends normally exits 2 (``cli.common.EXIT_REJECTED``)
    rejected: int = 0


def check(path: str, slack_text: str, xscl_queries: list[Query]) -> CelServe | None:
    """The checked CEL options, or None after printing why not (exit 2)."""
    from xscl.cli.common import parse_duration, print_errors
    from xscl.events.from_xscl import xscl_catalog
    from xscl.spark_plugin.cel.program import load_cel

    try:
        slack = parse_duration(slack_text)
    except ValueError as exc:
        print(f"xscl serve: --cel-reorder-slack: {exc}", file=sys.stderr)
        return None
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        print(f"xscl serve: cannot read --cel-queries {path}: {exc}", file=sys.stderr)
        return None
    catalog = xscl_catalog(xscl_queries)
    program, errors = load_cel(text, catalog, path)
    if errors:
        print_errors(errors, source=path)
        if not program.queries:
            print(f"xscl serve: {len(errors)} error(s) and no valid query in --cel-queries; "
                  "nothing ran", file=sys.stderr)  # fmt: skip
            return None
        print(f"xscl serve: {len(errors)} error(s) in --cel-queries: those queries are "
              f"rejected, the other {len(program.queries)} run", file=sys.stderr)  # fmt: skip
    return CelServe(str(Path(path).resolve()), json.dumps(catalog), slack, len(errors))


def start(
    spark: Any,
    cel: CelServe,
    home: Path,
    name: str,
    epoch: int,
    registry: Path,
    fence: str | None,
    once: bool,
    trigger_seconds: float,
    feed_entries: int,
) -> Any:
    """Seed an empty CEL registry from the file, fork the CEL job's epoch folders and start
    its query (driver, once per run, as the lease's holder); the StreamingQuery."""
    from xscl.service.cel_subscriptions import CelSubscriptionLog, cel_registry
    from xscl.service.pair.epochs import EpochFolders, start_epoch
    from xscl.spark_plugin.cel.plan import CelPlan, start_cel_job

    log = CelSubscriptionLog(cel_registry(home, name), json.loads(cel.catalog))
    if not log.versions():
        text = Path(cel.path).read_text(encoding="utf-8")
        log.subscribe(text, source=cel.path)  # its errors were printed by ``check``
    else:
        print(f"xscl serve: CEL queries of the registry {log.folder} ({len(log.live().ids())} "
              f"subscribed); --cel-queries {cel.path} is only checked (use 'xscl cel "
              "subscribe' / 'xscl cel unsubscribe')", file=sys.stderr)  # fmt: skip

    xscl = EpochFolders(home, name, epoch)
    folders = EpochFolders(home, f"{name}.cel", epoch)
    start_epoch(folders)
    plan = CelPlan(
        cel_registry=str(log.folder),
        catalog=log.catalog_json,
        output=str(folders.results),
        checkpoint=str(folders.checkpoint),
        name=f"{name}.cel",
        xscl_results=str(xscl.results_root),
        xscl_checkpoints=str(xscl.checkpoint.parent),
        xscl_registry=str(registry),
        events=str(events_folder(home, name)),
        slack=cel.slack,
        once=once,
        trigger_seconds=trigger_seconds,
        feed_entries=feed_entries,
        feed_base_url=folders.feeds_link.as_uri(),
        fence=fence,
    )
    return start_cel_job(spark, plan)
