"""kill -9 of the streaming job's driver or of an executor: exactly-once results anyway.

docs/architecture.md ("Exactly once across take-overs"): kill -9 of the driver or an executor
at any moment, restart, and the results equal a failure-free run (no loss, no
duplicate). Two scenarios, each over a spool of 30 generated documents and their
queries (``tests/workloads.py``) and a chain matched hop by hop (``served.CHAIN``: its
matches travel as composite events through the published spool, so each kill strikes
mid-chain), with 15 to 150 results:

* two documents per batch: the driver (Python, its JVM and the Python workers below
  it) is SIGKILLed three times in one run, each time at another point of a
  micro-batch, three of the five of ``tests/spark/killing.py`` (``offsets``,
  ``stage1`` inside Stage 1 on the executors, ``state`` inside the stateful
  operator's state commit, ``staged``, ``marked``), drawn with the order and the
  number of further commits from a seed that changes per run (printed;
  ``XSCL_KILL_SEED=N`` repeats run N), restarted after each kill, and finally run
  ``--once`` to the end;
* four documents per batch under ``local-cluster[2,1,1024]`` (two executor JVMs):
  both executor JVMs are frozen (SIGSTOP) as a batch starts, the one the driver sends
  a task to is SIGKILLed with that task in flight and the other resumed; Spark
  replaces the dead executor and reruns the lost task, and the ``--once`` run
  finishes by itself.

Both check: the final result set equals the reference evaluator's (a failure-free
run), no result_id is in the committed part files twice, and every batch committed.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.spark.killing import (
    POINTS,
    Kill,
    driver_port,
    executor_pids,
    kill_at,
    process_gone,
    unread_socket_bytes,
    wait_for_event,
)
from tests.spark.served import Fixture
from tests.workloads import run_seed
from xscl.spark_plugin.submit import main

pytestmark = [
    pytest.mark.spark,
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc and inotify"),
]
#: Seed of the kill plan and the workload: another each run; XSCL_KILL_SEED=N repeats run N.
SEED = run_seed("XSCL_KILL_SEED")
#: Kills per driver-kill run (of the len(POINTS) points).
KILLS = 3
#: Unread bytes on a frozen executor's sockets that mean the driver sent it a task.
TASK_BYTES = 1000
#: Seconds a job may take to start and reach what we wait for (a loaded machine).
TIMEOUT = 300.0


def kill_plan(seed: int) -> list[tuple[str, int]]:
    """(point, further commits to wait for) per driver kill: KILLS points, seeded order."""
    rng = random.Random(seed)
    points = rng.sample(POINTS, KILLS)
    return [(point, 1 if n == 0 else rng.randint(1, 2)) for n, point in enumerate(points)]


def test_driver_killed_at_several_points_gives_the_failure_free_result_set(
    spark: Any, tmp_path: Path
) -> None:
    print(f"XSCL_KILL_SEED={SEED}")
    run = Fixture(tmp_path, per_batch=2, seed=SEED)
    kills: list[Kill] = []
    for point, further in kill_plan(SEED):
        story = f"XSCL_KILL_SEED={SEED} (workload seed {run.seed}); " + "; ".join(
            k.describe() for k in kills
        )
        arm = run.committed() + further
        assert arm < run.batches, f"{story}\nthe spool is too short for the plan"
        with run.start("--trigger-seconds", "0.5", "--quiet", stage1_marks=True) as job:
            kills.append(kill_at(job, run.paths, point, after_commits=arm, timeout=TIMEOUT))
    story = f"XSCL_KILL_SEED={SEED} (workload seed {run.seed}); " + "; ".join(
        k.describe() for k in kills
    )
    assert all(k.inside for k in kills), story
    assert run.committed() < run.batches, f"{story}\nthe job finished before the last kill"

    # The last restart runs in this process on the shared session (a JVM start is
    # 10-40 s): a new pipeline, its state rebuilt from the spool, writing Parquet.
    final = tmp_path / "final.jsonl"
    code = main(
        run.options("--quiet", "--once", "--output", str(final), "--results-format", "parquet")
    )
    assert code == 0, story
    got = [json.loads(line) for line in final.read_text(encoding="utf-8").splitlines()]
    assert len(got) == len(run.expected), f"{story}\n--output has {len(got)} records"
    run.check_exactly_once(story)
    print(story)


def test_executor_killed_under_local_cluster_gives_the_failure_free_result_set(
    java: Path, tmp_path: Path
) -> None:
    print(f"XSCL_KILL_SEED={SEED}")
    run = Fixture(tmp_path, per_batch=4, seed=SEED)  # fewer batches: a few needed after the kill
    with run.start("--master", "local-cluster[2,1,1024]", "--once") as job:
        # A batch is planned: its task is about to go to an executor. Both executors
        # are frozen, so the task waits in the socket of the one the driver picked
        # (a LaunchTask is ~14 KB, clean-up RPCs ~200 bytes): that one is SIGKILLed
        # with the task in flight, which Spark must run again; the other resumes.
        batch = wait_for_event(job, run.paths, "offsets", after_commits=1, timeout=TIMEOUT)
        executors = executor_pids(job.pid)
        assert len(executors) == 2, f"expected 2 executor JVMs below the driver: {executors}"
        ports = {pid: driver_port(pid) for pid in executors}
        for pid in executors:
            os.kill(pid, signal.SIGSTOP)
        baseline = {pid: unread_socket_bytes(pid, ports[pid]) for pid in executors}

        def got_task(pid: int) -> bool:
            return unread_socket_bytes(pid, ports[pid]) >= baseline[pid] + TASK_BYTES

        deadline = time.monotonic() + TIMEOUT
        while not (chosen := [pid for pid in executors if got_task(pid)]):
            assert job.running() and time.monotonic() < deadline, (
                f"no task reached the frozen executors {executors}:\n{job.log_tail()}")
            time.sleep(0.02)
        victim = chosen[0]
        unread = unread_socket_bytes(victim, ports[victim]) - baseline[victim]
        committed = run.committed()
        os.kill(victim, signal.SIGKILL)
        for pid in executors:
            if pid != victim:
                os.kill(pid, signal.SIGCONT)
        story = (f"XSCL_KILL_SEED={SEED} (workload seed {run.seed}): "
                 f"executors {executors} frozen as batch {batch} was planned; pid {victim} got "
                 f"a task ({unread} unread bytes from the driver) and was SIGKILLed, "
                 f"{committed} of {run.batches} batches committed")
        while not process_gone(victim):
            assert time.monotonic() < deadline, f"{story}\nthe executor does not die"
            time.sleep(0.05)
        replacements: list[int] = []
        while job.running() and not replacements:
            replacements = [p for p in executor_pids(job.pid) if p not in executors]
            time.sleep(0.2)
        code = job.process.wait(timeout=TIMEOUT)
        assert code == 0, f"{story}\nthe job failed (rc {code}):\n{job.log_tail()}"
    story += f"; replacement executors {replacements}"
    assert committed < run.batches, f"{story}\nthe job finished before the executor died"
    assert replacements, f"{story}\nSpark did not start a new executor:\n{job.log_tail()}"
    run.check_exactly_once(story)
    print(story)
