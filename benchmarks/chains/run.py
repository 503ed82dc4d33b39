"""Chain-heavy subscriptions over the real feed items: the Spark job against ``--engine
local``, for one or more checkouts side by side (issue 35).

    python benchmarks/chains/run.py                                  # this checkout
    python benchmarks/chains/run.py --checkout before=/path/to/wt --checkout after=.

The workload (``benchmarks/spark_rss/mixed.py``, ``chain_subscriptions``): the items
of ``feeds-kagi-smallweb`` (``web``) and ``feeds-stream-youthopp`` (``youth``) in
event-time order; a third of the queries three-block chains keyed by one author or
one category (the job partitions them by that value), a fifth chains joined by two
values, a fifth joins without a value (``{TRUE, 1h}``), the rest PUBLISH pairs (a
query publishing pairs of posts by one author, another joining that stream). The
chains joined by two values and the PUBLISH pairs run in the job's chain group (one
partition); the others are spread over the value groups.

Each checkout runs ``benchmarks/spark_rss/run.py --workloads chains`` of *this*
checkout (so every checkout gets the same queries and items) with ``PYTHONPATH`` on
that checkout, in a fresh process per measurement, and its table is printed under the
checkout's name: the job's CPU over every process of its tree and wall time, the
local engine's on the same items (COST), items/s, p50/p95 batch time, the slowest
join task over the mean, and the result counts of both engines (they must agree).
Measure with nothing else running on the machine.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve()
REPO = HERE.parents[2]
SPARK_RSS = REPO / "benchmarks" / "spark_rss" / "run.py"


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
    parser.add_argument("--work", help="work folder (default: a fresh temp dir)")
    args = parser.parse_args(argv)
    checkouts = [c.split("=", 1) for c in args.checkout] or [["this", str(REPO)]]
    work = Path(args.work or tempfile.mkdtemp(prefix="xscl-chains-"))
    failures = 0
    for name, path in checkouts:
        root = Path(path).resolve()
        if not (root / "xscl").is_dir():
            print(f"{name}: {root} is not an xscl checkout", file=sys.stderr)
            return 2
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, check=False,
        ).stdout.strip()  # fmt: skip
        print(f"\n=== {name}: {root} ({head or 'not a git checkout'})", flush=True)
        command = [
            sys.executable, str(SPARK_RSS), "--workloads", "chains",
            "--counts", *map(str, args.counts), "--master", *args.master,
            "--batch", *map(str, args.batch), "--work", str(work / name), "--keep",
        ]  # fmt: skip
        env = dict(os.environ, PYTHONPATH=str(root))
        done = subprocess.run(command, env=env, check=False)
        failures += done.returncode != 0
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
