"""Process pairs: ``xscl serve`` started twice on one home, the primary killed or paused.

Both scenarios start two instances of the job at once on the spool of
``tests/spark/served.py`` (two documents per micro-batch) and check that exactly one
took the lease (one claim, the other standing by). Once the standby is warm
(``pair.warm``) the rest of the documents arrive.

* **kill -9 of the primary** (its whole process group) one commit later: the
  standby takes over, continues after the last batch the primary committed, and
  finishes the spool. The take-over time (kill -> the new epoch's first commit) is
  printed; docs/benchmarks.md records it.
* **a zombie primary**: frozen (SIGSTOP) with a micro-batch in flight, past its
  lease, until the standby has taken over and committed; then resumed (SIGCONT). It
  must exit with ``EXIT_FENCED`` and the ``XSCL-S020`` line, and nothing it wrote
  after that is read: the markers readers see from its epoch are exactly those they
  saw before it resumed, the feeds link names the new epoch.

Both end with the exactly-once check: the result set equals the reference's, no
result id is committed twice, every batch is committed once.
"""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.spark.killing import Job, JobFailed, wait_for_commits, wait_for_event
from tests.spark.served import Fixture
from xscl.cli.main import main
from xscl.spark_plugin.pair.file_lease import FileLease
from xscl.spark_plugin.pair.member import StandbyBoard
from xscl.spark_plugin.results_sink import (
    committed_markers,
    epoch_chain,
    epoch_folder,
    visible_markers,
)
from xscl.spark_plugin.submit import EXIT_FENCED

pytestmark = [
    pytest.mark.spark,
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc and inotify"),
]
#: Seconds a job may take to start and reach what we wait for (a loaded machine).
TIMEOUT = 300.0
ARGS = ("--trigger-seconds", "0.5", "--quiet", "--lease-seconds", "3")
#: Documents spooled at the start; the rest arrive once the standby is warm.
FIRST = 6


def _roles(run: Fixture, first: Job, second: Job) -> tuple[Job, Job]:
    """(primary, standby) once one holds the lease and the other stands by, warm."""
    lease = FileLease(run.paths.home / "pair" / "xscl")
    board = StandbyBoard(run.paths.home / "pair" / "xscl" / "standbys")
    deadline = time.monotonic() + TIMEOUT
    while True:
        record = lease.read()
        standbys = board.live()
        if record is not None and standbys and all(s["warm"] for s in standbys):
            break
        for job in (first, second):
            if not job.running():
                raise JobFailed(f"an instance exited (rc {job.process.returncode}):\n"
                                f"{job.log_tail()}")
        assert time.monotonic() < deadline, "no primary and standby in time"
        time.sleep(0.1)
    assert lease.newest_epoch() == 1, "two instances started at once: one claim only"
    primary, standby = (first, second) if record.pid == first.pid else (second, first)
    assert record.pid == primary.pid
    assert [int(s["pid"]) for s in standbys] == [standby.pid]
    return primary, standby


def _first_marker_of(run: Fixture, epoch: int, since: float) -> float:
    """Seconds from ``since`` (monotonic) until epoch ``epoch`` committed a batch."""
    commits = epoch_folder(run.paths.results, epoch) / "_commits"
    deadline = time.monotonic() + TIMEOUT
    while not (commits.is_dir() and any(commits.glob("[0-9]*.json"))):
        assert time.monotonic() < deadline, f"epoch {epoch} committed nothing"
        time.sleep(0.01)
    return time.monotonic() - since


def _finish(run: Fixture, job: Job) -> None:
    """Let ``job`` commit the rest of the spool."""
    wait_for_commits(job, run.paths, run.batches, TIMEOUT)


def _status(run: Fixture, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["status", "--home", str(run.paths.home), "--json"]) == 0
    return dict(json.loads(capsys.readouterr().out))


def test_the_standby_takes_over_from_a_killed_primary_exactly_once(
    java: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = Fixture(tmp_path, per_batch=2, first=FIRST)
    with run.start(*ARGS, log="a.log") as first, run.start(*ARGS, log="b.log") as second:
        primary, standby = _roles(run, first, second)
        wait_for_commits(primary, run.paths, FIRST // 2, TIMEOUT)
        status = _status(run, capsys)
        assert (status["primary"]["pid"], status["primary"]["epoch"]) == (primary.pid, 1)
        assert [s["pid"] for s in status["standbys"]] == [standby.pid]
        assert status["spool_head"] == FIRST
        run.append_rest()
        wait_for_commits(primary, run.paths, FIRST // 2 + 1, TIMEOUT)
        killed = time.monotonic()
        primary.kill()
        before = run.committed()
        takeover = _first_marker_of(run, 2, killed)
        _finish(run, standby)
    status = _status(run, capsys)
    assert (status["primary"]["pid"], status["primary"]["epoch"]) == (standby.pid, 2)
    assert (status["last_batch"], status["lag"]) == (run.batches - 1, 0)
    chain = epoch_chain(run.paths.results)
    story = (f"primary pid {primary.pid} killed after {before} commits; the standby's first "
             f"commit {takeover:.2f} s later; epochs {chain}")
    assert [epoch for epoch, _after in chain] == [1, 2], story
    run.check_exactly_once(story)
    print(story)


def test_a_zombie_primary_writes_nothing_visible_and_exits_fenced(
    java: Path, tmp_path: Path
) -> None:
    run = Fixture(tmp_path, per_batch=2, first=FIRST)
    with run.start(*ARGS, log="a.log") as first, run.start(*ARGS, log="b.log") as second:
        primary, standby = _roles(run, first, second)
        run.append_rest()
        # frozen with a batch in flight: its results staged, not committed
        after = FIRST // 2 + 1
        wait_for_event(primary, run.paths, "staged", after_commits=after, timeout=TIMEOUT)
        primary.signal_group(signal.SIGSTOP)
        frozen = time.monotonic()
        seen = {(f.name, m["batch"]) for f, m in visible_markers(run.paths.results)}
        takeover = _first_marker_of(run, 2, frozen)
        wait_for_commits(standby, run.paths, len(seen) + 2, TIMEOUT)
        zombie = epoch_folder(run.paths.results, 1)
        before_resume = {(zombie.name, m["batch"]) for m in committed_markers(zombie)}
        primary.signal_group(signal.SIGCONT)
        code = primary.process.wait(timeout=TIMEOUT)
        log = primary.log_tail()
        _finish(run, standby)
    after = {(f.name, m["batch"]) for f, m in visible_markers(run.paths.results)}
    from_zombie = {item for item in after if item[0] == zombie.name}
    written_late = {(zombie.name, m["batch"]) for m in committed_markers(zombie)} - before_resume
    story = (f"primary pid {primary.pid} frozen after {len(seen)} commits, the standby's "
             f"first commit {takeover:.2f} s later; after SIGCONT it exited {code} and "
             f"committed {sorted(written_late)} in its own epoch")
    assert code == EXIT_FENCED, f"{story}\n{log}"
    assert "XSCL-S020" in log, f"{story}\n{log}"
    assert from_zombie <= seen, f"{story}\nvisible from the zombie: {sorted(from_zombie - seen)}"
    feeds = (run.paths.results / "feeds").resolve()
    assert feeds == (epoch_folder(run.paths.results, 2) / "feeds").resolve(), story
    run.check_exactly_once(story)
    print(story)
