"""Is this driver doing its part of the job? The driver's liveness and readiness checks.

    python job_health.py --home HOME [--name NAME] --stall-seconds S [--lease ...]
    python job_health.py --readiness --home HOME [--name NAME] [--lease ...]

Every ``xscl serve`` is a member of the job's process pair (one driver is a pair of one):
the **primary** holds the job's lease (``--lease``, ``--lease-name``, ``--lease-namespace``:
the options ``xscl serve`` was given), a **standby** waits with Spark warm and writes a
heartbeat under ``HOME/pair/NAME/standbys``. The checks first find which one this pod is
(the lease's holder, or a standby heartbeat, of this host and a live process), then:

* readiness (``--readiness``): ready (exit 0) when this pod holds a live lease or is a
  standby following it; not ready (exit 1) while it starts, or once it lost the lease;
* liveness, for the primary: healthy when the job has read everything in the spool, or
  committed a micro-batch less than S seconds ago; stalled (exit 1) when documents wait
  and no batch was committed for S seconds since the latest of the last commit, the
  driver's start and its epoch's start (a new primary gets S seconds for its first batch);
* liveness, for a standby: healthy while its heartbeat is younger than S seconds (a standby
  commits nothing by design); for a pod that is neither: healthy for S seconds after its
  start (Spark starting), stalled after.

Prints one line: the role, then the spool's head, the committed offset, the lag and the
verdict. The committed offset is read from Spark's checkpoint of the job's newest epoch
(``HOME/checkpoints/NAME/e<epoch>``: every start or take-over is a new epoch): the newest
batch with a ``commits/N`` file and the spool offset that ``offsets/N`` records for it (its
last line, ``{"offset": N}``, the spool source's offset). When the lease or the checkpoint
cannot be read the liveness check says why and passes: it never restarts a job on a guess.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from xscl.cli.job_args import DEFAULT_LEASE_SECONDS, DEFAULT_NAME, add_lease_arguments
from xscl.connectors.spool import SpoolReader
from xscl.errors import LeaseStoreError
from xscl.service.pair.lease import Lease, job_lease, pair_folder, process_gone
from xscl.service.pair.member import StandbyBoard

PRIMARY, STANDBY, STARTING = "primary", "standby", "starting"


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


@dataclass(frozen=True)
class Role:
    """What this pod is in the pair: ``primary`` (``live``: its lease has not expired),
    ``standby`` (``beat``: its newest heartbeat, wall-clock seconds), or ``starting``."""

    name: str
    live: bool = False
    beat: float = 0.0


def role_of(lease: Lease, board: StandbyBoard, host: str, now: float) -> Role:
    """This host's role: the lease's holder, else the standby with the newest heartbeat.

    A record of a process gone from this host is no one's (a restarted container).
    """
    record = lease.read()
    ours = record is not None and record.host == host and not record.released
    if record is not None and ours and not process_gone(record.host, record.pid):
        return Role(PRIMARY, live=record.expires > now)
    beats = [
        float(body["renewed"])
        for body in board.live(now=0.0)  # every heartbeat whose process runs, fresh or not
        if body.get("host") == host
    ]
    if beats:
        return Role(STANDBY, beat=max(beats))
    return Role(STARTING)


def newest_epoch(checkpoints: Path) -> Path:
    """The checkpoint of the newest epoch under ``checkpoints`` (``HOME/checkpoints/NAME``);
    ``checkpoints`` itself when the job has not started an epoch yet."""
    epochs = [p for p in checkpoints.glob("e[0-9]*") if p.name[1:].isdigit()]
    return max(epochs, key=lambda p: int(p.name[1:]), default=checkpoints)


def epoch_started(checkpoint: Path) -> float:
    """When the epoch of ``checkpoint`` (``.../e<epoch>``) started, or later: its folder's
    mtime (made at the take-over; Spark later writes inside its subfolders). 0 without one."""
    if not checkpoint.name[1:].isdigit():
        return 0.0
    try:
        return checkpoint.stat().st_mtime
    except FileNotFoundError:
        return 0.0


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


def readiness(role: Role) -> str:
    """``ready: ...`` or ``not ready: ...`` (see the module docstring)."""
    if role.name == PRIMARY:
        return "ready: primary" if role.live else "not ready: primary whose lease expired"
    if role.name == STANDBY:
        return "ready: standby following the primary"
    return "not ready: neither the lease's holder nor a standby (yet)"


def standby_verdict(role: Role, started: float, now: float, stall: float) -> str:
    """Liveness of a pod that is not the primary: ``ok: ...`` or ``stalled: ...``."""
    if role.name == STANDBY:
        age = now - role.beat
        state = "stalled" if age > stall else "ok"
        return f"{state}: last heartbeat {age:.0f} s ago (limit {stall:.0f} s)"
    idle = now - started
    state = "stalled" if idle > stall else "ok"
    return f"{state}: not in the pair {idle:.0f} s after the start (limit {stall:.0f} s)"


def verdict(head: int, commit: Commit | None, started: float, now: float, stall: float) -> str:
    """The primary's liveness, ``ok: ...`` or ``stalled: ...``, with the figures
    (``started``: the later of the driver's start and its epoch's)."""
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
    parser.add_argument("--readiness", action="store_true", help="the readiness check")
    parser.add_argument("--stall-seconds", type=float, help="the liveness check's limit")
    parser.add_argument("--started-at", type=float, help="default: when process 1 started")
    add_lease_arguments(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.readiness and args.stall_seconds is None:
        parser.error("the liveness check needs --stall-seconds")
    home = Path(args.home)
    now = time.time()
    try:
        lease = job_lease(
            args.lease, home, args.name, DEFAULT_LEASE_SECONDS, args.lease_name,
            args.lease_namespace,
        )  # fmt: skip
        board = StandbyBoard(pair_folder(home, args.name) / "standbys")
        role = role_of(lease, board, socket.gethostname(), now)
    except (OSError, LeaseStoreError) as exc:
        if args.readiness:
            print(f"not ready: cannot read the lease ({type(exc).__name__}: {exc})")
            return 1
        print(f"unknown: cannot read the lease ({type(exc).__name__}: {exc}); passing")
        return 0
    if args.readiness:
        line = readiness(role)
        print(line)
        return 0 if line.startswith("ready") else 1
    try:
        started = args.started_at if args.started_at is not None else process_start()
        if role.name != PRIMARY:
            line = standby_verdict(role, started, now, args.stall_seconds)
        else:
            head = SpoolReader(Path(args.spool or home / "spool")).next_offset()
            checkpoint = newest_epoch(home / "checkpoints" / args.name)
            since = max(started, epoch_started(checkpoint))
            line = verdict(head, newest_commit(checkpoint), since, now, args.stall_seconds)
    except (OSError, ValueError, KeyError, IndexError, StopIteration) as exc:
        print(f"unknown: cannot read the job's progress ({type(exc).__name__}: {exc}); passing")
        return 0
    print(f"{role.name}: {line}")
    return 1 if line.startswith("stalled") else 0


if __name__ == "__main__":
    sys.exit(main())
