"""Chaos harness: a process pair of ``xscl serve`` under random faults while documents arrive.

    python benchmarks/chaos/run.py [--rounds N] [--faults primary,zombie,...] [--seed S]
                                   [--quick] [--json] [--work DIR]

Runs N rounds of each selected fault class in a seeded random order against a seeded
workload (the rss example's documents and shifted copies with new ids), appending a
chunk of documents every round, then lets the job catch up and compares the final
result set with ``xscl.reference`` over every document appended: results lost,
results committed twice (in the part files readers see), and per class the median
and worst take-over or recovery time. Prints one table (``--json``: one object).

Fault classes (every round starts from a primary and a warm standby, ``pair.warm``,
except where said):

* ``primary``: kill -9 of the primary's process group; time = kill -> the new
  epoch's first commit (the take-over).
* ``cold``: the same with no standby: kill -9, then a new instance started; time =
  kill -> its first commit (the cold restart the pair is measured against).
* ``zombie``: SIGSTOP of the primary until the standby took over and committed, then
  SIGCONT; the old primary must exit 3 (fenced); time = stop -> take-over commit.
* ``standby``: kill -9 of the standby; time = kill -> a new standby is warm (the
  primary keeps committing meanwhile).
* ``poll``: kill -9 of the spool writer (``Spool.append``, what ``xscl poll`` runs)
  in the middle of an append, then restarted; time = kill -> the next commit.
* ``executor``: kill -9 of one executor JVM under ``local-cluster[2,1,1024]`` with a
  batch in flight (one instance, its own phase); time = kill -> the next commit.
* ``disk-full``: the results folder (a small tmpfs mounted for the run) filled up;
  every instance must stop with exit 4 and the ``XSCL-S023`` line naming the path;
  space freed, the pair restarted; time = space back -> the next commit.
* ``read-only``: the same with the tmpfs remounted read-only.
* ``slow-sink``: every fsync under the results folder delayed (an ``LD_PRELOAD``
  shim compiled with ``cc``) for a few seconds; the lease must hold (no take-over);
  time = slow window -> the next commit.

``disk-full`` and ``read-only`` need root (``mount``), ``slow-sink`` a C compiler;
without them the class is reported skipped with the reason. ``--quick`` is the CI
version: one round each of ``primary``, ``zombie`` and ``standby``, standbys not
waited warm (``tests/spark/test_spark_chaos.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.spark.killing import Job, executor_pids, process_gone  # noqa: E402
from tests.spark.served import QUERIES, example_documents  # noqa: E402
from xscl.connectors.document import Document, envelope_line  # noqa: E402
from xscl.connectors.spool import SpoolReader  # noqa: E402
from xscl.reference import run_batch as reference_run_batch  # noqa: E402
from xscl.results.read import (  # noqa: E402
    committed_markers,
    part_records,
    read_results,
    visible_markers,
)
from xscl.service.pair.file_lease import FileLease  # noqa: E402
from xscl.service.pair.member import StandbyBoard  # noqa: E402

FAULTS = (
    "primary", "cold", "zombie", "standby", "poll", "executor", "disk-full", "read-only",
    "slow-sink",
)
QUICK = ("primary", "zombie", "standby")
#: Documents appended per round, and per micro-batch.
CHUNK = 8
PER_BATCH = 4
#: Seconds anything awaited may take on a loaded machine.
TIMEOUT = 600.0
#: Size of the results tmpfs (disk-full, read-only).
TMPFS_SIZE = "64m"
#: fsync delay under the results folder during a slow-sink round (ms) and its length (s).
SLOW_MS = 1500
SLOW_SECONDS = 8.0
EXIT_FENCED, EXIT_UNWRITABLE = 3, 4

SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
/* fsync slowed down while the file named by XSCL_SLOW_SWITCH exists, for files whose
   path contains XSCL_SLOW_PATH: a slow sink for the chaos harness. */
static void maybe_wait(int fd) {
    const char *sw = getenv("XSCL_SLOW_SWITCH"), *part = getenv("XSCL_SLOW_PATH");
    const char *ms = getenv("XSCL_SLOW_MS");
    char link[64], path[PATH_MAX];
    ssize_t n;
    if (!sw || !part || !ms || access(sw, F_OK) != 0) return;
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    n = readlink(link, path, sizeof path - 1);
    if (n <= 0) return;
    path[n] = 0;
    if (strstr(path, part)) usleep((useconds_t)atoi(ms) * 1000);
}
int fsync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    maybe_wait(fd);
    return real(fd);
}
int fdatasync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    maybe_wait(fd);
    return real(fd);
}
"""

