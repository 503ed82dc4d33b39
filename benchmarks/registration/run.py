"""Registration: normal form and template assignment per query vs once per shape.

    python benchmarks/registration/run.py                   # 1k / 10k / 100k subscriptions
    python benchmarks/registration/run.py --counts 1000 10000 --spark

Registering subscriptions is every engine's start-up (and restart) cost: the
Spark job registers them all before its first micro-batch. The subscriptions
are ``benchmarks/spark_rss``'s (thesis 6.6.1 generator, windows INF) over the
leaves that benchmark selects on the full feed set. Per size, side by side,
each step in a fresh Python process (start-up is measured cold: the normal
form's own LRU caches start empty), alternating, the median of
``--repeat`` runs, in CPU seconds:

* ``per query``: ``assign_template(normalize(q))`` for every query (before
  ``ShapeMemo``);
* ``per shape``: the same through one ``ShapeMemo`` (``xscl.templates.shapes``);
* ``engine``: ``LocalEngine(queries)`` as the engines build it (shape memo,
  R_T rows, Stage 1 claims, output patterns).

``shapes`` = distinct queries once their ids are taken out. Parsing is not
measured here (``benchmarks/mmqjp`` and docs/architecture.md cover it).

A second table splits what each Python worker of the streaming job paid before
its first task when it registered from the query texts, CPU seconds per step: parse
the registry event's file, normal form, template assignment (both through one
``ShapeMemo``), and adding to the job's two engines (R_T rows, Stage 1 definitions
and requirements, output plans, tries, routing).

A third table is a worker's registration (``xscl.service.live_queries.queries_at``),
CPU seconds, medians of ``--repeat`` fresh processes run alternately: from the
texts; from the compiled table (``xscl.spark_plugin.compiled``: Parquet, no parse,
no normal form, no assignment); and loading a pickle of the engines the texts built
(what a worker would read if the built engines were snapshotted). Beside them: the
compiled table's size, compiling it in one process (CPU), and the compile job's wall
time on ``local[2]`` (``--spark``; the session's start excluded).

The machine may be shared: CPU time (``time.process_time``) is reported, and the
load average at the start and the end.
"""

from __future__ import annotations

import argparse
import json
import os
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
    start = time.process_time()
    STEPS[step](queries)
    seconds = time.process_time() - start
    return {"seconds": seconds, "shapes": len({query_shape(q) for q in queries})}


def _registry(count: int, folder: Path) -> int:
    """A registry in ``folder`` with one subscribe event of ``count`` subscriptions."""
    from xscl.service.subscriptions import SubscriptionLog

    log = SubscriptionLog(folder)
    event = log.subscribe("\n".join(workload.subscriptions(count, LEAVES, seed=count)), source="b")
    log.record_applied(event.version, 0)
    return event.version


def measure_split(count: int) -> dict[str, float]:
    """A worker's registration from texts, step by step (CPU seconds, this process)."""
    from xscl.service.compiled.table import CompiledQuery
    from xscl.service.live_queries import JobQueries
    from xscl.service.subscriptions import SubscriptionLog

    folder = Path(tempfile.mkdtemp(prefix="xscl-registration-"))
    try:
        version = _registry(count, folder)
        event = SubscriptionLog(folder).event(version)
        clock = time.process_time
        start = clock()
        parsed = event.queries()
        parse = clock()
        built = JobQueries()
        normals = [built.shapes.normal(q) for q in parsed]
        normal = clock()
        compiled = [CompiledQuery(n, built.shapes.assignment(n)) for n in normals]
        assign = clock()

        class Given:
            def compiled(self, _event: object) -> list[CompiledQuery]:
                return compiled

        built.apply(version, SubscriptionLog(folder), 0, Given())
        built.routing()
        add = clock()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {
        "parse": parse - start,
        "normal": normal - parse,
        "assign": assign - normal,
        "add": add - assign,
    }


def measure_worker(source: str, folder: str) -> dict[str, float]:
    """One worker's registration from ``folder`` (CPU seconds, this process): from the
    texts, from the compiled table, or a pickle of the texts' engines loaded back."""
    from xscl.service import live_queries as queries

    clock = time.process_time
    if source != "table":
        shutil.rmtree(Path(folder) / "compiled")
    start = clock()
    built = queries.queries_at(folder, 1)
    built.routing()
    seconds = clock() - start
    if source != "pickle":
        return {"seconds": seconds}
    sys.setrecursionlimit(100_000)
    data = pickle.dumps(built, protocol=pickle.HIGHEST_PROTOCOL)
    start = clock()
    pickle.loads(data)
    return {"seconds": clock() - start, "bytes": len(data)}


