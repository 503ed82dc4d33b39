"""files/job_health.py (the driver's probes) tells a stalled job from a working one, and a
primary or a following standby from a pod that is neither.

The spool is a real one (written with ``Spool``); the checkpoint is laid out as Spark writes
it (``offsets/N``: a version line, the batch's metadata, the source's offset;
``commits/N``), as read from a checkpoint of ``xscl serve``. The pair is xscl's own: the
file lease (``FileLease``) and the standbys' heartbeats (``StandbyBoard``), written for a
process of this host that runs (this test's), as ``xscl serve`` writes them.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.deploy.chartkit import CHART, load_script
from xscl.connectors.document import Document
from xscl.connectors.spool import Spool
from xscl.service.pair.file_lease import FileLease
from xscl.service.pair.lease import Identity, pair_folder
from xscl.service.pair.member import StandbyBoard

SCRIPT = CHART / "files" / "job_health.py"
health = load_script("job_health.py")
STALL = 600.0


def fill_spool(home: Path, count: int) -> None:
    docs = [
        Document("news", f"d{i}", 1_700_000_000_000_000 + i, f"<item n='{i}'/>")
        for i in range(count)
    ]
    with Spool(home / "spool") as spool:
        spool.append(docs)


def checkpoint_of(home: Path, epoch: int = 1) -> Path:
    """The checkpoint of epoch ``epoch`` of the job (``xscl.service.pair.epochs``)."""
    return home / "checkpoints" / "xscl" / f"e{epoch:08d}"


def this_process(host: str | None = None) -> Identity:
    """A pair member that runs: this test's process, on this host (or on ``host``)."""
    return Identity("member", os.getpid(), host or socket.gethostname())


def take_lease(home: Path, host: str | None = None, duration: float = 60.0) -> None:
    """This host's process holds the job's (file) lease, as ``xscl serve``'s primary."""
    lease = FileLease(pair_folder(home, "xscl"), identity=this_process(host), duration=duration)
    assert lease.acquire(lease.read()) is not None


def stand_by(home: Path, beat_age: float = 0.0) -> None:
    """This host's process is a standby whose last heartbeat is ``beat_age`` seconds old."""
    board = StandbyBoard(pair_folder(home, "xscl") / "standbys")
    board.beat(this_process(), time.time() - 100, duration=3.0, warm=True)
    beat = board.folder / "member.json"
    body = json.loads(beat.read_text())
    beat.write_text(json.dumps({**body, "renewed": body["renewed"] - beat_age}))


def commit(home: Path, batch: int, offset: int, age: float, epoch: int = 1) -> None:
    """Write batch ``batch`` of the checkpoint as Spark does, committed ``age`` seconds ago
    (in an epoch that started before it)."""
    checkpoint = checkpoint_of(home, epoch)
    for folder in ("offsets", "commits"):
        (checkpoint / folder).mkdir(parents=True, exist_ok=True)
    (checkpoint / "offsets" / str(batch)).write_text(
        'v1\n{"batchWatermarkMs":0,"batchTimestampMs":1795566591629,"conf":{}}\n'
        f'{{"offset": {offset}}}'
    )
    done = checkpoint / "commits" / str(batch)
    done.write_text('v1\n{"nextBatchWatermarkMs":0}')
    moment = time.time() - age
    os.utime(done, (moment, moment))
    os.utime(checkpoint, (moment - 1, moment - 1))


def check(home: Path, started_ago: float = 3600, *options: str) -> tuple[int, str]:
    """Run the liveness check (or, with ``--readiness``, the readiness check)."""
    argv = [
        "--home",
        str(home),
        "--stall-seconds",
        str(STALL),
        "--started-at",
        str(time.time() - started_ago),
        *options,
    ]
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done.returncode, done.stdout


# ---- liveness of the primary: is the job making progress? -------------------------------


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A home whose lease this host's running process holds: the probe's pod is the primary."""
    take_lease(tmp_path)
    return tmp_path


def test_caught_up_is_healthy_however_old_the_last_commit(home: Path) -> None:
    fill_spool(home, 5)
    commit(home, 0, 5, age=10 * STALL)
    code, line = check(home)
    assert code == 0 and line.startswith("primary: ok: caught up")
    assert "spool head 5, committed offset 5, lag 0" in line


def test_waiting_documents_and_a_recent_commit_is_working(home: Path) -> None:
    fill_spool(home, 8)
    commit(home, 0, 3, age=STALL * 2)
    commit(home, 1, 5, age=30)
    code, line = check(home)
    assert code == 0 and line.startswith("primary: ok: working (batch 1 committed")
    assert "lag 3" in line


def test_waiting_documents_and_an_old_commit_is_stalled(home: Path) -> None:
    fill_spool(home, 8)
    commit(home, 4, 5, age=STALL + 100)
    code, line = check(home)
    assert code == 1 and line.startswith("primary: stalled: documents wait and batch 4 committed")


def test_a_batch_planned_but_not_committed_does_not_count(home: Path) -> None:
    fill_spool(home, 8)
    commit(home, 0, 5, age=STALL + 100)
    (checkpoint_of(home) / "offsets" / "1").write_text('v1\n{}\n{"offset": 8}')
    code, line = check(home)
    assert code == 1 and "committed offset 5, lag 3" in line


def test_the_newest_epoch_is_read(home: Path) -> None:
    """After a restart or a take-over the job commits in a new epoch's checkpoint."""
    fill_spool(home, 8)
    commit(home, 3, 8, age=STALL * 3, epoch=2)
    commit(home, 1, 4, age=STALL * 3, epoch=10)
    code, line = check(home)
    assert code == 1 and "batch 1 committed" in line and "committed offset 4, lag 4" in line