WRITER = """
import sys
from pathlib import Path
from xscl.connectors.document import read_envelope_file
from xscl.connectors.spool import Spool
spool, source, upto = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
docs = list(read_envelope_file(source))
with Spool(spool) as writer:
    for doc in docs[writer.next_offset():upto]:
        writer.append([doc])
"""


@dataclass
class Outcome:
    """One fault class's rounds."""

    fault: str
    seconds: list[float] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: str | None = None
    lost: int | None = None
    duplicated: int | None = None


class Timeout(RuntimeError):
    """Something awaited did not happen in time (the message says what, with logs)."""


def wait_until(what: str, check: Any, timeout: float = TIMEOUT, step: float = 0.02) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise Timeout(f"{what}: not within {timeout:.0f} s")
        time.sleep(step)


class Pair:
    """Instances of one job on one home, the spool writer, and what they did."""

    def __init__(self, work: Path, docs: list[Document], *, master: str | None, tmpfs: bool,
                 shim: Path | None) -> None:
        self.work = work
        work.mkdir(parents=True, exist_ok=True)
        self.home = work / "home"
        self.docs = docs
        self.source = work / "docs.jsonl"
        self.source.write_text("".join(envelope_line(d) + "\n" for d in docs), encoding="utf-8")
        self.master = master
        self.instances: list[Job] = []
        self.ended: list[tuple[Job, int]] = []
        self.appended = 0
        self.switch = work / "slow-switch"
        self.shim = shim
        self.results_mount = self.home / "results" if tmpfs else None
        (self.home / "spool").mkdir(parents=True, exist_ok=True)
        if self.results_mount is not None:
            self.results_mount.mkdir(parents=True, exist_ok=True)
            subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE}", "tmpfs",
                            str(self.results_mount)], check=True)
        self.lease = FileLease(self.home / "pair" / "xscl")
        self.board = StandbyBoard(self.home / "pair" / "xscl" / "standbys")
        self.counter = 0

    # ------------------------------------------------------------ processes
    def start(self) -> Job:
        self.counter += 1
        argv = [sys.executable, "-m", "xscl.spark_plugin.submit", "--queries", str(QUERIES),
                "--home", str(self.home), "--max-records-per-batch", str(PER_BATCH),
                "--trigger-seconds", "0.5", "--quiet"]
        if self.master:
            argv += ["--master", self.master]
        env = {"PYTHONPATH": str(REPO)}
        if self.shim is not None:
            env.update(LD_PRELOAD=str(self.shim), XSCL_SLOW_SWITCH=str(self.switch),
                       XSCL_SLOW_PATH=f"{self.home}/results/", XSCL_SLOW_MS=str(SLOW_MS))
        with _environ(env):
            job = Job(argv, self.work / f"instance-{self.counter}.log", self.work)
        self.instances.append(job)
        return job

    def reap(self) -> None:
        """Forget instances that exited (kept in ``ended`` with their exit code)."""
        for job in list(self.instances):
            if not job.running():
                self.instances.remove(job)
                self.ended.append((job, job.process.returncode))

    def primary(self) -> Job | None:
        self.reap()
        record = self.lease.read()
        if record is None:
            return None
        return next((j for j in self.instances if j.pid == record.pid), None)

    def standbys(self, warm: bool) -> list[Job]:
        live = {int(s["pid"]) for s in self.board.live() if s.get("warm") or not warm}
        return [j for j in self.instances if j.pid in live]

    def ready(self, standbys: int, warm: bool) -> None:
        """Start instances until a primary and ``standbys`` standbys are up."""
        self.reap()
        for _ in range(1 + standbys - len(self.instances)):
            self.start()
        wait_until("a primary and its standbys",
                   lambda: self.primary() is not None and len(self.standbys(warm)) >= standbys)

    def stop_all(self) -> None:
        for job in list(self.instances):
            job.kill()
        self.reap()

    def append(self, count: int, *, wait: bool = True) -> subprocess.Popen[bytes]:
        """Append the next ``count`` documents with the spool writer (a subprocess)."""
        self.appended = min(len(self.docs), self.appended + count)
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(self.home / "spool"), str(self.source),
             str(self.appended)], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
        if wait:
            writer.wait(timeout=TIMEOUT)
        return writer

    # -------------------------------------------------------------- figures
    @property
    def results(self) -> Path:
        return self.home / "results" / "xscl"

    def markers(self) -> int:
        return len(committed_markers(self.results))

    def newest_epoch_commit(self, after_epoch: int) -> bool:
        """Did an epoch after ``after_epoch`` commit a batch readers see?"""
        markers = visible_markers(self.results)
        return any(int(folder.name[1:]) > after_epoch for folder, _marker in markers)

    def caught_up(self) -> bool:
        markers = visible_markers(self.results)
        if not markers or self.primary() is None:
            return False
        spooled = SpoolReader(self.home / "spool").next_offset()
        folder, marker = markers[-1]
        from xscl.service.pair.epochs import batch_end_offset

        checkpoint = self.home / "checkpoints" / "xscl" / folder.name
        batch = int(marker["batch"])
        # and every document the join groups PUBLISHed was read by a committed batch
        published = SpoolReader(self.home / "state" / "xscl" / "published").next_offset()
        return (
            batch_end_offset(checkpoint, batch) == spooled
            and batch_end_offset(checkpoint, batch, "published") == published
        )

    def close(self) -> None:
        self.stop_all()
        if self.results_mount is not None:
            subprocess.run(["umount", "-l", str(self.results_mount)], check=False)