def measure_spark(folder: str) -> dict[str, float]:
    """The compile job's wall time on ``local[2]`` over the registry in ``folder``."""
    from xscl.spark_plugin.compile_job import compile_registry
    from xscl.spark_plugin.session import build_session

    scratch = Path(tempfile.mkdtemp(prefix="xscl-registration-spark-"))
    try:
        spark = build_session("local[2]", "xscl-registration", {"spark.ui.enabled": "false"},
                              home=scratch)  # fmt: skip
        spark.range(2).count()  # the session and its Python workers are up
        start = time.perf_counter()
        events = compile_registry(spark, folder)
        seconds = time.perf_counter() - start
        spark.stop()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    assert events == [1], events
    return {"seconds": seconds}


def _child(*args: str) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=True
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def workers_table(counts: Sequence[int], repeat: int, spark: bool) -> None:
    """The second and third tables (see the module docstring)."""
    from xscl.service.compiled.table import compiled_folder
    from xscl.spark_plugin.compile_job import compile_in_process

    print(f"\n{'subs':>8} | {'parse s':>7} | {'normal s':>8} | {'assign s':>8} | "
          f"{'add s':>6} | {'total s':>7}")  # fmt: skip
    for count in counts:
        rows = [_child("--measure", "split", "--counts", str(count)) for _ in range(repeat)]
        step = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
        print(f"{count:>8,} | {step['parse']:>7.2f} | {step['normal']:>8.2f} | "
              f"{step['assign']:>8.2f} | {step['add']:>6.2f} | {sum(step.values()):>7.2f}",
              flush=True)  # fmt: skip
    print(f"\n{'subs':>8} | {'texts s':>7} | {'table s':>7} | {'speed-up':>8} | "
          f"{'pickle s':>8} | {'table MiB':>9} | {'pickle MiB':>10} | {'compile s':>9} | "
          f"{'job local[2] s':>14}")  # fmt: skip
    sources = ("texts", "table", "pickle")
    for count in counts:
        folder = Path(tempfile.mkdtemp(prefix="xscl-registration-"))
        try:
            _registry(count, folder)
            start = time.process_time()
            compile_in_process(folder, 1)
            compile_seconds = time.process_time() - start
            table = sum(p.stat().st_size for p in compiled_folder(folder, 1).iterdir())
            seconds: dict[str, list[float]] = {s: [] for s in sources}
            size = 0.0
            for round_ in range(repeat):  # alternate the order: the machine is shared
                for source in sources if round_ % 2 == 0 else reversed(sources):
                    copy = Path(tempfile.mkdtemp(prefix="xscl-registration-"))
                    shutil.copytree(folder, copy, dirs_exist_ok=True)
                    row = _child("--measure", "worker", "--source", source, "--folder", str(copy))
                    shutil.rmtree(copy, ignore_errors=True)
                    seconds[source].append(row["seconds"])
                    size = row.get("bytes", size)
            job = "-"
            if spark:
                shutil.rmtree(folder / "compiled")
                job = f"{_child('--measure', 'spark', '--folder', str(folder))['seconds']:.2f}"
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        texts, table_s, pickled = (statistics.median(seconds[s]) for s in sources)
        print(f"{count:>8,} | {texts:>7.2f} | {table_s:>7.2f} | {texts / table_s:>7.2f}x | "
              f"{pickled:>8.2f} | {table / 2**20:>9.1f} | {size / 2**20:>10.1f} | "
              f"{compile_seconds:>9.2f} | {job:>14}", flush=True)  # fmt: skip


def run_worker(step: str, count: int) -> dict[str, float]:
    return _child("--measure", step, "--counts", str(count))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--counts", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--repeat", type=int, default=3, help="fresh processes per step (median)")
    parser.add_argument(
        "--spark", action="store_true", help="also time the compile job on local[2]"
    )
    parser.add_argument(
        "--measure", choices=[*sorted(STEPS), "split", "worker", "spark"], help=argparse.SUPPRESS
    )
    parser.add_argument("--source", choices=["texts", "table", "pickle"], help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure == "split":
        print(json.dumps(measure_split(args.counts[0])))
        return 0
    if args.measure == "worker":
        print(json.dumps(measure_worker(args.source, args.folder)))
        return 0
    if args.measure == "spark":
        print(json.dumps(measure_spark(args.folder)))
        return 0
    if args.measure:
        print(json.dumps(measure(args.measure, args.counts[0])))
        return 0
    print(f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
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
    workers_table(args.counts, args.repeat, args.spark)
    print(f"\nload average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
