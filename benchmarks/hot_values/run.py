"""Hot values: the stateful stage's slowest task over its mean, spread vs not spread.

    python benchmarks/hot_values/run.py                 # both workloads, local[2]
    python benchmarks/hot_values/run.py --workloads zipf --items 4000

Issue 18's target: the slowest task of the stateful stage within 1.5x the mean, on
the feeds' real hot values and on a Zipf 1.2 synthetic workload.

1. Workloads (one stream each, items in time order, one spool each):
   * ``zipf``: ``--items`` synthetic items ``<item><v>vK</v></item>`` whose value's
     rank K follows Zipf(``--zipf``, default 1.2) over ``--values`` values (the top
     value is in about a fifth of the items), one second apart; subscriptions
     ``S//item->x[./v->a] FOLLOWED BY {a = b, Ws} S//item->y[./v->b]`` for W in
     1..``--windows``;
   * ``feeds``: the quick feed items of ``benchmarks/spark_rss`` (the small-web blogs
     and the youthopp stream) with subscriptions joining on their most repeated
     leaves, ``category`` and ``creator`` (authors), windows 1..``--windows`` minutes.
2. Each workload runs the streaming job (``benchmarks/spark_rss``'s ``measure_spark``
   in a fresh process, ``--once``, ``--max-records-per-batch --batch``) twice:
   *spread* (``--hot-salts 8 --hot-threshold T``) and *not spread* (``--hot-salts 1``),
   and the in-process engine once; the result counts must be equal (exit 1 if not).
3. ``task max/mean`` = per micro-batch, the slowest state partition's join-group time
   over the mean partition's (the batch markers, ``join_groups`` times itself):
   median and worst over the batches after the first (which also registers the
   subscriptions in each worker).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "spark_rss"))
sys.path.insert(1, str(HERE.parents[1]))

import workload  # noqa: E402  (benchmarks/spark_rss/workload.py)


def _spark_rss() -> Any:
    """``benchmarks/spark_rss/run.py`` as a module (its measurement workers)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "spark_rss_run", HERE.parent / "spark_rss" / "run.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: 2026-01-01T00:00:00Z in microseconds.
BASE = 1_767_225_600_000_000


def zipf_spool(work: Path, items: int, values: int, s: float, seed: int) -> Path:
    """``items`` synthetic items with Zipf(``s``)-ranked values, one second apart."""
    from xscl.connectors.document import Document
    from xscl.connectors.spool import Spool

    rng = random.Random(seed)
    weights = [1.0 / (k**s) for k in range(1, values + 1)]
    ranks = rng.choices(range(1, values + 1), weights, k=items)
    docs = [
        Document("S", f"z{i}", BASE + i * 1_000_000, f"<item><n>{i}</n><v>v{rank}</v></item>")
        for i, rank in enumerate(ranks)
    ]
    spool = work / "spool-zipf"
    with Spool(spool, sync=False) as written:
        written.append(docs)
    return spool


def zipf_queries(windows: int) -> list[str]:
    return [
        f"z{w}: S//item->x[./v->a] FOLLOWED BY {{a = b, {w}s}} S//item->y[./v->b];"
        for w in range(1, windows + 1)
    ]


def feed_queries(windows: int) -> list[str]:
    stream = workload.STREAM
    return [
        f"{leaf}{w}: {stream}/*[./{leaf}->a] FOLLOWED BY {{a = b, {w}m}} {stream}/*[./{leaf}->b];"
        for leaf in ("category", "creator")
        for w in range(1, windows + 1)
    ]


def skew(spark: dict[str, Any]) -> tuple[float | None, float | None, int]:
    """Median and worst max/mean over the batches after the first; batches counted."""
    ratios = spark["task_skews"][1:]
    if not ratios:
        return None, None, 0
    return statistics.median(ratios), max(ratios), len(ratios)


def hot_count(home: Path) -> int:
    """Values the job recorded hot (its first epoch's hot-values folder)."""
    from xscl.service.pair.epochs import EpochFolders
    from xscl.spark_plugin.job.hot_values import read as hot_values

    folder = EpochFolders(home, "xscl", 1).hot_values
    return len(hot_values(str(folder))) if folder.is_dir() else 0


