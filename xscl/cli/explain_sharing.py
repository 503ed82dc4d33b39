"""``xscl explain --sharing``: the sharing groups of a query file or of a job's registry.

* ``FILE``: the file's valid queries compiled in this process (normal form, template
  assignment) and grouped by the union-find oracle (``sharing.keys``); no Spark.
* ``--home H --name N``: the live queries of the job's registry, on Spark: its
  subscribe events not compiled yet are compiled first (``compile_registry``, as
  ``xscl serve`` does at its start), then the graph is built from the compiled table
  and its components found on the executors (``sharing.registry``).

Both print the same summary (``sharing.summary``). Exit 0; 2 for the input (an
unreadable or invalid FILE, no registry ``XSCL-S015``, nothing live ``XSCL-S016``,
a bad option); 1 when Spark cannot start (no Java, a home that cannot be written).
Runs on the driver, once.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xscl.cli.common import cannot_read, load_queries, os_error_reason, print_errors
from xscl.errors import JavaNotFoundError, NoSubscriptionsError, XsclSyntaxError
from xscl.service.sharing.summary import SharingSummary

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def run_sharing(args: argparse.Namespace) -> int:
    """``xscl explain --sharing`` with parsed options; the exit code."""
    if (args.file is None) == (args.home is None):
        print("xscl explain --sharing: give a query FILE or the --home of a job (not both)",
              file=sys.stderr)  # fmt: skip
        return 2
    if args.top < 0:
        print("xscl explain --sharing: --top must be 0 or more", file=sys.stderr)
        return 2
    if args.file is not None:
        return _from_file(args)
    return _from_registry(args)


def _from_file(args: argparse.Namespace) -> int:
    from xscl.service.compiled.table import CompiledQuery
    from xscl.service.sharing.summary import in_process
    from xscl.templates.shapes import ShapeMemo

    try:
        loaded = load_queries(args.file)
    except (OSError, XsclSyntaxError) as exc:
        return cannot_read("explain", args.file, exc)
    print_errors(loaded.errors, source=args.file)
    memo = ShapeMemo()
    normals = [memo.normal(q) for q in loaded.queries]
    summary = in_process([CompiledQuery(n, memo.assignment(n)) for n in normals], args.top)
    _show(args, f"sharing groups of {args.file}", {"file": args.file}, summary)
    return 0 if not loaded.errors else 2


def _from_registry(args: argparse.Namespace) -> int:
    from xscl.cli.subscribe import registry_problem
    from xscl.spark_plugin.sharing.registry import check_registry, registry_sharing

    home = Path(args.home)
    folder = home / "registry" / args.name
    try:
        problem = registry_problem(home, args.name, folder)
        if problem is not None:
            raise NoSubscriptionsError.from_code("XSCL-S015", problem)
        check_registry(folder)  # before Spark starts
        with _session(args) as spark:
            _compile(spark, folder)
            summary = registry_sharing(spark, folder, args.top)
    except NoSubscriptionsError as exc:
        print(f"xscl explain: {exc}", file=sys.stderr)
        return 2
    except JavaNotFoundError as exc:
        print(f"xscl explain: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"xscl explain: cannot use --home {args.home}: {os_error_reason(exc)}",
              file=sys.stderr)  # fmt: skip
        return 1
    title = f"sharing groups of job {args.name} (registry {folder})"
    _show(args, title, {"registry": str(folder)}, summary)
    return 0


@contextmanager
def _session(args: argparse.Namespace) -> Iterator[SparkSession]:
    """The active SparkSession (tests, a notebook), or one built under ``--home`` and
    stopped on exit."""
    from pyspark.sql import SparkSession

    from xscl.spark_plugin.session import build_session

    active = SparkSession.getActiveSession()
    if active is not None:
        yield active
        return
    spark = build_session(args.master, "xscl-explain-sharing", home=args.home)
    try:
        yield spark
    finally:
        spark.stop()


def _compile(spark: SparkSession, folder: Path) -> None:
    """Compile the registry's pending subscribe events on the executors; a failure leaves
    them uncompiled, and the summary counts their queries as not compiled."""
    from xscl.spark_plugin.compile_job import compile_registry

    try:
        events = compile_registry(spark, folder)
    except Exception as exc:  # the summary says what was left out
        print(f"xscl explain: compiling the subscriptions failed: {exc}", file=sys.stderr)
        return
    if events:
        print(f"xscl explain: compiled subscription event(s) {', '.join(map(str, events))}",
              file=sys.stderr)  # fmt: skip


def _show(
    args: argparse.Namespace, title: str, where: dict[str, Any], summary: SharingSummary
) -> None:
    if args.json:
        print(json.dumps({**where, **summary.to_json()}, sort_keys=True))
    else:
        print("\n".join([title, *summary.lines()]))
