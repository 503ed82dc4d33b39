"""Channels benchmark: the heavy XSCL workload with and without channels, side by side.

    python benchmarks/channels/run.py                      # 10k subscriptions, every item
    python benchmarks/channels/run.py --counts 10000 100000
    python benchmarks/channels/run.py --quick              # 10k, fewer items

The *heavy* workload of ``benchmarks/spark_rss`` (thesis 6.6.1 subscriptions over the
shared feeds' items, windows INF: ~18 results per item at 10k subscriptions, ~180 at
100k, most of them one match shared by many queries). Per subscription count the
streaming job runs twice on ``--master`` (default ``local[2]``), each in a fresh
process (``spark_rss/run.py --measure spark``: ``xscl serve --once``): with channels
(the default) and with ``--no-channels`` (one JSON line per result). The table gives:

* ``result MiB``: bytes of the committed result part files (not the Atom feeds);
* ``results/s``: results over the job's own seconds (query start until it stops);
* ``CPU-s``: CPU seconds of the whole process tree (driver, JVM, Python workers);
* ``bytes x`` / ``rate x``: without channels over with (bytes), with over without (rate).

Both runs must commit the same result ids (read back from the parts: ``result_ids``,
which decodes channel lines); the script says so, or fails.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
SPARK_RSS = HERE.parents[1] / "spark_rss" / "run.py"
sys.path.insert(0, str(SPARK_RSS.parent))
sys.path.insert(1, str(HERE.parents[2]))

import workload  # noqa: E402  (benchmarks/spark_rss/workload.py)


def _spark_rss() -> Any:
    """``benchmarks/spark_rss/run.py``: its heavy workload and its measurement."""
    spec = importlib.util.spec_from_file_location("spark_rss_run", SPARK_RSS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


spark_rss = _spark_rss()


def measure(
    queries: Path, spool: Path, home: Path, master: str, batch: int, channels: bool, log: Path
) -> dict[str, Any]:
    """One run of the job in a fresh process; its measurement and committed result ids."""
    from xscl.results.read import result_ids

    shutil.rmtree(home, ignore_errors=True)
    extra = [
        "--measure", "spark", "--queries", str(queries), "--spool", str(spool),
        "--home", str(home), "--batch", str(batch), "--master", master,
        "--results-format", "jsonl",
    ]  # fmt: skip
    if not channels:
        extra.append("--job-args=--no-channels")
    out = spark_rss.run_worker(extra, log)
    results = home / "results"
    out["ids"] = result_ids(results / "xscl") if (results / "xscl").is_dir() else set()
    return out


def row(n: int, label: str, run: dict[str, Any]) -> str:
    if "error" in run:
        return f"{n:>9,} | {label:>8} | failed: {run['error']}"
    rate = run["results"] / run["seconds"] if run["seconds"] else 0.0
    return (
        f"{n:>9,} | {label:>8} | {run['results']:>9,} | {run['results_bytes'] / 2**20:>10.1f} | "
        f"{rate:>9,.0f} | {run['seconds']:>7.1f} | {run['tree_cpu_s']:>7.1f}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--counts", type=int, nargs="+", default=[10_000])
    parser.add_argument("--quick", action="store_true", help="fewer items (two feed folders)")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--batch", type=int, default=spark_rss.BATCH_RECORDS)
    parser.add_argument(
        "--channels-only",
        action="store_true",
        help="skip the runs without channels (heavy 100k writes ~24 GB without them)",
    )
    parser.add_argument("--work", help="work folder (default: a fresh temp dir, removed)")
    args = parser.parse_args(argv)
    folders = workload.feed_folders()
    if not folders:
        print(f"no feeds-* folders under {workload.DATA}: nothing to measure", file=sys.stderr)
        return 2
    if args.quick:
        folders = [f for f in folders if f.name in ("feeds-kagi-smallweb", "feeds-stream-youthopp")]
    work = Path(args.work or tempfile.mkdtemp(prefix="xscl-channels-"))
    work.mkdir(parents=True, exist_ok=True)
    began = time.perf_counter()
    spool, draw = spark_rss._workload("heavy", work, folders)
    items = len(workload.read_items(spool))
    lines = []
    failures = 0
    for n in args.counts:
        queries = work / f"subs-heavy-{n}.xscl"
        draw(queries, n)
        runs = {}
        for channels in (True,) if args.channels_only else (True, False):
            label = "on" if channels else "off"
            runs[label] = measure(
                queries, spool, work / f"home-{n}-{label}", args.master, args.batch, channels,
                work / f"spark-{n}-{label}.log",
            )  # fmt: skip
            shown = {k: v for k, v in runs[label].items() if k not in ("ids", "task_skews")}
            print(f"  heavy {n} channels {label}: {json.dumps(shown)}", flush=True)
            shutil.rmtree(work / f"home-{n}-{label}", ignore_errors=True)
        on = runs["on"]
        lines.append(row(n, "on", on))
        if "off" not in runs:
            failures += "error" in on
            continue
        off = runs["off"]
        lines.append(row(n, "off", off))
        if "error" in on or "error" in off:
            failures += 1
            continue
        if on["ids"] != off["ids"] or on["results"] != len(on["ids"]):
            lines.append(f"RESULT IDS DIFFER: {len(on['ids'])} with, {len(off['ids'])} without")
            failures += 1
            continue
        bytes_x = off["results_bytes"] / max(1, on["results_bytes"])
        rate_x = off["seconds"] / on["seconds"] if on["seconds"] else float("nan")
        cpu_x = off["tree_cpu_s"] / on["tree_cpu_s"] if on["tree_cpu_s"] else float("nan")
        lines.append(
            f"{'':>9} | {'':>8} | same {len(on['ids']):,} result ids | bytes x {bytes_x:.1f} | "
            f"rate x {rate_x:.2f} | CPU-s x {cpu_x:.2f}"
        )
    print()
    print("     subs | channels |   results | result MiB | results/s |   job s |   CPU-s")
    print("\n".join(lines))
    print(f"items = {items} (heavy, one stream), --max-records-per-batch {args.batch}, "
          f"{args.master}, wall {time.perf_counter() - began:.0f} s")  # fmt: skip
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
