"""``xscl serve`` with many subscriptions on one machine (issue 34's 1M run).

    python benchmarks/subscriptions/serve_scale.py 1000000
    python benchmarks/subscriptions/serve_scale.py 100000 --items 500 --sample 5000

N subscriptions of ``run.py``'s kind ``every`` (keyword, regex, equality, range and
two-block joins, the feeds' vocabulary) are written as one ``--queries`` file, and
``--items`` reduced feed items (``run.load_items``, stream ``F``) into a spool. Then
``xscl serve --once --master M`` runs in a child process, as a user would start it on
a fresh home, while this script samples the child's process tree every
``--period`` seconds (``/proc``):

* the start-up's phases, each stamped with the seconds since the start (the lines
  ``xscl serve: start-up: ...`` on its stderr, and the first micro-batch's line);
* per role (the driver's Python, the JVM, Spark's Python daemon, its workers) the
  largest resident set, proportional set (PSS: pages a forked worker shares with
  the daemon counted once) and private set of one process (pages it has alone: for a
  forked worker, what it copied), and the tree's largest PSS in all;
* the CPU seconds of the whole tree (``/proc`` per process, children included) beside
  the wall time.

Then a sample of ``--sample`` subscriptions (every N/sample-th) is registered alone in
``LocalEngine`` and fed the same items: its results must equal the job's results of
those subscriptions, record for record (``--engine local`` on a sample). Run it alone,
from the folder of the checkout measured.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run  # the subscription kinds and the feed items

from xscl.connectors.spool import Spool
from xscl.engine import LocalEngine
from xscl.lang.parser import parse_queries
from xscl.results.read import read_results

TICK = os.sysconf("SC_CLK_TCK")
XSCL = shutil.which("xscl") or str(Path(sys.executable).parent / "xscl")


#: below this much available memory (``MemAvailable``) the job is killed, not the machine
GUARD = 3 * 2**30


# ------------------------------------------------------------------ the tree
def available() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 1 << 62


def _children() -> dict[int, list[int]]:
    children: dict[int, list[int]] = defaultdict(list)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children[ppid].append(int(entry.name))
    return children


def tree(pid: int) -> list[int]:
    """``pid`` and its descendants."""
    children = _children()
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, ()))
    return out


def role(pid: int) -> str:
    try:
        cmd = (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return "gone"
    if "java" in cmd.split(" ", 1)[0]:
        return "jvm"
    if "worker_daemon" in cmd or "pyspark.daemon" in cmd:
        return "python daemon"  # or a worker it forked (same cmdline): see ``sample``
    if "xscl" in cmd:
        return "driver python"
    return "other"


def sample(pid: int) -> dict[int, dict[str, Any]]:
    """Per process of the tree: role, RSS, PSS and CPU seconds (children included)."""
    out = {}
    for p in tree(pid):
        base = Path("/proc") / str(p)
        try:
            fields = (base / "stat").read_text().rsplit(")", 1)[1].split()
            rollup = (base / "smaps_rollup").read_text().splitlines()
        except OSError:
            continue
        kb = {line.split(":")[0]: int(line.split()[1]) for line in rollup[1:] if line.split()}
        out[p] = {
            "role": role(p),
            "ppid": int(fields[1]),
            "rss": kb.get("Rss", 0) * 1024,
            "pss": kb.get("Pss", 0) * 1024,
            # pages it has alone: for a forked worker, what it copied from the daemon
            "private": (kb.get("Private_Clean", 0) + kb.get("Private_Dirty", 0)) * 1024,
            "cpu": sum(int(f) for f in fields[11:15]) / TICK,
        }
    for info in out.values():  # a daemon's child is a worker it forked
        parent = out.get(info["ppid"])
        if info["role"] == "python daemon" and parent and parent["role"] == "python daemon":
            info["role"] = "python worker"
    for p, info in out.items():  # the compile job's daemon and workers apart
        daemon = {"python daemon": p, "python worker": info["ppid"]}.get(info["role"])
        if daemon is not None and _compile_job(daemon):
            info["role"] = "compile job's " + info["role"].split()[1]
    return out


def _compile_job(pid: int) -> bool:
    """Is ``pid`` the compile job's daemon (``worker_daemon.COMPILE_ENV`` set)?"""
    try:
        environ = (Path("/proc") / str(pid) / "environ").read_bytes()
    except OSError:
        return False
    return b"XSCL_COMPILE_JOB=" in environ


