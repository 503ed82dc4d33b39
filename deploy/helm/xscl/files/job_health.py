"""Is the streaming job making progress? The driver's liveness check.

    python job_health.py --home HOME [--name NAME] --stall-seconds S

Healthy (exit 0) when the job has read everything in the spool, or when it committed a
micro-batch less than S seconds ago; stalled (exit 1) when documents wait and no batch
was committed for S seconds since the later of the last commit and the driver's start.
Prints one line: the spool's head, the committed offset, the lag and the verdict.

The committed offset is read from Spark's checkpoint of the job's newest epoch
(``HOME/checkpoints/NAME/e<epoch>``: every start or take-over is a new epoch): the
newest batch with a ``commits/N`` file and the spool offset that ``offsets/N`` records
for it (its last line, ``{"offset": N}``, the spool source's offset). When the
checkpoint cannot be read the check says why and passes: it never restarts a job on a
guess.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from xscl.connectors.spool import SpoolReader
from xscl.spark_plugin.job_args import DEFAULT_NAME


@dataclass(frozen=True)
class Commit:
    """The newest committed micro-batch: its number, spool end offset and commit time."""

    batch: int
    offset: int
    at: float


def newest_commit(checkpoint: Path) -> Commit | None:
    """The newest batch of ``checkpoint`` with both an offsets and a commits file."""
    try:
        batches = sorted(
            (int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit()),
            reverse=True,
        )
    except FileNotFoundError:
        return None
    for batch in batches:
        offsets = checkpoint / "offsets" / str(batch)
        if offsets.is_file():
            last = offsets.read_text(encoding="utf-8").strip().splitlines()[-1]
            at = (checkpoint / "commits" / str(batch)).stat().st_mtime
            return Commit(batch, int(json.loads(last)["offset"]), at)
    return None


def newest_epoch(checkpoints: Path) -> Path:
    """The checkpoint of the newest epoch under ``checkpoints`` (``HOME/checkpoints/NAME``);
    ``checkpoints`` itself when the job has not started an epoch yet."""
    epochs = [p for p in checkpoints.glob("e[0-9]*") if p.name[1:].isdigit()]
    return max(epochs, key=lambda p: int(p.name[1:]), default=checkpoints)


def process_start(pid: int = 1) -> float:
    """When process ``pid`` started, in seconds since the epoch (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[19])  # field 22, starttime, in clock ticks after boot
    boot = next(
        int(line.split()[1])
        for line in Path("/proc/stat").read_text().splitlines()
        if line.startswith("btime")
    )
    return boot + ticks / os.sysconf("SC_CLK_TCK")


def verdict(head: int, commit: Commit | None, started: float, now: float, stall: float) -> str:
    """``ok: ...`` or ``stalled: ...``, with the figures."""
    offset = commit.offset if commit else 0
    lag = max(0, head - offset)
    figures = f"spool head {head}, committed offset {offset}, lag {lag}"
    if lag == 0:
        return f"ok: caught up ({figures})"
    since = max(started, commit.at if commit else started)
    idle = now - since
    last = f"batch {commit.batch} committed" if commit else "no batch committed since the start"
    if idle > stall:
        return f"stalled: documents wait and {last} {idle:.0f} s ago > {stall:.0f} s ({figures})"
    return f"ok: working ({last} {idle:.0f} s ago; {figures})"


def build_parser() -> argparse.ArgumentParser:
    """The command line (the chart passes it these options)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", required=True)
    parser.add_argument("--name", default=DEFAULT_NAME)
    parser.add_argument("--spool", help="default: HOME/spool (as xscl serve)")
    parser.add_argument("--stall-seconds", type=float, required=True)
    parser.add_argument("--started-at", type=float, help="default: when process 1 started")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    home = Path(args.home)
    try:
        head = SpoolReader(Path(args.spool or home / "spool")).next_offset()
        commit = newest_commit(newest_epoch(home / "checkpoints" / args.name))
        started = args.started_at if args.started_at is not None else process_start()
    except (OSError, ValueError, KeyError, IndexError, StopIteration) as exc:
        print(f"unknown: cannot read the job's progress ({type(exc).__name__}: {exc}); passing")
        return 0
    line = verdict(head, commit, started, time.time(), args.stall_seconds)
    print(line)
    return 1 if line.startswith("stalled") else 0


if __name__ == "__main__":
    sys.exit(main())