@contextlib.contextmanager
def _environ(extra: dict[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.update(extra)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


# ---------------------------------------------------------------- fault rounds
def _kill_primary(pair: Pair, *, restart: bool) -> float:
    """Seconds from kill -9 of the primary (documents just appended) to the next epoch's
    first commit; ``restart``: a new instance is started after the kill."""
    victim = pair.primary()
    assert victim is not None
    epoch = pair.lease.newest_epoch()
    pair.append(CHUNK)
    killed = time.monotonic()
    victim.kill()
    if restart:
        pair.start()
    wait_until("the next epoch's first commit", lambda: pair.newest_epoch_commit(epoch))
    return time.monotonic() - killed


def round_primary(pair: Pair, warm: bool) -> tuple[float, str]:
    pair.ready(1, warm)
    return _kill_primary(pair, restart=False), ""


def round_cold(pair: Pair, warm: bool) -> tuple[float, str]:
    pair.ready(0, False)
    primary = pair.primary()
    for job in pair.instances:
        if job is not primary:
            job.kill()  # no standby, none starting
    pair.reap()
    return _kill_primary(pair, restart=True), ""


def round_zombie(pair: Pair, warm: bool) -> tuple[float, str]:
    pair.ready(1, warm)
    zombie = pair.primary()
    assert zombie is not None
    epoch = pair.lease.newest_epoch()
    pair.append(CHUNK)
    zombie.signal_group(signal.SIGSTOP)
    stopped = time.monotonic()
    wait_until("the take-over commit", lambda: pair.newest_epoch_commit(epoch))
    took = time.monotonic() - stopped
    own = f"e{epoch:08d}"
    seen = {m["batch"] for f, m in visible_markers(pair.results) if f.name == own}
    zombie.signal_group(signal.SIGCONT)
    code = zombie.process.wait(timeout=TIMEOUT)
    notes = []
    if code != EXIT_FENCED or "XSCL-S020" not in zombie.log_tail():
        notes.append(f"the zombie exited {code} without the XSCL-S020 line")
    later = {m["batch"] for f, m in visible_markers(pair.results) if f.name == own} - seen
    if later:
        notes.append(f"the zombie's batches {sorted(later)} became visible")
    if (pair.results / "feeds").resolve().parent.name == own:
        notes.append("the feeds link names the zombie's epoch")
    return took, "; ".join(notes)


def round_standby(pair: Pair, warm: bool) -> tuple[float, str]:
    pair.ready(1, warm)
    victim = pair.standbys(False)[0]
    before = pair.markers()
    pair.append(CHUNK)
    killed = time.monotonic()
    victim.kill()
    pair.ready(1, warm)
    took = time.monotonic() - killed
    wait_until("the primary's next commit", lambda: pair.markers() > before)
    return took, ""


def round_poll(pair: Pair, warm: bool) -> tuple[float, str]:
    pair.ready(1, warm)
    before = pair.markers()
    writer = pair.append(CHUNK * 2, wait=False)
    time.sleep(random.uniform(0.3, 1.0))  # the writer imports, then appends one by one
    writer.send_signal(signal.SIGKILL)
    writer.wait(timeout=TIMEOUT)
    killed = time.monotonic()
    pair.append(0)  # restarted: resumes at the spool's end
    wait_until("the next commit", lambda: pair.markers() > before)
    return time.monotonic() - killed, ""


def round_executor(pair: Pair, warm: bool) -> tuple[float, str]:
    pair.ready(0, False)
    primary = pair.primary()
    assert primary is not None
    executors = wait_until("two executor JVMs", lambda: executor_pids(primary.pid)
                           if len(executor_pids(primary.pid)) == 2 else None)
    before = pair.markers()
    pair.append(CHUNK)
    time.sleep(random.uniform(0.0, 1.0))
    victim = random.choice(executors)
    os.kill(victim, signal.SIGKILL)
    killed = time.monotonic()
    wait_until("the executor's end", lambda: process_gone(victim))
    wait_until("the next commit", lambda: pair.markers() > before)
    return time.monotonic() - killed, ""


def _unwritable_round(pair: Pair, warm: bool, break_it: Any, mend: Any) -> tuple[float, str]:
    pair.ready(1, warm)
    before = pair.markers()
    break_it()
    pair.append(CHUNK)
    wait_until("every instance stopped", lambda: (pair.reap(), not pair.instances)[1])
    codes = [code for _job, code in pair.ended[-2:]]
    clear = all(
        "XSCL-S023" in job.log_tail() and str(pair.home / "results") in job.log_tail()
        for job, _code in pair.ended[-2:]
    )
    mend()
    mended = time.monotonic()
    pair.ready(1, False)
    wait_until("the next commit", lambda: pair.markers() > before)
    note = "" if codes == [EXIT_UNWRITABLE] * 2 and clear else f"exits {codes}, clear {clear}"
    return time.monotonic() - mended, note


def round_disk_full(pair: Pair, warm: bool) -> tuple[float, str]:
    assert pair.results_mount is not None
    filler = pair.results_mount / "filler"

    def fill() -> None:
        free = shutil.disk_usage(pair.results_mount).free
        with open(filler, "wb") as handle, contextlib.suppress(OSError):
            handle.write(b"\0" * free)

    return _unwritable_round(pair, warm, fill, lambda: filler.unlink())


def round_read_only(pair: Pair, warm: bool) -> tuple[float, str]:
    assert pair.results_mount is not None
    mount = str(pair.results_mount)

    def remount(mode: str) -> None:
        subprocess.run(["mount", "-o", f"remount,{mode}", mount], check=True)

    return _unwritable_round(pair, warm, lambda: remount("ro"), lambda: remount("rw"))


def round_slow_sink(pair: Pair, warm: bool) -> tuple[float, str]:
    pair.ready(1, warm)
    epoch = pair.lease.newest_epoch()
    pair.switch.touch()
    pair.append(CHUNK)
    time.sleep(SLOW_SECONDS)
    before = pair.markers()
    pair.switch.unlink()
    slowed = time.monotonic()
    wait_until("the next commit", lambda: pair.markers() > before)
    note = "" if pair.lease.newest_epoch() == epoch else "the lease changed hands"
    return time.monotonic() - slowed, note


ROUNDS = {
    "primary": round_primary, "cold": round_cold, "zombie": round_zombie,
    "standby": round_standby, "poll": round_poll, "executor": round_executor,
    "disk-full": round_disk_full, "read-only": round_read_only, "slow-sink": round_slow_sink,
}


# ------------------------------------------------------------------ the phases
def can_mount(work: Path) -> str | None:
    """None if a tmpfs can be mounted here, else why not."""
    probe = work / "mount-probe"
    probe.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(probe)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return f"cannot mount a tmpfs: {done.stderr.strip() or done.returncode}"
    subprocess.run(["umount", str(probe)], check=False)
    return None


def build_shim(work: Path) -> tuple[Path | None, str | None]:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return None, "no C compiler for the fsync shim"
    work.mkdir(parents=True, exist_ok=True)
    source, shim = work / "slowsync.c", work / "slowsync.so"
    source.write_text(SHIM)
    done = subprocess.run([compiler, "-shared", "-fPIC", "-O2", "-o", str(shim), str(source),
                           "-ldl"], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return None, f"the fsync shim does not build: {done.stderr.strip()[:200]}"
    return shim, None


def run_phase(work: Path, faults: list[str], rounds: int, seed: int, warm: bool,
              outcomes: dict[str, Outcome], master: str | None = None) -> None:
    """One pair on one home: every round of ``faults``, then the exactly-once check."""
    rng = random.Random(seed)
    random.seed(seed)
    plan = [f for f in faults for _ in range(rounds)]
    rng.shuffle(plan)
    tmpfs = bool({"disk-full", "read-only"} & set(plan))
    shim = None
    if "slow-sink" in plan:
        shim, _ = build_shim(work)
    copies = 2 + len(plan) * 2 * CHUNK // 6 + 1
    docs = example_documents(copies)
    pair = Pair(work, docs, master=master, tmpfs=tmpfs, shim=shim)
    try:
        pair.append(CHUNK)
        pair.ready(0 if master else 1, False)  # instances started at once: one primary
        if pair.lease.newest_epoch() != 1:
            outcomes[plan[0]].notes.append(f"{pair.lease.newest_epoch()} epochs at the start")
        for fault in plan:
            seconds, note = ROUNDS[fault](pair, warm)
            outcome = outcomes[fault]
            outcome.seconds.append(seconds)
            if note:
                outcome.notes.append(note)
            print(f"[chaos] {fault}: {seconds:.2f} s {note}", file=sys.stderr, flush=True)
        pair.append(len(docs))
        pair.ready(0, False)
        wait_until("the job caught up with the spool", pair.caught_up, step=0.2)
        lost, duplicated = check(pair)
        outcomes[plan[-1]].notes.extend(status_disagrees(pair))
    finally:
        pair.close()
    for fault in set(plan):
        outcomes[fault].lost = (outcomes[fault].lost or 0) + lost
        outcomes[fault].duplicated = (outcomes[fault].duplicated or 0) + duplicated


def check(pair: Pair) -> tuple[int, int]:
    """(results lost, results in more than one visible part) against the reference."""
    out = pair.work / "reference.jsonl"
    reference_run_batch(QUERIES.read_text(encoding="utf-8"), pair.source, out)
    expected = {json.loads(line)["result_id"] for line in out.read_text().splitlines()}
    got = {record["result_id"] for record in read_results(pair.results)}
    seen: dict[str, int] = {}
    for folder, marker in visible_markers(pair.results):
        for part in marker["parts"]:
            for record in part_records(folder / part["file"]):  # channel lines decoded
                result_id = record["result_id"]
                seen[result_id] = seen.get(result_id, 0) + 1
    assert got <= expected, f"results the reference does not have: {sorted(got - expected)}"
    return len(expected - got), sum(1 for count in seen.values() if count > 1)


def status_disagrees(pair: Pair) -> list[str]:
    """What ``xscl status --json`` says that contradicts the caught-up job (empty: all)."""
    done = subprocess.run(
        [sys.executable, "-m", "xscl.cli.main", "status", "--home", str(pair.home), "--json"],
        capture_output=True, text=True, check=False, cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    if done.returncode != 0:
        return [f"xscl status exited {done.returncode}: {done.stderr.strip()[-300:]}"]
    status = json.loads(done.stdout)
    primary = pair.primary()
    last = int(committed_markers(pair.results)[-1]["batch"])
    wrong = []
    if primary is None or status["primary"]["pid"] != primary.pid:
        wrong.append(f"status names primary {status['primary']}")
    if (status["last_batch"], status["lag"]) != (last, 0):
        wrong.append(f"status: last batch {status['last_batch']}, lag {status['lag']}")
    return wrong


def table(outcomes: dict[str, Outcome]) -> str:
    rows = [("fault", "rounds", "lost", "dup", "median s", "worst s", "notes")]
    for name, o in outcomes.items():
        if o.skipped:
            rows.append((name, "0", "-", "-", "-", "-", f"skipped: {o.skipped}"))
            continue
        rows.append((
            name, str(len(o.seconds)), str(o.lost), str(o.duplicated),
            f"{statistics.median(o.seconds):.2f}" if o.seconds else "-",
            f"{max(o.seconds):.2f}" if o.seconds else "-", "; ".join(o.notes) or "",
        ))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                     for r in rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds per fault class")
    parser.add_argument("--faults", default=",".join(FAULTS), help="comma-separated classes")
    parser.add_argument("--seed", type=int, default=2009)
    parser.add_argument("--quick", action="store_true", help="the CI version")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--work", help="keep the homes and logs here (default: a temp dir)")
    args = parser.parse_args(argv)
    faults = list(QUICK) if args.quick else [f for f in args.faults.split(",") if f]
    unknown = sorted(set(faults) - set(FAULTS))
    if unknown:
        parser.error(f"unknown fault classes {unknown}; choose from {', '.join(FAULTS)}")
    rounds = 1 if args.quick else args.rounds
    work = Path(args.work or tempfile.mkdtemp(prefix="xscl-chaos-"))
    work.mkdir(parents=True, exist_ok=True)
    outcomes = {f: Outcome(f) for f in faults}
    if {"disk-full", "read-only"} & set(faults) and (why := can_mount(work)):
        for fault in ("disk-full", "read-only"):
            if fault in outcomes:
                outcomes[fault].skipped = why
    if "slow-sink" in faults and (why := build_shim(work)[1]):
        outcomes["slow-sink"].skipped = why
    runnable = [f for f in faults if outcomes[f].skipped is None]
    pair_faults = [f for f in runnable if f != "executor"]
    if pair_faults:
        run_phase(work / "pair", pair_faults, rounds, args.seed, not args.quick, outcomes)
    if "executor" in runnable:
        run_phase(work / "cluster", ["executor"], rounds, args.seed, False, outcomes,
                  master="local-cluster[2,1,1024]")
    if args.json:
        print(json.dumps({f: o.__dict__ for f, o in outcomes.items()}, sort_keys=True))
    else:
        print(table(outcomes))
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    bad = any(o.lost or o.duplicated or o.notes for o in outcomes.values())
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