class Watch:
    """Samples the child's tree in a thread; keeps the peaks and each process's last CPU."""

    def __init__(self, pid: int, period: float) -> None:
        self.pid, self.period = pid, period
        self.peak: dict[str, dict[str, int]] = defaultdict(
            lambda: {"rss": 0, "pss": 0, "private": 0}
        )
        self.peak_tree_pss = 0
        self.cpu: dict[int, float] = {}
        self.samples: list[tuple[float, int, float]] = []  # (seconds, tree PSS, tree CPU)
        self.guarded = ""
        self._stop = threading.Event()
        self._start = time.perf_counter()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            if available() < GUARD:  # the machine's memory is nearly gone: stop the job
                self.guarded = f"stopped: {available() / 2**30:.1f} GiB available"
                for p in tree(self.pid):
                    with contextlib.suppress(OSError):
                        os.kill(p, signal.SIGKILL)
                return
            procs = sample(self.pid)
            for p, info in procs.items():
                peak = self.peak[info["role"]]
                peak["rss"] = max(peak["rss"], info["rss"])
                peak["pss"] = max(peak["pss"], info["pss"])
                peak["private"] = max(peak["private"], info["private"])
                self.cpu[p] = info["cpu"]
            total = sum(info["pss"] for info in procs.values())
            self.peak_tree_pss = max(self.peak_tree_pss, total)
            self.samples.append((time.perf_counter() - self._start, total, self.tree_cpu()))

    def tree_cpu(self) -> float:
        return sum(self.cpu.values())

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


# ------------------------------------------------------------------ the run
def prepare(work: Path, count: int, items: int) -> tuple[Path, Path, str]:
    pool = run.load_items()
    text = run.queries_text("every", count, pool)
    queries = work / "queries.xscl"
    queries.write_text(text, encoding="utf-8")
    docs = run.documents(pool, items)
    spool = work / "spool"
    with Spool(spool) as s:
        s.append(docs)
    return queries, spool, text


def subscribe(queries: Path, home: Path) -> dict[str, Any]:
    """``xscl subscribe --history 0`` in a child process: wall and CPU seconds, peak RSS."""
    before = os.times()
    start = time.perf_counter()
    argv = [XSCL, "subscribe", "--history", "0", "--home", str(home), str(queries)]
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    after = os.times()
    cpu = after.children_user + after.children_system
    cpu -= before.children_user + before.children_system
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    return {"wall": time.perf_counter() - start, "cpu": cpu, "peak_rss": peak}


def serve(args: argparse.Namespace, spool: Path, home: Path) -> dict[str, Any]:
    argv = [
        XSCL,
        "serve",
        "--spool",
        str(spool),
        "--home",
        str(home),
        "--master",
        args.master,
        "--once",
        "--max-records-per-batch",
        str(args.batch),
        "--fresh-workers",
        args.fresh_workers,
    ]
    start = time.perf_counter()
    child = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
    watch = Watch(child.pid, args.period)
    phases: list[tuple[float, str]] = []
    assert child.stderr is not None
    for line in child.stderr:
        line = line.rstrip("\n")
        seconds = time.perf_counter() - start
        if "start-up:" in line or line.startswith("xscl") or "batch" in line[:40]:
            phases.append((seconds, line))
            print(f"  [{seconds:7.1f} s] {line[:160]}", file=sys.stderr, flush=True)
    code = child.wait()
    watch.stop()
    wall = time.perf_counter() - start
    return {
        "exit": code,
        "guard": watch.guarded,
        "wall": wall,
        "tree_cpu": watch.tree_cpu(),
        "peak": dict(watch.peak),
        "peak_tree_pss": watch.peak_tree_pss,
        "phases": phases,
        "samples": watch.samples,
    }


def _shown(line: str) -> bool:
    """A phase of the table: the start-up's, each batch's end, the run's end."""
    return "start-up:" in line or " docs, " in line or "documents read this run" in line


