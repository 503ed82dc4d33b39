"""Chain-heavy subscriptions over the real feed items: the Spark job against ``--engine
local``, for one or more checkouts side by side (issue 35).

    python benchmarks/chains/run.py                                  # this checkout
    python benchmarks/chains/run.py --checkout before=/path/to/wt --checkout after=.
    python benchmarks/chains/run.py --join-plans adaptive probe cache  # plans side by side
    python benchmarks/chains/drift.py                                # the drift run

The workload (``benchmarks/spark_rss/mixed.py``, ``chain_subscriptions``): the items
of ``feeds-kagi-smallweb`` (``web``) and ``feeds-stream-youthopp`` (``youth``) in
event-time order; a third of the queries three-block chains keyed by one author or
one category (the job partitions them by that value), a fifth chains joined by two
values, a fifth joins without a value (``{TRUE, 1h}``), the rest PUBLISH pairs (a
query publishing pairs of posts by one author, another joining that stream). Every
query is spread over the value groups: the chains joined by two values one hop at a
time, the match of their first two blocks travelling to the group of the second value
as a composite event through the job's published spool, a micro-batch later (before
that, they ran in the job's one chain group); the PUBLISH pairs' second query reads
what the first publishes from the same spool.

Each checkout runs ``benchmarks/spark_rss/run.py --workloads chains`` of *this*
checkout (so every checkout gets the same queries and items) with ``PYTHONPATH`` on
that checkout, in a fresh process per measurement, and its table is printed under the
checkout's name: the job's CPU over every process of its tree and wall time, the
local engine's on the same items (COST), items/s, p50/p95 batch time, the slowest
join task over the mean, the state's bytes at the end, and the result counts of both
engines (they must agree). The job runs with ``--allowed-lateness`` (default 1h): the
items arrive in event-time order, so it decides what the job evicts, not its results.
Measure with nothing else running on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
REPO = HERE.parents[2]
SPARK_RSS = REPO / "benchmarks" / "spark_rss" / "run.py"
#: a measurement as ``spark_rss/run.py`` prints it
RUN_LINE = re.compile(
    r"^  chains (?P<n>\d+)(?: batch \d+)?: (?P<engine>local|spark) [^{]*(?P<json>\{.*\})$"
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--checkout",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="a checkout to measure, side by side (default: this one, as 'this')",
    )
    parser.add_argument("--counts", type=int, nargs="+", default=[300], help="subscriptions")
    parser.add_argument(
        "--master", nargs="+", default=["local[2]"], help="Spark masters (default: local[2])"
    )
    parser.add_argument(
        "--batch", type=int, nargs="+", default=[500], help="max records per micro-batch"
    )
    parser.add_argument(
        "--allowed-lateness",
        default="1h",
        help="the job's --allowed-lateness (default %(default)s; the items arrive in "
        "event-time order, so it changes what the job evicts, not its results)",
    )
    parser.add_argument(
        "--join-plans",
        nargs="+",
        default=["adaptive"],
        choices=("adaptive", "probe", "cache"),
        help="the job's --join-plan, one run each, side by side (default: adaptive)",
    )
    parser.add_argument("--work", help="work folder (default: a fresh temp dir)")
    args = parser.parse_args(argv)
    checkouts = [c.split("=", 1) for c in args.checkout] or [["this", str(REPO)]]
    work = Path(args.work or tempfile.mkdtemp(prefix="xscl-chains-"))
    failures = 0
    rows: list[dict[str, Any]] = []
    for name, path in checkouts:
        root = Path(path).resolve()
        if not (root / "xscl").is_dir():
            print(f"{name}: {root} is not an xscl checkout", file=sys.stderr)
            return 2
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, check=False,
        ).stdout.strip()  # fmt: skip
        for plan in args.join_plans:
            label = name if len(args.join_plans) == 1 else f"{name}-{plan}"
            print(f"\n=== {label}: {root} ({head or 'not a git checkout'})", flush=True)
            job_args = f"--allowed-lateness {args.allowed_lateness}"
            if plan != "adaptive":  # older checkouts have no --join-plan: theirs probes
                job_args += f" --join-plan {plan}"
            command = [
                sys.executable, str(SPARK_RSS), "--workloads", "chains",
                "--counts", *map(str, args.counts), "--master", *args.master,
                "--batch", *map(str, args.batch), "--work", str(work / label), "--keep",
                "--job-args", job_args,
            ]  # fmt: skip
            env = dict(os.environ, PYTHONPATH=str(root))
            done = subprocess.run(command, env=env, check=False, stdout=subprocess.PIPE, text=True)
            print(done.stdout, end="", flush=True)
            failures += done.returncode != 0
            rows.extend(measured(label, done.stdout))
    print_table(rows)
    print_quarters(rows)
    return 1 if failures else 0


def measured(checkout: str, output: str) -> Iterator[dict[str, Any]]:
    """The runs ``spark_rss/run.py`` printed (one JSON object per line), by checkout."""
    local: dict[str, Any] = {}
    for line in output.splitlines():
        found = RUN_LINE.match(line)
        if found is None:
            continue
        run = json.loads(found["json"])
        if found["engine"] == "local":
            local = run
        else:
            yield {"checkout": checkout, "n": int(found["n"]), "spark": run, "local": local}


def print_table(rows: list[dict[str, Any]]) -> None:
    """The runs side by side: CPU of the job's whole process tree, rates, batch times,
    the slowest join task over the mean, the state's bytes, the result counts."""
    head = (
        f"{'checkout':>18} | {'subs':>5} | {'master':>23} | {'job CPU':>8} | {'wall':>7} | "
        f"{'it/s':>5} | {'steady it/s':>11} | {'p50 batch':>9} | {'p95 batch':>9} | "
        f"{'task max/mean':>13} | {'state MiB':>9} | {'ckpt MiB':>8} | {'local CPU':>9} | "
        f"{'results spark/local':>19}"
    )
    print()
    print(head)
    print("-" * len(head))
    for row in rows:
        spark, local = row["spark"], row["local"]
        if "error" in spark:
            print(f"{row['checkout']:>18} | {row['n']:>5} | {spark['error']}")
            continue
        steady = spark["steady_items"] / spark["steady_s"] if spark["steady_s"] else 0.0
        p50, p95 = (f"{(v or 0) / 1000:.2f} s" for v in (spark["p50_ms"], spark["p95_ms"]))
        skew = spark["task_skew_p50"], spark["task_skew_max"]
        skew_cell = "-" if skew[0] is None else f"{skew[0]:.2f}/{skew[1]:.2f}"
        print(
            f"{row['checkout']:>18} | {row['n']:>5} | {spark['master']:>23} | "
            f"{spark['tree_cpu_s']:>6.1f} s | {spark['wall']:>5.1f} s | "
            f"{spark['documents'] / spark['seconds']:>5.0f} | {steady:>11.0f} | {p50:>9} | "
            f"{p95:>9} | {skew_cell:>13} | {spark['state_bytes'] / 2**20:>9.1f} | "
            f"{spark['checkpoint_bytes'] / 2**20:>8.1f} | "
            f"{local.get('total_cpu_s', 0):>7.1f} s | "
            f"{str(spark['results']) + '/' + str(local.get('results', '-')):>19}"
        )
    load = os.getloadavg()
    print(
        f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; job CPU: every process of "
        "the Spark job; state MiB: the state store's memory at the last batch (Spark's "
        "memoryUsedBytes); ckpt MiB: the checkpoint folder at the end (every state version "
        "Spark keeps); local CPU: --engine local in one process on the same items"
    )


def print_quarters(rows: list[dict[str, Any]]) -> None:
    """The state store's bytes at the end of each quarter of the run's batches, and the
    mean batch time in each: whether the cost per batch stays flat as history grows."""
    print()
    head = (
        f"{'checkout':>18} | {'subs':>5} | {'master':>23} | "
        f"{'state MiB by quarter':>27} | {'mean batch s by quarter':>27}"
    )
    print(head)
    print("-" * len(head))
    for row in rows:
        spark = row["spark"]
        if "error" in spark or "state_by_quarter" not in spark:
            continue
        state = " ".join(f"{b / 2**20:6.1f}" for b in spark["state_by_quarter"])
        times = " ".join(f"{ms / 1000:6.2f}" for ms in spark["batch_ms_by_quarter"])
        print(
            f"{row['checkout']:>18} | {row['n']:>5} | {spark['master']:>23} | "
            f"{state:>27} | {times:>27}"
        )


if __name__ == "__main__":
    sys.exit(main())