def test_a_take_over_gets_the_stall_time_for_its_first_batch(home: Path) -> None:
    """A standby that took over long after its start continues from an old commit."""
    fill_spool(home, 8)
    commit(home, 3, 5, age=STALL * 3, epoch=2)
    (checkpoint_of(home, 3) / "commits").mkdir(parents=True)  # the new epoch's fork, now
    code, line = check(home, STALL * 10)
    assert code == 0 and "primary: ok: working" in line


def test_a_fresh_start_gets_the_stall_time_before_its_first_commit(home: Path) -> None:
    fill_spool(home, 3)
    code, line = check(home, 60)
    assert code == 0 and "no batch committed since the start" in line
    code, line = check(home, STALL + 60)
    assert code == 1 and "no batch committed since the start" in line


def test_a_restart_gets_the_stall_time_again(home: Path) -> None:
    fill_spool(home, 8)
    commit(home, 0, 5, age=STALL * 3)
    assert check(home, 60)[0] == 0


def test_an_empty_spool_is_caught_up(home: Path) -> None:
    code, line = check(home)
    assert code == 0 and "lag 0" in line


def test_an_unreadable_checkpoint_passes_with_the_reason(home: Path) -> None:
    fill_spool(home, 3)
    commit(home, 0, 1, age=STALL * 3)
    (checkpoint_of(home) / "offsets" / "0").write_text("v1\n{}\nnot json")
    code, line = check(home)
    assert code == 0 and line.startswith("unknown: cannot read the job's progress")


# ---- liveness of a standby: it commits nothing by design -------------------------------


def test_a_following_standby_is_alive_while_the_primary_stalls(tmp_path: Path) -> None:
    take_lease(tmp_path, host="driver-0")  # the primary runs in another pod
    stand_by(tmp_path, beat_age=1)
    fill_spool(tmp_path, 8)
    commit(tmp_path, 0, 1, age=STALL * 3)
    code, line = check(tmp_path)
    assert code == 0 and line.startswith("standby: ok: last heartbeat 1 s ago")


def test_a_standby_whose_heartbeat_stopped_is_stalled(tmp_path: Path) -> None:
    stand_by(tmp_path, beat_age=STALL + 60)
    code, line = check(tmp_path)
    assert code == 1 and line.startswith("standby: stalled: last heartbeat")


def test_neither_primary_nor_standby_is_alive_only_while_it_starts(tmp_path: Path) -> None:
    take_lease(tmp_path, host="driver-0")
    assert check(tmp_path, 60) == (0, "starting: ok: not in the pair 60 s after the start "
                                      f"(limit {STALL:.0f} s)\n")  # fmt: skip
    code, line = check(tmp_path, STALL + 60)
    assert code == 1 and line.startswith("starting: stalled: not in the pair")


def test_a_lease_of_a_process_gone_from_this_host_is_not_ours(tmp_path: Path) -> None:
    """The container restarted: the lease names the pid of its previous process."""
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    lease = FileLease(
        pair_folder(tmp_path, "xscl"),
        identity=Identity("old", int(gone.stdout), socket.gethostname()),
    )
    assert lease.acquire(None) is not None
    assert check(tmp_path, 60)[1].startswith("starting: ok")


# ---- readiness: the primary, or a standby following it ---------------------------------


def test_the_primary_with_a_live_lease_is_ready(home: Path) -> None:
    assert check(home, 60, "--readiness") == (0, "ready: primary\n")


def test_a_primary_whose_lease_expired_is_not_ready(tmp_path: Path) -> None:
    take_lease(tmp_path, duration=0.001)
    time.sleep(0.01)
    assert check(tmp_path, 60, "--readiness") == (1, "not ready: primary whose lease expired\n")


def test_a_following_standby_is_ready_however_long_the_primary_stalls(tmp_path: Path) -> None:
    take_lease(tmp_path, host="driver-0")
    stand_by(tmp_path)
    fill_spool(tmp_path, 8)
    commit(tmp_path, 0, 1, age=STALL * 3)
    assert check(tmp_path, 60, "--readiness") == (0, "ready: standby following the primary\n")


def test_a_pod_not_yet_in_the_pair_is_not_ready(tmp_path: Path) -> None:
    take_lease(tmp_path, host="driver-0")
    code, line = check(tmp_path, 60, "--readiness")
    assert code == 1 and line.startswith("not ready: neither")


def test_an_unreadable_lease_is_not_ready_and_passes_liveness(tmp_path: Path) -> None:
    claims = pair_folder(tmp_path, "xscl") / "claims"
    claims.mkdir(parents=True)
    (claims / "00000001.json").write_text("not a lease")
    code, line = check(tmp_path, 60, "--readiness")
    assert code == 1 and line.startswith("not ready: cannot read the lease")
    code, line = check(tmp_path, STALL * 10)
    assert code == 0 and line.startswith("unknown: cannot read the lease")


@pytest.mark.skipif(not Path("/proc/1/stat").exists(), reason="needs Linux /proc")
def test_process_start_is_in_the_past() -> None:
    assert health.process_start(os.getpid()) <= time.time()
    assert time.time() - health.process_start(os.getpid()) < 3600
