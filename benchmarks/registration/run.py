"""Registration: normal form and template assignment per query vs once per shape.

    python benchmarks/registration/run.py                   # 1k / 10k / 100k subscriptions
    python benchmarks/registration/run.py --counts 10000 --repeat 5

Registering subscriptions is every engine's start-up (and restart) cost: the
Spark job registers them all before its first micro-batch. The subscriptions
are ``benchmarks/spark_rss``'s (thesis 6.6.1 generator, windows INF) over the
leaves that benchmark selects on the full feed set. Per size, side by side,
each step in a fresh Python process (start-up is measured cold: the normal
form's own LRU caches start empty), alternating, the median of
``--repeat`` runs:

* ``per query``: ``assign_template(normalize(q))`` for every query (before
  ``ShapeMemo``);
* ``per shape``: the same through one ``ShapeMemo`` (``xscl.templates.shapes``);
* ``engine``: ``LocalEngine(queries)`` as the engines build it (shape memo,
  R_T rows, Stage 1 claims, output patterns).

``shapes`` = distinct queries once their ids are taken out. Parsing is not
measured here (``benchmarks/mmqjp`` and docs/architecture.md cover it).

A second table is what each Python worker of the streaming job pays before its
first task (``xscl.spark_plugin.job.queries.queries_at``: the registry's texts
parsed, normalised, assigned and registered in the job's two engines), beside
loading the same built subscriptions from a pickle: the "snapshot" a worker or a
restart could read instead of registering.
"""

from __future__ import annotations

import argparse
import json
import pickle
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "spark_rss"))
import workload  # benchmarks/spark_rss/workload.py: the subscription generator

from xscl.engine import LocalEngine
from xscl.lang.ast import Query
from xscl.lang.normal_form import normalize
from xscl.lang.parser import parse_queries
from xscl.templates import ShapeMemo, assign_template, query_shape

#: the leaves ``benchmarks/spark_rss`` selects on the full feed set (its "leaves" line)
LEAVES = (
    "link",
    "guid",
    "title",
    "description",
    "pubDate",
    "id",
    "updated",
    "published",
    "summary",
    "comments",
)


def per_query(queries: Sequence[Query]) -> None:
    for query in queries:
        assign_template(normalize(query))


def per_shape(queries: Sequence[Query]) -> None:
    memo = ShapeMemo()
    for query in queries:
        memo.assignment(memo.normal(query))


STEPS: dict[str, Callable[[Sequence[Query]], object]] = {
    "per_query": per_query,
    "per_shape": per_shape,
    "engine": LocalEngine,
}


def measure(step: str, count: int) -> dict[str, float]:
    """One step over ``count`` fresh subscriptions, in this process (the worker side)."""
    queries = parse_queries("\n".join(workload.subscriptions(count, LEAVES, seed=count)))
    start = time.perf_counter()
    STEPS[step](queries)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "shapes": len({query_shape(q) for q in queries})}


def measure_job_worker(count: int) -> dict[str, float]:
    """A job worker's registration from a registry folder, then a pickle of its result
    loaded back (this process)."""
    from xscl.spark_plugin.job.queries import queries_at
    from xscl.spark_plugin.subscriptions import SubscriptionLog

    folder = Path(tempfile.mkdtemp(prefix="xscl-registration-"))
    try:
        log = SubscriptionLog(folder)
        text = "\n".join(workload.subscriptions(count, LEAVES, seed=count))
        event = log.subscribe(text, source="bench")
        log.record_applied(event.version, 0)
        start = time.perf_counter()
        built = queries_at(str(folder), event.version)
        build = time.perf_counter() - start
        sys.setrecursionlimit(100_000)
        data = pickle.dumps(built, protocol=pickle.HIGHEST_PROTOCOL)
        start = time.perf_counter()
        pickle.loads(data)
        load = time.perf_counter() - start
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {"build": build, "load": load, "pickle_bytes": len(data)}


def run_worker(step: str, count: int) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, __file__, "--measure", step, "--counts", str(count)],
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--counts", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--repeat", type=int, default=3, help="fresh processes per step (median)")
    parser.add_argument("--measure", choices=[*sorted(STEPS), "job_worker"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure == "job_worker":
        print(json.dumps(measure_job_worker(args.counts[0])))
        return 0
    if args.measure:
        print(json.dumps(measure(args.measure, args.counts[0])))
        return 0
    print(
        f"{'subs':>8} | {'shapes':>7} | {'per query s':>11} | {'per shape s':>11} | "
        f"{'speed-up':>8} | {'engine s':>8} | {'engine q/s':>10}"
    )
    for count in args.counts:
        seconds: dict[str, list[float]] = {step: [] for step in STEPS}
        shapes = 0.0
        for round_ in range(args.repeat):  # alternate the order: the machine is shared
            order = list(STEPS) if round_ % 2 == 0 else list(reversed(STEPS))
            for step in order:
                row = run_worker(step, count)
                seconds[step].append(row["seconds"])
                shapes = row["shapes"]
        before, after, engine = (statistics.median(seconds[s]) for s in STEPS)
        print(
            f"{count:>8,} | {shapes:>7,.0f} | {before:>11.2f} | {after:>11.2f} | "
            f"{before / after:>7.2f}x | {engine:>8.2f} | {count / engine:>10,.0f}",
            flush=True,
        )
    print(f"\n{'subs':>8} | {'job worker s':>12} | {'pickle load s':>13} | {'pickle MiB':>10}")
    for count in args.counts:
        rows = [run_worker("job_worker", count) for _ in range(args.repeat)]
        build = statistics.median(r["build"] for r in rows)
        load = statistics.median(r["load"] for r in rows)
        size = statistics.median(r["pickle_bytes"] for r in rows) / 2**20
        print(f"{count:>8,} | {build:>12.2f} | {load:>13.2f} | {size:>10.1f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
