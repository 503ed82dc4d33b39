"""Join state benchmark: where the stored documents live, on disk or in the driver's heap.

    python benchmarks/join_state/run.py                      # 20k and 80k documents
    python benchmarks/join_state/run.py --documents 5000     # a quick look

The streaming job's driver half (``EnginePipeline.process_rows``: Stage 1 on the
driver, joins, result and Atom sinks, join state) is fed generated RSS-like items
in micro-batches, once with ``join_state`` on disk (``JoinStateStore``, SQLite)
and once in memory (``LocalEngine``'s own state, no snapshots), each mode in a
fresh Python process so its memory figure is its own. Spark is not started: the
join state is a driver-side matter, and leaving the JVM out keeps the figures
about it. Windows are ``INF``, so nothing is evicted and the state only grows -
the case of DESIGN.md invariant 4.

Items: ``<item>`` with a unique ``guid``, an ``author`` (one of ``--authors``), a
``ref`` that names an earlier item's guid for one item in ten, and a ~1 KB
``description``. Queries join ``ref`` to ``guid`` (a reply follows its post)
and ``author`` to ``author`` with a finite-looking but INF window, over a few
variants, so each item joins few others and results stay a small part of the
cost.

Disk mode runs once per ``--hold-mb`` (how much of the state the driver keeps
holding between batches; the rest is read back when a batch can reach it).
Per run: items/s over the whole run, p50/p95 of the per-batch seconds, the
documents read back from disk per batch (median), the driver's RSS growth (peak
minus start), the state's bytes on disk, result count (must be equal between
the runs; checked).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from rss_memory import PeakRss, current_rss  # benchmarks/rss_memory.py

BATCH = 1000
QUERIES = """
replies: S//item->i[./guid->g] FOLLOWED BY {g = r, INF} S//item->j[./ref->r];
same_author: S//item->i[./author->a][./guid->g] FOLLOWED BY {a = b AND g = r, INF}
    S//item->j[./author->b][./ref->r];
thread: S//item->i[./guid->g] FOLLOWED BY {g = r, INF} S//item->j[./ref->r][./guid->h]
    FOLLOWED BY {h = s, INF} S//item->k[./ref->s];
