"""files/job_health.py (the driver's liveness check) tells a stalled job from a working one.

The spool is a real one (written with ``Spool``); the checkpoint is laid out as Spark writes
it (``offsets/N``: a version line, the batch's metadata, the source's offset;
``commits/N``), as read from a checkpoint of ``xscl serve``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.deploy.chartkit import CHART, load_script
from xscl.connectors.document import Document
from xscl.connectors.spool import Spool

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
    """The checkpoint of epoch ``epoch`` of the job (``xscl.spark_plugin.pair.epochs``)."""
    return home / "checkpoints" / "xscl" / f"e{epoch:08d}"


def commit(home: Path, batch: int, offset: int, age: float, epoch: int = 1) -> None:
    """Write batch ``batch`` of the checkpoint as Spark does, committed ``age`` seconds ago."""
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


def check(home: Path, started_ago: float = 3600) -> tuple[int, str]:
    argv = [
        "--home",
        str(home),
        "--stall-seconds",
        str(STALL),
        "--started-at",
        str(time.time() - started_ago),
    ]
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done.returncode, done.stdout


def test_caught_up_is_healthy_however_old_the_last_commit(tmp_path: Path) -> None:
    fill_spool(tmp_path, 5)
    commit(tmp_path, 0, 5, age=10 * STALL)
    code, line = check(tmp_path)
    assert code == 0 and line.startswith("ok: caught up")
    assert "spool head 5, committed offset 5, lag 0" in line


def test_waiting_documents_and_a_recent_commit_is_working(tmp_path: Path) -> None:
    fill_spool(tmp_path, 8)
    commit(tmp_path, 0, 3, age=STALL * 2)
    commit(tmp_path, 1, 5, age=30)
    code, line = check(tmp_path)
    assert code == 0 and line.startswith("ok: working (batch 1 committed")
    assert "lag 3" in line


def test_waiting_documents_and_an_old_commit_is_stalled(tmp_path: Path) -> None:
    fill_spool(tmp_path, 8)
    commit(tmp_path, 4, 5, age=STALL + 100)
    code, line = check(tmp_path)
    assert code == 1 and line.startswith("stalled: documents wait and batch 4 committed")


def test_a_batch_planned_but_not_committed_does_not_count(tmp_path: Path) -> None:
    fill_spool(tmp_path, 8)
    commit(tmp_path, 0, 5, age=STALL + 100)
    (checkpoint_of(tmp_path) / "offsets" / "1").write_text('v1\n{}\n{"offset": 8}')
    code, line = check(tmp_path)
    assert code == 1 and "committed offset 5, lag 3" in line


def test_the_newest_epoch_is_read(tmp_path: Path) -> None:
    """After a restart or a take-over the job commits in a new epoch's checkpoint."""
    fill_spool(tmp_path, 8)
    commit(tmp_path, 3, 8, age=STALL * 3, epoch=2)
    commit(tmp_path, 1, 4, age=STALL * 3, epoch=10)
    code, line = check(tmp_path)
    assert code == 1 and "batch 1 committed" in line and "committed offset 4, lag 4" in line


def test_a_fresh_start_gets_the_stall_time_before_its_first_commit(tmp_path: Path) -> None:
    fill_spool(tmp_path, 3)
    code, line = check(tmp_path, started_ago=60)
    assert code == 0 and "no batch committed since the start" in line
    code, line = check(tmp_path, started_ago=STALL + 60)
    assert code == 1 and "no batch committed since the start" in line


def test_a_restart_gets_the_stall_time_again(tmp_path: Path) -> None:
    fill_spool(tmp_path, 8)
    commit(tmp_path, 0, 5, age=STALL * 3)
    assert check(tmp_path, started_ago=60)[0] == 0


def test_an_empty_home_is_caught_up(tmp_path: Path) -> None:
    code, line = check(tmp_path / "nothing-yet")
    assert code == 0 and "lag 0" in line


def test_an_unreadable_checkpoint_passes_with_the_reason(tmp_path: Path) -> None:
    fill_spool(tmp_path, 3)
    commit(tmp_path, 0, 1, age=STALL * 3)
    (checkpoint_of(tmp_path) / "offsets" / "0").write_text("v1\n{}\nnot json")
    code, line = check(tmp_path)
    assert code == 0 and line.startswith("unknown: cannot read the job's progress")


@pytest.mark.skipif(not Path("/proc/1/stat").exists(), reason="needs Linux /proc")
def test_process_start_is_in_the_past() -> None:
    assert health.process_start(os.getpid()) <= time.time()
    assert time.time() - health.process_start(os.getpid()) < 3600
