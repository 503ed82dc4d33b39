"""Spark RSS benchmark: thesis section 6.6.3 on the streaming job, side by side.

    python benchmarks/spark_rss/run.py            # 1k / 10k / 100k subscriptions
    python benchmarks/spark_rss/run.py --quick    # 1k / 10k, fewer items
    python benchmarks/spark_rss/run.py --quick --master 'local[2]' --workloads selective

1. Items: every feed of ``shared/data/feeds-*`` polled (``raw`` form, one stream)
   into a fresh spool, replayed in event-time order (``workload.spool_feed_items``).
2. Subscriptions: generated as in thesis 6.6.1 over the items' leaf names, JOIN /
   FOLLOWED BY, 1-3 value joins (``workload.subscriptions``), in two workloads:
   *selective* (windows of ``SELECTIVE_WINDOW``: at most about one result per item up
   to 10k subscriptions, measured 0.07 at 1k and 0.55 at 10k on the quick items) and
   *heavy* (windows INF: 2.5 results per item at 1k, 18 at 10k, ~180 at 100k).
3. Per workload and subscription count, each run in its own fresh Python process:
   * ``spark`` on every ``--master`` (default ``local[2]``, ``local-cluster[1,1,2048]``
     and ``local-cluster[2,1,2048]``): ``xscl.cli.serve.run_job`` with
     ``--once --quiet --max-records-per-batch B``. ``job it/s`` = documents / the job's
     own seconds (query start until it stops); ``results/s`` likewise; p50/p95 of the
     micro-batches' ``triggerExecution``; ``drv py CPU`` = the CPU seconds of the
     driver's Python process over those of every process of the job (driver, its JVM,
     executors, Python workers; ``/proc`` at the end of the run); ``task max/mean`` =
     the slowest join task over the mean task of the stateful stage (from the batch
     markers, ``join_groups`` times itself), median and worst over the batches;
     ``state`` = Spark's state bytes at the last batch;
   * ``local``: ``xscl.engine.LocalEngine`` fed the same items in spool order
     (``local/spark`` = its speed over the job's);
   * ``sequential`` (at the smallest count, first workload): the reference evaluator
     query by query on a random sample, extrapolated linearly (marked ``~``).
4. The Spark and local result counts must be equal (checked, printed).

A Spark measurement whose process tree passes ``MEMORY_LIMIT`` of RSS is ended by
``MemoryGuard`` (the machine is shared) and reported as an error with its time.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))

import mixed  # sibling modules of this script
import workload
from rss_memory import PeakRss, current_rss  # benchmarks/rss_memory.py

LEAVES = 8
BATCH_RECORDS = 2000
#: the *selective* workload's window (the *heavy* one's is INF)
SELECTIVE_WINDOW = "1h"
#: per engine run, seconds; a run that takes longer is reported as a timeout
RUN_TIMEOUT = 1500
#: a Spark measurement whose process tree (driver, JVM, workers) passes this RSS is ended
MEMORY_LIMIT = 11 * 2**30


# ----------------------------------------------------------------- memory
def descendants(pid: int) -> list[int]:
    """Process ids of every descendant of ``pid`` (Linux ``/proc``)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def tree_rss(pids: Sequence[int]) -> int:
    """Summed RSS of ``pids`` (bytes); vanished processes count 0."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/statm", encoding="ascii") as handle:
                total += int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except OSError:
            continue
    return total


class MemoryGuard:
    """Stops this measurement when this process and its children (the JVM) pass a limit.

    The machine is shared: a run that would exhaust memory is ended on purpose, with
    what it had reached, instead of waking the kernel's OOM killer on someone else.
    """

    def __init__(self, limit: int, progress: Any) -> None:
        self.limit = limit
        self.progress = progress
        self.started = time.perf_counter()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while True:
            time.sleep(0.5)
            children = descendants(os.getpid())
            rss = current_rss() + tree_rss(children)
            if rss <= self.limit:
                continue
            report = {
                "error": f"memory guard: driver + JVM + workers RSS {rss / 2**30:.1f} GiB "
                f"> {self.limit / 2**30:.1f} GiB after {time.perf_counter() - self.started:.0f} s",
                **self.progress(),
            }
            print(json.dumps(report), flush=True)
            print(report["error"], file=sys.stderr, flush=True)
            for child in children:  # only the processes this measurement started
                with contextlib.suppress(OSError):
                    os.kill(child, signal.SIGKILL)
            os._exit(3)


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


# --------------------------------------------------------- engine workers
def measure_local(queries: Path, spool: Path) -> dict[str, Any]:
    """``--engine local``: register, then feed the spool's items in offset order, writing
    each result's JSON line as it comes (as the job writes its parts), to a file beside
    the spool that is removed afterwards."""
    from xscl.cli.common import load_queries
    from xscl.engine import LocalEngine
    from xscl.engine.json_lines import JsonLineEncoder

    wall0, cpu0 = time.perf_counter(), sum(os.times()[:2])
    items = workload.read_items(spool)
    start = time.perf_counter()
    loaded = load_queries(queries)
    parse_s = time.perf_counter() - start
    before = current_rss()
    start = time.perf_counter()
    engine = LocalEngine(loaded.queries)
    register_s = time.perf_counter() - start
    register_bytes = current_rss() - before
    results = 0
    start = time.perf_counter()
    encoder = JsonLineEncoder()
    output = spool.parent / f"local-results-{os.getpid()}.jsonl"
    with open(output, "wb", buffering=1 << 20) as lines:
        for doc in items:
            for record in engine.process_one(doc.stream, doc.docid, doc.ts_micros, doc.xml):
                lines.write(encoder.encode(record))
                results += 1
    results_bytes = output.stat().st_size
    output.unlink()
    seconds = time.perf_counter() - start
    return {
        # the whole run, as ``xscl run --engine local`` pays it: items read, queries
        # parsed and registered, every item processed (the COST's denominator)
        "total_wall_s": time.perf_counter() - wall0,
        "total_cpu_s": sum(os.times()[:2]) - cpu0,
        "subscriptions": len(loaded.queries),
        "templates": engine.template_count,
        "parse_s": parse_s,
        "register_s": register_s,
        "register_bytes": register_bytes,
        "items": len(items),
        "results": results,
        "results_bytes": results_bytes,
        "seconds": seconds,
        "join_s": engine.stats.join_seconds,
        "stored_documents": len(engine.docs),
        "rejected": engine.stats.rejected,
    }


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds of ``pid``'s descendants, with their reaped children (``/proc``)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for child in descendants(pid):
        try:
            fields = (Path("/proc") / str(child) / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(f) for f in fields[11:15]) / tick  # utime stime cutime cstime
    return total


def measure_spark(
    queries: Path,
    spool: Path,
    home: Path,
    batch: int,
    master: str,
    results_format: str,
    job_args: Sequence[str] = (),
) -> dict[str, Any]:
    """The streaming job in this process: ``run_job`` with ``--once`` on ``master``
    (``job_args``: more ``xscl serve`` options, e.g. ``benchmarks/hot_values``')."""
    from xscl.cli.serve import build_parser, run_job
    from xscl.results.commit import epoch_folder
    from xscl.spark_plugin.progress import CommittedResults

    argv = [
        "--queries", str(queries), "--spool", str(spool), "--home", str(home),
        "--master", master, "--once", "--quiet", "--results-format", results_format, *job_args,
    ]  # fmt: skip
    if batch:  # 0: the whole backlog in one micro-batch, as a first start on a full spool
        argv += ["--max-records-per-batch", str(batch)]
    before = current_rss()
    start = time.perf_counter()
    own_before = sum(os.times()[:2])
    with PeakRss() as rss:
        guard = MemoryGuard(
            MEMORY_LIMIT,
            lambda: {
                "peak_driver_rss": rss.peak,
                "results_bytes_so_far": folder_bytes(home / "results")
                if (home / "results").is_dir()
                else 0,
                "committed_batches": len(list((home / "results").rglob("_commits/*")))
                if (home / "results").is_dir()
                else 0,
            },
        )
        guard.start()
        report = run_job(build_parser().parse_args(argv))
        own = sum(os.times()[:2]) - own_before
        others = tree_cpu_seconds(os.getpid())  # the JVM(s) and Python workers, still alive
    wall = time.perf_counter() - start
    durations = [b.duration_ms for b in report.batches if b.documents > 0]
    # after the first batch (the Python workers' start and registration): the job's
    # steady rate, what a long-running ``xscl serve`` sees
    later = [b for b in report.batches if b.documents > 0][1:]
    later_ms = sum(b.duration_ms for b in later)
    last = report.batches[-1] if report.batches else None
    markers = CommittedResults(epoch_folder(home / "results" / "xscl", 1))  # a fresh home
    skew = [
        t[0] / t[1]
        for b in report.batches
        if b.documents > 0 and (t := markers.tasks(b.batch_id)) is not None and t[1] > 0
    ]
    checkpoints = home / "checkpoints"
    return {
        "master": master,
        "results_format": results_format,
        "exit_code": report.exit_code,
        "documents": report.documents,
        "results": report.results,
        "seconds": report.seconds,
        "wall": wall,
        "batches": len(durations),
        "p50_ms": statistics.median(durations) if durations else None,
        "first_batch_ms": durations[0] if durations else None,
        "steady_items": sum(b.documents for b in later),
        "steady_s": later_ms / 1000 if later_ms else None,
        "p95_ms": percentile(durations, 0.95) if durations else None,
        "state_rows": last.state_rows if last else 0,
        "state_bytes": last.state_bytes if last else 0,
        # the state store's bytes and the mean batch time in each quarter of the run's
        # batches with documents: flat when windows bound what the job keeps
        "state_by_quarter": [q[-1].state_bytes for q in quarters(report.batches)],
        "batch_ms_by_quarter": [
            statistics.mean(b.duration_ms for b in q) for q in quarters(report.batches)
        ],
        "task_skews": skew,  # per batch with documents, in order
        "task_skew_p50": statistics.median(skew) if skew else None,
        "task_skew_max": max(skew) if skew else None,
        "driver_cpu_s": own,
        "tree_cpu_s": own + others,
        "checkpoint_bytes": folder_bytes(checkpoints) if checkpoints.is_dir() else 0,
        "results_bytes": _results_bytes(home / "results"),
        "feeds_bytes": folder_bytes(home / "results" / "xscl" / "feeds")
        if (home / "results" / "xscl" / "feeds").is_dir()
        else 0,
        "driver_rss_growth": rss.peak - before,
    }


def _results_bytes(results: Path) -> int:
    """Bytes of the committed result part files (not the Atom feeds beside them)."""
    return sum(p.stat().st_size for p in results.rglob("part-*") if p.is_file())


def quarters(batches: list[Any]) -> list[list[Any]]:
    """The batches with documents in four runs of (nearly) equal length (fewer when
    there are fewer than four)."""
    full = [b for b in batches if b.documents > 0]
    size = len(full) / 4
    runs = [full[round(k * size) : round((k + 1) * size)] for k in range(4)]
    return [run for run in runs if run]


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..1)."""
    ordered = sorted(values)
    rank = min(len(ordered), max(1, math.ceil(q * len(ordered))))
    return ordered[rank - 1]


def measure_sequential(queries: Path, spool: Path, sample: int, seed: int) -> dict[str, Any]:
    """The reference evaluator query by query on a random sample of ``sample`` queries."""
    from xscl import reference
    from xscl.cli.common import load_queries
    from xscl.errors import XmlDocumentError

    docs = []
    for item in workload.read_items(spool):
        try:
            docs.append(reference.make_document(item.stream, item.docid, item.ts_micros, item.xml))
        except XmlDocumentError:
            continue  # the engines dead-letter it too
    loaded = list(load_queries(queries).queries)
    chosen = loaded if len(loaded) <= sample else random.Random(seed).sample(loaded, sample)
    reference.evaluate_query(chosen[0], docs)  # warm-up, unmeasured: the first call is slow
    start = time.perf_counter()
    results = sum(len(reference.evaluate_query(q, docs)) for q in chosen)
    seconds = time.perf_counter() - start
    return {
        "measured": len(chosen),
        "subscriptions": len(loaded),
        "sample_results": results,
        "seconds": seconds * len(loaded) / len(chosen),
        "extrapolated": len(chosen) < len(loaded),
        "items": len(docs),
    }


def worker(args: argparse.Namespace) -> int:
    """``--measure ENGINE``: one measurement, its JSON on the last stdout line."""
    queries, spool = Path(args.queries), Path(args.spool)
    if args.measure == "local":
        out = measure_local(queries, spool)
    elif args.measure == "spark":
        out = measure_spark(
            queries,
            spool,
            Path(args.home),
            args.batch[0],
            args.master[0],
            args.results_format[0],
            args.job_args.split(),
        )
    else:
        out = measure_sequential(queries, spool, args.sample, args.seed)
    out["maxrss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps(out), flush=True)
    return 0


def run_worker(extra: list[str], log: Path) -> dict[str, Any]:
    """Run one measurement in a fresh interpreter; its JSON, or ``{"error": ...}``."""
    command = [sys.executable, str(Path(__file__).resolve()), *extra]
    with open(log, "w", encoding="utf-8") as err:
        try:
            done = subprocess.run(
                command, stdout=subprocess.PIPE, stderr=err, text=True, timeout=RUN_TIMEOUT
            )
        except subprocess.TimeoutExpired:
            return {"error": f"timeout after {RUN_TIMEOUT} s (log {log})"}
    lines = done.stdout.strip().splitlines()
    try:
        result: dict[str, Any] = json.loads(lines[-1]) if lines else {}
    except ValueError:
        result = {}
    if done.returncode != 0 and "error" not in result:
        return {"error": f"exit {done.returncode} (log {log})"}
    return result


# ------------------------------------------------------------------ table
def fmt_rate(items: int, seconds: float | None, mark: str = "") -> str:
    return "-" if not seconds else f"{mark}{items / seconds:,.0f}"


def mib(value: float) -> str:
    return f"{value / 2**20:,.1f} MiB"


def ratio(numerator: float | None, denominator: float | None) -> str:
    return "-" if not numerator or not denominator else f"{numerator / denominator:.2f}"


def print_table(rows: list[dict[str, Any]]) -> None:
    """One row per (workload, subscriptions, batch size, master); COST columns first."""
    head = (
        f"{'workload':>9} | {'subs':>7} | {'batch':>6} | {'master':>23} | {'items':>6} | "
        f"{'job CPU':>8} | {'local CPU':>9} | {'COST cpu':>8} | {'job wall':>8} | "
        f"{'local wall':>10} | {'COST wall':>9} | {'job it/s':>8} | {'steady it/s':>11} | "
        f"{'p50 batch':>9} | {'p95 batch':>9} | {'drv py CPU':>10} | {'task max/mean':>13} | "
        f"{'seq it/s':>9} | {'results spark/local':>19}"
    )
    print(head)
    print("-" * len(head))
    for row in rows:
        spark, local, seq = row["spark"], row["local"], row.get("seq")
        master = spark.get("master", row.get("master", "?"))
        batch = str(row["batch"]) if row["batch"] else "all"
        l_cpu = l_wall = None
        if "error" not in local:
            l_cpu, l_wall = local["total_cpu_s"], local["total_wall_s"]
        if "error" in spark:
            cells = ["ERR"] * 9
            s_results = "ERR"
            items = "-"
        else:
            durations = spark["p50_ms"], spark["p95_ms"]
            share = spark["driver_cpu_s"] / spark["tree_cpu_s"] if spark["tree_cpu_s"] else 0
            skew = (
                "-"
                if spark["task_skew_p50"] is None
                else f"{spark['task_skew_p50']:.2f}/{spark['task_skew_max']:.2f}"
            )
            cells = [
                f"{spark['tree_cpu_s']:.1f} s",
                ratio(spark["tree_cpu_s"], l_cpu),
                f"{spark['wall']:.1f} s",
                ratio(spark["wall"], l_wall),
                fmt_rate(spark["documents"], spark["seconds"]),
                fmt_rate(spark["steady_items"], spark["steady_s"]),
                *("-" if d is None else f"{d / 1000:.2f} s" for d in durations),
                f"{100 * share:.0f}%",
                skew,
            ]
            s_results = str(spark["results"])
            items = str(spark["documents"])
        job_cpu, cost_cpu, job_wall, cost_wall, rate, steady, p50, p95, drv, *rest = cells
        skew_cell = rest[0] if rest else "ERR"
        l_results = "ERR" if "error" in local else str(local["results"])
        if seq is None:
            seq_rate = "-"
        elif "error" in seq:
            seq_rate = "ERR"
        else:
            seq_rate = fmt_rate(seq["items"], seq["seconds"], "~" if seq["extrapolated"] else "")
        print(
            f"{row['workload']:>9} | {row['n']:>7,} | {batch:>6} | {master:>23} | {items:>6} | "
            f"{job_cpu:>8} | {'-' if l_cpu is None else f'{l_cpu:.1f} s':>9} | {cost_cpu:>8} | "
            f"{job_wall:>8} | {'-' if l_wall is None else f'{l_wall:.1f} s':>10} | "
            f"{cost_wall:>9} | {rate:>8} | {steady:>11} | {p50:>9} | {p95:>9} | {drv:>10} | "
            f"{skew_cell:>13} | {seq_rate:>9} | {s_results + '/' + l_results:>19}"
        )
    load = os.getloadavg()
    print(
        f"\nload average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, {os.cpu_count()} CPUs. "
        "job CPU = every process of the Spark job (driver, JVMs, Python workers), from its "
        "session's start to its end; local CPU / local wall = `--engine local` in one "
        "process, reading the items, parsing and registering the queries included; COST "
        "cpu = job CPU / local CPU, COST wall = job wall / local wall (the COST paper: a "
        "distributed system against one good thread); batch = --max-records-per-batch "
        "(all: the whole backlog in one micro-batch); drv py CPU = the driver's Python "
        "process / every process of the job; task max/mean = the slowest join task over "
        "the mean, median and worst over the batches; steady it/s = the batches after the "
        "first"
    )


# ------------------------------------------------------------------- main
def bench(args: argparse.Namespace) -> int:
    counts = args.counts or ([1000, 10_000] if args.quick else [1000, 10_000, 100_000])
    began = time.perf_counter()
    folders = workload.feed_folders()
    if not folders:
        print(f"no feeds-* folders under {workload.DATA}: nothing to measure", file=sys.stderr)
        return 2
    if args.quick:  # fewer items: the small-web blogs and the youthopp stream only
        folders = [f for f in folders if f.name in ("feeds-kagi-smallweb", "feeds-stream-youthopp")]
    work = Path(args.work or tempfile.mkdtemp(prefix="xscl-spark-rss-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"Spark RSS benchmark ({'quick' if args.quick else 'full'}), work dir {work}")
    generated = {kind: _workload(kind, work, folders) for kind in args.workloads}
    rows: list[dict[str, Any]] = []
    for kind in args.workloads:
        spool, draw = generated[kind]
        for n in counts:
            queries = work / f"subs-{kind}-{n}.xscl"
            draw(queries, n)
            common = ["--queries", str(queries), "--spool", str(spool)]
            local = run_worker(["--measure", "local", *common], work / f"local-{kind}-{n}.log")
            print(f"  {kind} {n}: local {json.dumps(local)}", flush=True)
            seq = None
            if n == counts[0] and kind == args.workloads[0]:
                seq = run_worker(
                    ["--measure", "sequential", *common, "--sample", str(args.sample)],
                    work / f"sequential-{n}.log",
                )
                print(f"  {n}: sequential {json.dumps(seq)}", flush=True)
            for batch in args.batch:
                for master in args.master:
                    for fmt in args.results_format:
                        plain = master.replace("[", "_").replace("]", "").replace(",", "_")
                        tag = f"{kind}-{n}-{batch}-{plain}"
                        home = work / f"home-{tag}-{fmt}"
                        shutil.rmtree(home, ignore_errors=True)
                        spark = run_worker(
                            ["--measure", "spark", *common, "--home", str(home),
                             "--batch", str(batch), "--master", master,
                             "--results-format", fmt, "--job-args", args.job_args],
                            work / f"spark-{tag}-{fmt}.log",
                        )  # fmt: skip
                        print(f"  {kind} {n} batch {batch}: spark ({master}, {fmt}) "
                              f"{json.dumps(spark)}", flush=True)  # fmt: skip
                        shutil.rmtree(home, ignore_errors=True)
                        row: dict[str, Any] = {
                            "n": n, "workload": kind, "master": master, "batch": batch,
                            "local": local, "spark": spark,
                        }  # fmt: skip
                        if seq is not None:
                            row["seq"] = seq
                        rows.append(row)
    print()
    print_table(rows)
    failures = 0
    for row in rows:
        spark, local = row["spark"], row["local"]
        if "error" in spark or "error" in local:
            print(
                f"{row['n']}: a run failed: spark {spark.get('error')} local {local.get('error')}"
            )
            failures += 1
        elif spark["results"] != local["results"]:
            print(
                f"{row['n']}: RESULT COUNTS DIFFER: "
                f"spark {spark['results']}, local {local['results']}"
            )
            failures += 1
    print(f"wall time {time.perf_counter() - began:.0f} s")
    if not args.keep and args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


def _workload(
    kind: str, work: Path, folders: Sequence[Path]
) -> tuple[Path, Callable[[Path, int], None]]:
    """A workload's spool (made once) and how to write its ``n`` subscriptions."""
    if kind in ("mixed", "chains"):
        start = time.perf_counter()
        count = mixed.spool_mixed_items(work / "mixed")
        spool = work / "mixed" / "spool"
        print(f"mixed spool: {count} items (normalized: streams web, youth), "
              f"{time.perf_counter() - start:.0f} s")  # fmt: skip
        items = workload.read_items(spool)

        subscriptions = mixed.chain_subscriptions if kind == "chains" else mixed.mixed_subscriptions

        def draw_mixed(path: Path, n: int) -> None:
            mixed.write_queries(path, subscriptions(n, items, seed=n))

        return spool, draw_mixed
    spool = work / "spool"
    if not spool.is_dir():
        start = time.perf_counter()
        items, summary = workload.spool_feed_items(folders, work)
        print(
            f"spool: {items} items from {summary.feeds} feed files "
            f"({', '.join(f.name for f in folders)}), poll {summary.new} new / "
            f"{summary.duplicate} duplicate / {summary.dead_letters} dead letters, "
            f"{time.perf_counter() - start:.0f} s"
        )
    stats = workload.leaf_stats(workload.read_items(spool))
    max_pairs = len(workload.read_items(spool)) // 20
    leaves = workload.selective_leaves(stats, LEAVES, max_pairs)
    print(
        f"{kind}: leaves (items having it, x=x pairs over the stream): "
        + ", ".join(f"{leaf.name} ({leaf.items}, {leaf.pairs})" for leaf in leaves)
    )
    names = [x.name for x in leaves]
    window = "INF" if kind == "heavy" else SELECTIVE_WINDOW

    def draw(path: Path, n: int) -> None:
        workload.write_queries(path, workload.subscriptions(n, names, seed=n, window=window))

    return spool, draw


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="1k and 10k subscriptions, fewer items"
    )
    parser.add_argument("--counts", type=int, nargs="+", help="subscription counts to run")
    parser.add_argument(
        "--batch",
        type=int,
        nargs="+",
        default=[BATCH_RECORDS],
        help="max records per micro-batch, each side by side (0: the whole backlog in one)",
    )
    parser.add_argument("--sample", type=int, default=5, help="Sequential: queries measured")
    parser.add_argument(
        "--master",
        nargs="+",
        default=["local[2]", "local-cluster[1,1,2048]", "local-cluster[2,1,2048]"],
        help="Spark masters to run the job on, side by side (default: local[2], one and "
        "two executors of one core)",
    )
    parser.add_argument(
        "--workloads",
        nargs="+",
        choices=("selective", "heavy", "mixed", "chains"),
        default=["selective", "heavy", "mixed"],
        help="selective: windows of " + SELECTIVE_WINDOW + " (few results per item); heavy: "
        "windows INF (results grow with the subscriptions); mixed: what feed users write, "
        "over two corpora (mixed.py); chains: chain-heavy queries over the same items "
        "(mixed.chain_subscriptions, benchmarks/chains) (default: the first three)",
    )
    parser.add_argument(
        "--results-format",
        nargs="+",
        choices=("jsonl", "parquet"),
        default=["jsonl"],
        help="the streaming job's result file format(s), each with every master (default: jsonl)",
    )
    parser.add_argument("--work", help="work folder (default: a fresh temp dir, removed)")
    parser.add_argument("--keep", action="store_true", help="keep the temp work folder")
    # internal: one measurement in a fresh process
    parser.add_argument(
        "--measure", choices=("local", "spark", "sequential"), help=argparse.SUPPRESS
    )
    parser.add_argument("--queries", help=argparse.SUPPRESS)
    parser.add_argument("--spool", help=argparse.SUPPRESS)
    parser.add_argument("--home", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument(
        "--job-args",
        default="",
        help="more 'xscl serve' options for every Spark run, one string "
        "(e.g. '--allowed-lateness 1h')",
    )
    args = parser.parse_args(argv)
    return worker(args) if args.measure else bench(args)


if __name__ == "__main__":
    sys.exit(main())