"""


def items(count: int, authors: int, seed: int) -> list[dict[str, Any]]:
    """Spool-like rows: offset, stream, docid, ts (micros), xml."""
    rng = random.Random(seed)
    words = [f"w{n}" for n in range(500)]
    rows = []
    for n in range(count):
        ref = f"<ref>g{rng.randrange(n)}</ref>" if n and rng.random() < 0.1 else ""
        text = " ".join(rng.choices(words, k=170))
        xml = (
            f"<item><guid>g{n}</guid><author>a{rng.randrange(authors)}</author>{ref}"
            f"<title>item {n}</title><description>{text}</description></item>"
        )
        rows.append(
            {"offset": n, "stream": "S", "docid": f"d{n}", "ts": 1_700_000_000_000_000 + n * 1000,
             "xml": xml}
        )  # fmt: skip
    return rows


def measure(mode: str, count: int, authors: int, hold_mb: int, work: Path) -> dict[str, Any]:
    """One mode, in this process."""
    from xscl.lang.parser import parse_queries
    from xscl.spark_plugin.join_state import JoinStateStore
    from xscl.spark_plugin.pipeline import EnginePipeline

    rows = items(count, authors, seed=1)
    store = JoinStateStore(work / "state" / "join.sqlite") if mode == "disk" else None
    pipeline = EnginePipeline(
        parse_queries(QUERIES),
        work / "spool",
        work / "out",
        join_state=store,
        hold_bytes=hold_mb * 2**20,
    )
    seconds: list[float] = []
    start_rss = current_rss()
    began = time.perf_counter()
    with PeakRss(period=0.02) as rss:
        for batch_id, lo in enumerate(range(0, count, BATCH)):
            started = time.perf_counter()
            pipeline.process_rows(batch_id, rows[lo : lo + BATCH])
            seconds.append(time.perf_counter() - started)
    total = time.perf_counter() - began
    results = sum(pipeline.results_by_batch.values())
    return {
        "mode": mode if mode == "memory" else f"disk/{hold_mb}",
        "documents": count,
        "results": results,
        "seconds": total,
        "p50": statistics.median(seconds),
        "p95": sorted(seconds)[max(0, round(0.95 * len(seconds)) - 1)],
        "rss_growth": rss.peak - start_rss,
        "state_bytes": store.bytes_on_disk() if store is not None else 0,
        "loaded_p50": statistics.median(pipeline.loaded_by_batch.values())
        if pipeline.loaded_by_batch
        else None,
    }


def run_mode(mode: str, count: int, authors: int, hold_mb: int) -> dict[str, Any]:
    """``measure`` in a fresh interpreter (its own memory figure); its JSON."""
    with tempfile.TemporaryDirectory(prefix="xscl-join-state-") as work:
        command = [
            sys.executable, str(Path(__file__).resolve()), "--measure", mode,
            "--documents", str(count), "--authors", str(authors), "--work", work,
            "--hold-mb", str(hold_mb),
        ]  # fmt: skip
        done = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=False)
        lines = done.stdout.strip().splitlines()
        if done.returncode != 0 or not lines:
            return {"mode": mode, "documents": count, "error": f"exit {done.returncode}"}
        result: dict[str, Any] = json.loads(lines[-1])
        return result


def print_table(rows: Sequence[dict[str, Any]]) -> None:
    head = (
        f"{'documents':>9} | {'state':>9} | {'items/s':>8} | {'p50 batch':>9} | {'p95 batch':>9} | "
        f"{'loaded/batch':>12} | {'RSS growth':>10} | {'on disk':>9} | {'results':>8}"
    )
    print(head)
    print("-" * len(head))
    for row in rows:
        if "error" in row:
            print(f"{row['documents']:>9,} | {row['mode']:>9} | {row['error']}")
            continue
        loaded = "-" if row["loaded_p50"] is None else f"{row['loaded_p50']:,.0f}"
        print(
            f"{row['documents']:>9,} | {row['mode']:>9} | "
            f"{row['documents'] / row['seconds']:>8,.0f} | {row['p50']:>7.2f} s | "
            f"{row['p95']:>7.2f} s | {loaded:>12} | {row['rss_growth'] / 2**20:>6,.0f} MiB | "
            f"{row['state_bytes'] / 2**20:>5,.0f} MiB | {row['results']:>8,}"
        )
    load = os.getloadavg()
    print(f"\nbatches of {BATCH} documents; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--documents", type=int, nargs="+", default=[20_000, 80_000])
    parser.add_argument("--authors", type=int, default=2000, help="distinct author values")
    parser.add_argument("--modes", nargs="+", choices=("disk", "memory"),
                        default=["disk", "memory"])
    parser.add_argument(
        "--hold-mb",
        type=int,
        nargs="+",
        default=[256, 16, 0],
        help="disk mode: MB of stored documents the driver holds between batches, each run",
    )
    parser.add_argument("--measure", choices=("disk", "memory"), help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        out = measure(args.measure, args.documents[0], args.authors, args.hold_mb[0],
                      Path(args.work))
        print(json.dumps(out), flush=True)
        return 0
    rows = []
    for count in args.documents:
        runs = [(mode, hold) for mode in args.modes
                for hold in (args.hold_mb if mode == "disk" else [0])]
        for mode, hold in runs:
            row = run_mode(mode, count, args.authors, hold)
            print(f"  {json.dumps(row)}", flush=True)
            rows.append(row)
    print()
    print_table(rows)
    failures = 0
    for count in args.documents:
        found = {r["results"] for r in rows if r["documents"] == count and "error" not in r}
        if len(found) > 1:
            print(f"{count}: RESULT COUNTS DIFFER between modes: {sorted(found)}")
            failures += 1
    failures += sum(1 for r in rows if "error" in r)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
