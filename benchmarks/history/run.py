"""History on subscribe over the real feed set: how long until a new subscription's
history results are committed (issue 37's target: 7 days within 30 s on ``local[2]``).

    python benchmarks/history/run.py                          # 7d, 30d, 365d, 3650d; 300 queries
    python benchmarks/history/run.py --histories 7d --subscriptions 1000

1. Items: both feed corpora of the *mixed* workload (``feeds-kagi-smallweb`` as stream
   ``web``, ``feeds-stream-youthopp`` as ``youth``), polled once into a spool under
   ``--work`` and replayed in event-time order (``benchmarks/spark_rss/mixed.py``).
2. Subscriptions: ``--subscriptions`` queries of the mixed workload (value joins with
   finite and INF windows, chains, keyword alerts, PUBLISH pairs;
   ``mixed.mixed_subscriptions``), subscribed in one event with ``--history D`` and
   taking effect at the spool's end: "now", with the whole spool behind it.
3. Per history: the span (``service.history.history_span``) and the history's first
   scan and its commit (``service.history_runs.HistoryRuns.step``), timed from the
   step's start to its return, twice: on Spark (``SparkScanner``: the job's plan over
   the span on the executors, ``--master``) and in process (``InProcessScanner``: the
   engine of ``xscl run``, this process only), each into a results folder of its own.
   Both must commit the same result ids (the script fails otherwise).

Printed per history: the documents in the span, the results, and for each path the
wall seconds and the CPU seconds of the whole process tree (this process, the JVM and
its Python workers; ``/proc``). Spark's first run in the process also starts the JVM's
caches: a warm-up scan of the shortest history runs first and is not reported.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "spark_rss"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import mixed  # the mixed workload's corpora, spool and queries
import workload
from run import tree_cpu_seconds  # benchmarks/spark_rss/run.py

from xscl.connectors.spool import SpoolReader
from xscl.lang.durations import parse_duration
from xscl.results.read import result_ids
from xscl.service.history import history_span
from xscl.service.history_runs import HistoryRuns, HistoryScanner, InProcessScanner
from xscl.service.subscriptions import SubscriptionLog


def own_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def tree_cpu() -> float:
    """CPU seconds of this process and every descendant (the JVM, its Python workers)."""
    return own_cpu_seconds() + tree_cpu_seconds(os.getpid())


def timed_step(
    folder: Path, text: str, history: int, spool: Path, scanner: Callable[[Path], HistoryScanner]
) -> tuple[float, float, set[str]]:
    """Subscribe ``text`` with ``history`` at the spool's end and run the first step with
    a new scanner (``scanner(folder)``); (wall s, tree CPU s, result ids committed)."""
    shutil.rmtree(folder, ignore_errors=True)
    log = SubscriptionLog(folder / "registry")
    event = log.subscribe(text, source="bench.xscl", history=history)
    log.record_applied(event.version, SpoolReader(spool).next_offset())
    runs = HistoryRuns(
        log, str(spool), folder / "history", scanner(folder), allowed_lateness=0, report=print
    )
    cpu, wall = tree_cpu(), time.perf_counter()
    runs.step()
    wall, cpu = time.perf_counter() - wall, tree_cpu() - cpu
    committed = result_ids(folder / "history" / str(event.version))
    return wall, cpu, committed


def spark_session(master: str, home: Path) -> Any:
    from xscl.spark_plugin.session import ROCKSDB_PROVIDER, build_session

    return build_session(
        master,
        "xscl-history-bench",
        {
            "spark.sql.shuffle.partitions": "4",
            "spark.ui.enabled": "false",
            "spark.sql.streaming.stateStore.providerClass": ROCKSDB_PROVIDER,
        },
        home=home,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--histories", nargs="+", default=["7d", "30d", "365d", "3650d"])
    parser.add_argument("--subscriptions", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--work", type=Path, default=Path("/tmp/xscl-bench-history"))
    args = parser.parse_args(argv)

    spool = args.work / "mixed" / "spool"
    if not spool.is_dir():
        count = mixed.spool_mixed_items(args.work / "mixed")
        print(f"spool: {count} items (web, youth) in {spool}")
    items = workload.read_items(spool)
    text = "\n".join(mixed.mixed_subscriptions(args.subscriptions, items, args.seed)) + "\n"
    reader = SpoolReader(spool)
    end = reader.next_offset()
    spark = spark_session(args.master, args.work / "home")
    from xscl.spark_plugin.history_scan import SparkScanner

    def spark_scanner(folder: Path) -> HistoryScanner:
        return SparkScanner(spark, str(spool), 0, str(folder / "scans"))

    def local_scanner(folder: Path) -> HistoryScanner:
        return InProcessScanner(str(spool), allowed_lateness=0)

    histories = sorted((parse_duration(h), h) for h in args.histories)
    timed_step(args.work / "warm-up", text, histories[0][0], spool, spark_scanner)

    print(
        f"{args.subscriptions} subscriptions (mixed workload), {end} items, "
        f"subscribed at the spool's end; master {args.master}"
    )
    header = (
        "history", "documents", "results",
        "spark wall s", "spark CPU s", "in-process wall s", "in-process CPU s",
    )  # fmt: skip
    print(" | ".join(header))
    for micros, label in histories:
        span = history_span(reader, end, micros)
        s_wall, s_cpu, s_ids = timed_step(args.work / "spark", text, micros, spool, spark_scanner)
        l_wall, l_cpu, l_ids = timed_step(args.work / "local", text, micros, spool, local_scanner)
        if s_ids != l_ids:
            print(f"MISMATCH at {label}: spark {len(s_ids)} ids, in process {len(l_ids)}")
            return 1
        cells = (
            label, f"{span.since - span.start:,}", f"{len(s_ids):,}",
            f"{s_wall:.1f}", f"{s_cpu:.1f}", f"{l_wall:.1f}", f"{l_cpu:.1f}",
        )  # fmt: skip
        print(" | ".join(cells), flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
