"""Load test of the subscription API (issue 37): concurrent clients subscribe,
unsubscribe and page results on loopback while a job runs; then the registry is
checked against what they were told, and latencies are printed per endpoint.

    python benchmarks/api_load/run.py                      # 50 clients, 100 req/s, 30 s
    python benchmarks/api_load/run.py --job writer         # no Spark: a results writer
    python benchmarks/api_load/run.py --job-nice 10        # the job under nice -n 10

``--job serve`` (the default): ``xscl serve`` on ``local[2]`` over the rss example's
queries, fed documents every second, applies the clients' registry events as they
come (``jobs.ServedJob``); after the load the run waits for the job to record where
every event took effect. ``--job writer``: a thread commits results for every current
subscription (``jobs.ResultsWriter``). The API is ``xscl api`` in its own process
(uvicorn), one token per client. Bounded: ``--duration`` seconds and
``--max-requests`` requests at ``--rate`` requests/s in all (``load.run_clients``).
Latencies are measured by the clients (httpx, asyncio, one process), so they include
the load generator's own delays. Exit 1 when the registry disagrees with the clients
(a subscription lost or applied twice), a request failed, or the job fell behind.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.api_load.jobs import ResultsWriter, ServedJob  # noqa: E402
from benchmarks.api_load.load import (  # noqa: E402
    ENDPOINT,
    READS,
    LoadReport,
    percentile,
    registry_problems,
    run_clients,
    wait_applied,
)
from tests.api.server import free_port, start_api  # noqa: E402
from xscl.results.read import committed_markers  # noqa: E402
from xscl.service.api.tokens import TokenStore  # noqa: E402
from xscl.service.subscriptions import SubscriptionLog  # noqa: E402


def table(report: LoadReport) -> str:
    rows = [("endpoint", "requests", "p50 ms", "p99 ms", "max ms", "statuses")]
    everything: list[float] = []
    for op, label in ENDPOINT.items():
        values = report.latencies.get(op, [])
        everything += values
        if not values:
            rows.append((label, "0", "-", "-", "-", "-"))
            continue
        statuses = ", ".join(
            f"{status}: {n}" for (kind, status), n in sorted(report.statuses.items()) if kind == op
        )
        rows.append(
            (
                label,
                str(len(values)),
                f"{percentile(values, 0.5) * 1000:.1f}",
                f"{percentile(values, 0.99) * 1000:.1f}",
                f"{max(values) * 1000:.1f}",
                statuses,
            )
        )
    reads = [v for op in READS for v in report.latencies.get(op, [])]
    for label, values in (("all reads", reads), ("all", everything)):
        if values:
            rows.append(
                (
                    label,
                    str(len(values)),
                    f"{percentile(values, 0.5) * 1000:.1f}",
                    f"{percentile(values, 0.99) * 1000:.1f}",
                    f"{max(values) * 1000:.1f}",
                    "",
                )
            )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--rate", type=float, default=100.0, help="requests/s, all clients")
    parser.add_argument("--duration", type=float, default=30.0, help="seconds of load")
    parser.add_argument("--max-requests", type=int, default=10_000)
    parser.add_argument("--subscribes", type=int, default=6, help="new ids per client, at most")
    parser.add_argument("--job", choices=("serve", "writer"), default="serve")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument(
        "--job-nice", type=int, default=0, help="start xscl serve under nice -n N (the API: 0)"
    )
    parser.add_argument("--job-timeout", type=float, default=300.0, help="seconds to start")
    parser.add_argument("--work", help="keep the home and logs here (default: a temp dir)")
    args = parser.parse_args(argv)

    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="xscl-api-load-"))
    home = work / "home"
    store = TokenStore(home)
    tokens = {f"c{n:02d}": store.create(f"c{n:02d}") for n in range(args.clients)}
    log = SubscriptionLog(home / "registry" / "xscl")
    print(f"load average at the start: {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores)")
    port = free_port()
    api = start_api(home, port)
    job: ServedJob | ResultsWriter = (
        ServedJob(home, args.master, work / "serve.log", args.job_nice)
        if args.job == "serve"
        else ResultsWriter(home)
    )
    try:
        if isinstance(job, ServedJob):
            print(f"starting xscl serve on {args.master} (log: {work / 'serve.log'}) ...")
            started = time.monotonic()
            job.start(args.job_timeout)
            print(f"the job committed its first batch after {time.monotonic() - started:.0f} s")
        else:
            job.start()
        batches_before = len(committed_markers(home / "results" / "xscl"))
        report = run_clients(
            f"http://127.0.0.1:{port}",
            tokens,
            rate=args.rate,
            duration=args.duration,
            max_requests=args.max_requests,
            subscribes=args.subscribes,
        )
        batches = len(committed_markers(home / "results" / "xscl")) - batches_before
        applied = wait_applied(log, 120.0) if args.job == "serve" else None
    finally:
        job.stop()
        api.terminate()
        api.wait()
    problems = registry_problems(log, report)
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    print()
    print(
        f"{args.clients} clients, {report.requests} requests in {report.seconds:.1f} s: "
        f"{report.requests / report.seconds:.1f} requests/s (target {args.rate:g}), "
        f"beside {'xscl serve on ' + args.master if args.job == 'serve' else 'a results writer'}"
    )
    print(table(report))
    subscribed = sum(len(c.subscribed) for c in report.clients)
    unsubscribed = sum(len(c.unsubscribed) for c in report.clients)
    read = sum(c.results_read for c in report.clients)
    print()
    print(
        f"acknowledged: {subscribed} subscribes, {unsubscribed} unsubscribes; "
        f"{read} results read by cursor"
    )
    print(f"the job committed {batches} batches of results during the load")
    print(f"registry check: {len(problems)} problems (lost or applied twice)")
    for problem in problems[:20]:
        print(f"  {problem}")
    if applied is not None:
        print(f"events the job applied: {applied[0]} of {applied[1]}")
    for failure in report.failures[:20]:
        print(f"failed: {failure}")
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    behind = applied is not None and applied[0] != applied[1]
    return 1 if problems or report.failures or behind else 0


if __name__ == "__main__":
    sys.exit(main())