def run(args: argparse.Namespace) -> int:
    run_worker = _spark_rss().run_worker

    work = Path(tempfile.mkdtemp(prefix="xscl-hot-"))
    rows: list[dict[str, Any]] = []
    began = time.perf_counter()
    for kind in args.workloads:
        if kind == "zipf":
            spool = zipf_spool(work, args.items, args.values, args.zipf, args.seed)
            texts = zipf_queries(args.windows)
        else:
            folders = [
                f
                for f in workload.feed_folders()
                if f.name in ("feeds-kagi-smallweb", "feeds-stream-youthopp")
            ]
            workload.spool_feed_items(folders, work / "feeds")
            spool = work / "feeds" / "spool"
            texts = feed_queries(args.windows)
        queries = work / f"queries-{kind}.xscl"
        workload.write_queries(queries, texts)
        common = ["--queries", str(queries), "--spool", str(spool)]
        local = run_worker(["--measure", "local", *common], work / f"local-{kind}.log")
        print(f"  {kind}: local {json.dumps(local)}", flush=True)
        for label, job_args in (
            ("spread", f"--hot-salts 8 --hot-threshold {args.threshold}"),
            ("not spread", "--hot-salts 1"),
        ):
            home = work / f"home-{kind}-{label.replace(' ', '-')}"
            spark = run_worker(
                ["--measure", "spark", *common, "--home", str(home), "--batch", str(args.batch),
                 "--master", args.master, "--job-args", job_args],
                work / f"spark-{kind}-{label.replace(' ', '-')}.log",
            )  # fmt: skip
            if "error" not in spark:
                spark["skew_p50"], spark["skew_max"], spark["skew_batches"] = skew(spark)
                spark["hot_values"] = hot_count(home)
            print(f"  {kind} {label}: spark {json.dumps(spark)}", flush=True)
            rows.append({"workload": kind, "label": label, "local": local, "spark": spark})
            shutil.rmtree(home, ignore_errors=True)
    print()
    header = (
        f"{'workload':>8} | {'hot values':>10} | {'items':>6} | {'results spark/local':>19} | "
        f"{'job it/s':>8} | {'task max/mean p50':>17} | {'worst':>5} | {'batches':>7} | "
        f"{'hot found':>9}"
    )
    print(header)
    print("-" * len(header))
    failures = 0
    for row in rows:
        spark, local = row["spark"], row["local"]
        if "error" in spark or "error" in local:
            print(f"{row['workload']:>8} | {row['label']:>10} | error: {spark.get('error')}")
            failures += 1
            continue
        p50 = spark["skew_p50"]
        worst = spark["skew_max"]
        print(
            f"{row['workload']:>8} | {row['label']:>10} | {spark['documents']:>6,} | "
            f"{spark['results']:>9,}/{local['results']:<9,} | "
            f"{spark['documents'] / spark['seconds']:>8,.0f} | "
            f"{'-' if p50 is None else f'{p50:.2f}':>17} | "
            f"{'-' if worst is None else f'{worst:.2f}':>5} | {spark['skew_batches']:>7} | "
            f"{spark['hot_values']:>9}"
        )
        if spark["results"] != local["results"]:
            print(f"  RESULT COUNTS DIFFER: spark {spark['results']}, local {local['results']}")
            failures += 1
    with open("/proc/loadavg", encoding="ascii") as handle:
        load = " ".join(handle.read().split()[:3])
    print(
        f"\n{args.master}, --max-records-per-batch {args.batch}, hot threshold "
        f"{args.threshold}, load average {load}, wall {time.perf_counter() - began:.0f} s"
    )
    shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--workloads", nargs="+", choices=("zipf", "feeds"), default=["zipf", "feeds"]
    )
    parser.add_argument("--items", type=int, default=6000, help="zipf: items (default 6000)")
    parser.add_argument("--values", type=int, default=1000, help="zipf: distinct values")
    parser.add_argument("--zipf", type=float, default=1.2, help="zipf: exponent (default 1.2)")
    parser.add_argument("--windows", type=int, default=10, help="subscriptions per leaf")
    parser.add_argument("--batch", type=int, default=1000, help="max records per batch")
    parser.add_argument("--threshold", type=int, default=100, help="--hot-threshold when spread")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--seed", type=int, default=12)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
