"""The collection PySpark's daemon runs after every task, with a worker's subscriptions built.

    python benchmarks/worker_gc/run.py                  # 1k and 10k subscriptions
    python benchmarks/worker_gc/run.py --counts 1000 10000 100000

A reused Python worker runs ``gc.collect()`` after each task (``pyspark/daemon.py``).
Per subscription count (the ``benchmarks/spark_rss`` generator, selective windows),
in a fresh process: subscribe the queries into a registry, compile it, build the
worker's subscriptions (``LiveQueries.at``, what a Stage 1 or join task does first),
then time ``gc.collect()`` (median of ``--repeat``) as the daemon would run it:

* ``as built``: the objects left to the collector (before ``job/worker_heap.py``);
* ``frozen``: after ``worker_heap.settled()`` (what the job does now).

CPU seconds (``time.process_time``); the objects the collector tracks are counted.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "spark_rss"))
sys.path.insert(1, str(HERE.parents[1]))

import workload  # noqa: E402  (benchmarks/spark_rss/workload.py)

LEAVES = ["guid", "summary", "updated", "id", "encoded", "published", "subtitle", "content"]


def measure(count: int, repeat: int) -> dict[str, float]:
    """One count, in this process (run by ``main`` in a fresh interpreter)."""
    from xscl.service import live_queries as queries
    from xscl.service.subscriptions import SubscriptionLog
    from xscl.spark_plugin.compile_job import compile_in_process

    folder = Path(tempfile.mkdtemp(prefix="xscl-worker-gc-"))
    texts = workload.subscriptions(count, LEAVES, seed=count, window="1h")
    log = SubscriptionLog(folder)
    log.subscribe("\n".join(texts) + "\n", source="generated.xscl")
    log.record_applied(1, 0)
    compile_in_process(folder, 1)
    start = time.process_time()
    gc.unfreeze()
    built = queries.LiveQueries().at(str(folder), 1)
    build = time.process_time() - start
    assert len(built.subscriptions.outputs) == count

    def collect() -> float:
        timings = []
        for _ in range(repeat):
            began = time.process_time()
            gc.collect()
            timings.append(time.process_time() - began)
        return statistics.median(timings)

    frozen = collect()  # LiveQueries.at settled the heap already
    frozen_objects = len(gc.get_objects())
    gc.unfreeze()
    as_built = collect()
    tracked = len(gc.get_objects())
    return {
        "subscriptions": count,
        "build_s": build,
        "tracked_objects": tracked,
        "collect_as_built_s": as_built,
        "tracked_frozen": frozen_objects,
        "collect_frozen_s": frozen,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--counts", type=int, nargs="+", default=[1000, 10_000])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one is not None:
        print(json.dumps(measure(args.one, args.repeat)))
        return 0
    rows = []
    for count in args.counts:
        done = subprocess.run(
            [sys.executable, __file__, "--one", str(count), "--repeat", str(args.repeat)],
            stdout=subprocess.PIPE,
            text=True,
            check=True,
        )
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    print(
        f"{'subs':>8} | {'build s':>7} | {'tracked objects':>15} | {'gc.collect as built':>19} | "
        f"{'tracked, frozen':>15} | {'gc.collect frozen':>17}"
    )
    for r in rows:
        print(
            f"{r['subscriptions']:>8,} | {r['build_s']:>7.2f} | {r['tracked_objects']:>15,} | "
            f"{r['collect_as_built_s'] * 1000:>16.1f} ms | {r['tracked_frozen']:>15,} | "
            f"{r['collect_frozen_s'] * 1000:>14.1f} ms"
        )
    with open("/proc/loadavg", encoding="ascii") as handle:
        print(f"CPU time, median of {args.repeat}; load average {handle.read().split()[0]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
