"""Sharing groups: the union-find oracle in one process vs the DataFrame components on local[2].

    python benchmarks/sharing/run.py                       # 10k / 100k / 1M subscriptions
    python benchmarks/sharing/run.py --counts 10000 100000

The subscriptions are ``benchmarks/spark_rss``'s generator (thesis 6.6.1, windows
INF) over the leaves ``benchmarks/registration`` uses. Per size, in a fresh
registry: ``SubscriptionLog.subscribe`` events of ``EVENT_QUERIES`` subscriptions
each (validated as ``xscl subscribe`` does), each compiled in this process by the
compile job's own task function (``compile_in_process``: ``CompileParts``,
``compiled_batch``) before the next. One event of 1M queries compiled in one
process needs ~20 GB (its parse ~6 GB, its one Arrow batch ~6 GB, past Arrow's
2 GiB per string column), more than this machine gives a process. Then:

* ``oracle s``: the event's compiled queries read back as a worker reads them
  (``read_event``) and grouped by ``sharing.summary.in_process`` (union-find; what
  ``xscl explain --sharing FILE`` runs), the read not counted;
* on ``local[2]`` (``xscl explain --sharing --home``'s session settings; the session's
  start not counted), ``DataFrameComponents``: ``graph s`` (live queries and
  their keys from the registry's event files and compiled table), ``components s``
  (large-star / small-star; ``rounds``), ``summary s``, and their sum ``spark s``.

``same`` says whether the Spark summary equals the oracle's (counts and the five
largest groups). Times are wall seconds; the machine may be shared, so the load
average is printed at the start and after each size.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "spark_rss"))
import workload  # benchmarks/spark_rss/workload.py: the subscription generator

from xscl.service.compiled.table import read_event
from xscl.service.sharing.summary import SharingSummary, in_process
from xscl.service.subscriptions import SubscriptionLog
from xscl.spark_plugin.compile_job import compile_in_process
from xscl.spark_plugin.sharing.registry import sharing_graph, summarize
from xscl.spark_plugin.sharing.star import DataFrameComponents

HERE = Path(__file__).resolve().parent
#: Subscriptions per subscribe event (one compiled Arrow batch each).
EVENT_QUERIES = 100_000
#: Groups compared between the two summaries.
TOP = 5
COMPARED = ("queries", "templates", "definitions", "published_streams", "groups", "singletons",
            "largest")  # fmt: skip


def _leaves() -> tuple[str, ...]:
    """``benchmarks/registration``'s leaves (the full feed set's, per spark_rss)."""
    path = HERE.parent / "registration" / "run.py"
    spec = importlib.util.spec_from_file_location("registration", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return tuple(module.LEAVES)


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


@dataclass(frozen=True)
class Row:
    """One size's measurements (wall seconds)."""

    count: int
    prepare: float
    oracle: float
    graph: float
    components: float
    summary: float
    rounds: int | None
    groups: int
    same: bool

    def line(self) -> str:
        spark = self.graph + self.components + self.summary
        return (
            f"{self.count:>9,} | {self.prepare:>9.1f} | {self.oracle:>8.2f} | "
            f"{self.graph:>7.2f} | {self.components:>12.2f} | {self.rounds!s:>6} | "
            f"{self.summary:>9.2f} | {spark:>7.2f} | {self.groups:>6} | "
            f"{'yes' if self.same else 'NO':>4} | {_load()}"
        )


def measure(spark: Any, count: int, leaves: Sequence[str], work: Path) -> Row:
    """One size: prepare the registry, then the oracle and the Spark components."""
    registry = work / f"registry-{count}"
    started = time.perf_counter()
    log = SubscriptionLog(registry)
    texts = workload.subscriptions(count, leaves, seed=count)
    for first in range(0, count, EVENT_QUERIES):
        chunk = "\n".join(texts[first : first + EVENT_QUERIES])
        assert compile_in_process(registry, log.subscribe(chunk, source=f"b{first}").version)
    prepare = time.perf_counter() - started
    compiled = [query for version in log.versions() for query in read_event(registry, version)]
    started = time.perf_counter()
    oracle = in_process(compiled, TOP)
    oracle_seconds = time.perf_counter() - started
    del compiled

    started = time.perf_counter()
    graph = sharing_graph(spark, registry)
    graphed = time.perf_counter()
    components = DataFrameComponents()
    found = components.label(graph.edges.select("src", "dst"))
    labelled = time.perf_counter()
    summary = summarize(graph, found, components.name, TOP, labelled)
    shutil.rmtree(registry, ignore_errors=True)
    return Row(
        count,
        prepare,
        oracle_seconds,
        graphed - started,
        labelled - graphed,
        summary.seconds,
        found.rounds,
        summary.groups,
        _same(oracle, summary),
    )


def _same(oracle: SharingSummary, spark: SharingSummary) -> bool:
    a, b = asdict(oracle), asdict(spark)
    return all(a[field] == b[field] for field in COMPARED)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--counts", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--work", help="scratch folder (default: a temporary one, removed)")
    args = parser.parse_args(argv)
    from xscl.spark_plugin.session import build_session

    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="xscl-sharing-"))
    leaves = _leaves()
    print(f"load average at the start: {_load()}", flush=True)
    spark = build_session("local[2]", "xscl-sharing-benchmark", home=work / "home")
    spark.range(2).count()  # the session is up
    print(f"{'subs':>9} | {'prepare s':>9} | {'oracle s':>8} | {'graph s':>7} | "
          f"{'components s':>12} | {'rounds':>6} | {'summary s':>9} | {'spark s':>7} | "
          f"{'groups':>6} | same | load")  # fmt: skip
    try:
        for count in args.counts:
            print(measure(spark, count, leaves, work).line(), flush=True)
    finally:
        spark.stop()
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