def sampled_ids(count: int, size: int) -> list[str]:
    step = max(1, count // size)
    return [f"s{n}" for n in range(0, count, step)][:size]


def local_sample(text: str, ids: list[str], spool: Path) -> dict[str, dict[str, Any]]:
    """The sample's queries alone in ``LocalEngine`` over the spool's items."""
    from xscl.connectors import SpoolReader

    wanted = set(ids)
    lines = [line for line in text.splitlines() if line.split(":", 1)[0] in wanted]
    engine = LocalEngine(parse_queries("\n".join(lines) + "\n"))
    reader = SpoolReader(spool)
    out: dict[str, dict[str, Any]] = {}
    for _offset, doc in reader.iter_range(0, reader.next_offset()):
        for record in engine.process_one(doc.stream, doc.docid, doc.ts_micros, doc.xml):
            out[record.result_id] = record.to_json_dict()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("count", type=int, help="subscriptions")
    parser.add_argument("--items", type=int, default=1_000, help="feed items (default 1000)")
    parser.add_argument("--sample", type=int, default=2_000, help="subscriptions checked")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--batch", type=int, default=250, help="--max-records-per-batch")
    parser.add_argument("--period", type=float, default=2.0, help="seconds between samples")
    parser.add_argument(
        "--fresh-workers", choices=("auto", "on", "off"), default="auto", help="xscl serve's"
    )
    parser.add_argument("--work", type=Path, help="folder (default: a new temporary one)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="xscl-serve-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"work folder {work}; load average {os.getloadavg()}", file=sys.stderr)
    started = time.perf_counter()
    queries, spool, text = prepare(work, args.count, args.items)
    print(f"prepared in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    subscribed = subscribe(queries, work / "home")
    print(f"xscl subscribe: {subscribed}", file=sys.stderr)
    job = serve(args, spool, work / "home")
    ids = sampled_ids(args.count, args.sample)
    wanted = set(ids)
    started = time.perf_counter()
    got = {
        r["result_id"]: r
        for r in read_results(work / "home" / "results" / "xscl")
        if r["query"] in wanted
    }
    expected = local_sample(text, ids, spool)
    local_s = time.perf_counter() - started
    equal = got == expected
    n = args.count
    rows = [
        ("subscriptions", f"{n:,}"),
        ("items", f"{args.items:,}"),
        (
            "xscl subscribe",
            f"{subscribed['wall']:.1f} s wall, {subscribed['cpu']:.1f} CPU-s, "
            f"peak RSS {subscribed['peak_rss'] / 2**20:,.0f} MiB",
        ),
        ("serve exit code", f"{job['exit']} {job['guard']}"),
        ("wall s", f"{job['wall']:.1f}"),
        ("tree CPU-s", f"{job['tree_cpu']:.1f}"),
    ]
    rows += [(f"{s:7.1f} s", line[:120]) for s, line in job["phases"] if _shown(line)]
    for name, peak in sorted(job["peak"].items()):
        rss, pss, own = peak["rss"], peak["pss"], peak["private"]
        rows.append(
            (
                f"peak {name}",
                f"RSS {rss / 2**20:,.0f} MiB ({rss / n:,.0f} B/sub), PSS {pss / 2**20:,.0f} "
                f"MiB, private {own / 2**20:,.0f} MiB (one process)",
            )
        )
    rows.append(("peak tree PSS", f"{job['peak_tree_pss'] / 2**20:,.0f} MiB"))
    rows.append(
        (
            f"sample of {len(ids):,}",
            f"{len(expected):,} local results, "
            f"{len(got):,} job results, equal: {equal} ({local_s:.1f} s)",
        )
    )
    width = max(len(a) for a, _ in rows)
    for a, b in rows:
        print(f"{a:>{width}} | {b}")
    print(f"load average {os.getloadavg()}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    **job,
                    "subscribe": subscribed,
                    "equal": equal,
                    "sample": len(ids),
                    "local": len(expected),
                    "job": len(got),
                }
            )
        )
    return 0 if job["exit"] == 0 and equal else 1


if __name__ == "__main__":
    sys.exit(main())
