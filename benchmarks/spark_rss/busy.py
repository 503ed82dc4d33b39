"""Where a Spark job's CPU goes, by process group: each executor, the driver's JVM, the
driver's Python (issue "The Spark layer as a thin adapter", done-when: both executors
busy, the driver idle).

    python benchmarks/spark_rss/busy.py -- .venv/bin/python -m xscl serve \\
        --queries Q.xscl --spool SPOOL --home HOME --master 'local-cluster[2,1,1024]' --once

Runs the command, samples ``/proc`` every ``--every`` seconds, and prints the CPU
seconds of each group at the end:

* ``executor N``: an executor JVM (``CoarseGrainedExecutorBackend``) with everything
  under it (its Python daemon and workers);
* ``driver JVM``: the driver's JVM (with ``local-cluster``'s Master and Worker);
* ``planning Python``: Python processes under the driver's JVM (Spark's data-source
  planning workers, and the tasks' workers in ``local[N]``, where the driver's JVM is
  the executor);
* ``driver Python``: the command's own process.

A process is counted by its own user+system time at the last sample that saw it
(processes living less than one interval are missed: the figures are a lower bound).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, own CPU seconds) of ``pid``, or None once it is gone."""
    try:
        fields = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK


def _command(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _tree(root: int) -> dict[int, int]:
    """Every live descendant of ``root`` (and ``root``) with its parent."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None:
                parents[int(entry.name)] = stat[0]
    inside = {root}
    changed = True
    while changed:
        changed = False
        for pid, parent in parents.items():
            if parent in inside and pid not in inside:
                inside.add(pid)
                changed = True
    return {pid: parents.get(pid, 0) for pid in inside}


def _group(pid: int, parents: dict[int, int], kinds: dict[int, str], root: int) -> str:
    """The group ``pid`` is counted in (see the module's docstring)."""
    seen = pid
    while seen != root and seen in parents:
        if kinds.get(seen, "").startswith("executor"):
            return kinds[seen]
        seen = parents[seen]
    if pid == root:
        return "driver Python"
    if kinds.get(pid) == "driver JVM":
        return "driver JVM"
    return "planning Python" if "python" in _command(pid) else "driver JVM"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--every", type=float, default=0.5, help="seconds between samples")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the job's command line")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given")
    started = time.monotonic()
    job = subprocess.Popen(command)
    cpu: dict[int, float] = {}
    groups: dict[int, str] = {}
    kinds: dict[int, str] = {}
    while job.poll() is None:
        parents = _tree(job.pid)
        for pid in parents:
            if pid not in kinds:
                line = _command(pid)
                if "CoarseGrainedExecutorBackend" in line:
                    executors = sum(kind.startswith("executor") for kind in kinds.values())
                    kinds[pid] = f"executor {executors + 1}"
                elif line.startswith("java") or "/java " in line:
                    kinds[pid] = "driver JVM"
                else:
                    kinds[pid] = ""
            stat = _stat(pid)
            if stat is not None:
                cpu[pid] = stat[1]
                groups[pid] = _group(pid, parents, kinds, job.pid)
        time.sleep(args.every)
    wall = time.monotonic() - started
    totals: dict[str, float] = {}
    for pid, seconds in cpu.items():
        totals[groups[pid]] = totals.get(groups[pid], 0.0) + seconds
    whole = sum(totals.values()) or 1.0
    print(f"\n{'process group':<18} | {'CPU-s':>7} | {'share':>6}")
    print("-" * 37)
    for name, seconds in sorted(totals.items(), key=lambda kv: -kv[1]):
        print(f"{name:<18} | {seconds:>7.1f} | {100 * seconds / whole:>5.1f}%")
    print(f"\nwall {wall:.1f} s, exit code {job.returncode}, {os.cpu_count()} CPUs")
    return job.returncode or 0


if __name__ == "__main__":
    sys.exit(main())
