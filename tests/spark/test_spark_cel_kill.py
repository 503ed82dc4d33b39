"""kill -9 of ``xscl serve --cel-queries`` inside the CEL query's micro-batches: exactly once.

docs/cel.md 10 and docs/architecture.md ("The CEL query"): the CEL query (job ``NAME.cel``,
its own checkpoint and results folder, forked per epoch like the XSCL job's)
survives a kill -9 of the driver at any moment. The generated CEL workload
(``tests/spark/cel_events.py``) arrives as files published (``xscl cel publish``)
one after each CEL commit, in an order within the reorder slack. The job is
SIGKILLed at a point of a CEL batch (``tests/spark/killing.py``, aimed at the CEL
job's folders: ``offsets`` logged, ``state`` committed, a part ``staged``, the
batch ``marked``), drawn with the number of further commits from a seed that
changes per run (printed; ``XSCL_KILL_SEED=N`` repeats run N), then restarted
``--once`` in this process (a second kill costs another driver JVM, 30-40 s here).

The check: the committed CEL result set equals the reference's over the events the
run releases (a failure-free run: ``tests/spark/test_spark_cel_arrival.py`` shows
the batch split does not matter), no result id is committed twice, nothing was
dead-lettered as late and no staged file is left over.
"""

from __future__ import annotations

import contextlib
import random
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.spark.cel_events import (
    GENERATED,
    arrival_order,
    dead_letters,
    generated_events,
    publish,
    released,
    split,
)
from tests.spark.killing import Job, JobPaths, Kill, kill_at
from tests.spark.served import QUERIES, result_ids_of_parts
from tests.workloads import run_seed
from xscl.connectors.spool import Spool
from xscl.events.envelope import Event
from xscl.events.event_folder import events_folder
from xscl.results.commit import STAGING
from xscl.results.read import committed_markers, read_results
from xscl.spark_plugin.cel.batch import result_of
from xscl.spark_plugin.submit import main

pytestmark = [
    pytest.mark.spark,
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc and inotify"),
]
#: Seed of the kill plan and the workload: another each run; XSCL_KILL_SEED=N repeats run N.
SEED = run_seed("XSCL_KILL_SEED")
#: The kill points of ``killing.POINTS`` a CEL batch has (``stage1`` is the XSCL job's).
POINTS = ("offsets", "state", "staged", "marked")
#: Kills per run: each one costs a driver JVM start.
KILLS = 1
FILES = 8
SLACK = 3_000_000
#: Seconds a job may take to start and reach what we wait for (a loaded machine).
TIMEOUT = 300.0


def kill_plan(seed: int) -> list[tuple[str, int]]:
    """(point, further commits to wait for) per kill: KILLS points, seeded order."""
    rng = random.Random(seed)
    return [(point, rng.randint(1, 2)) for point in rng.sample(POINTS, KILLS)]


class Publisher:
    """Publishes the next events file each time the CEL job committed another batch,
    so each file is a batch of its own (as long as the job keeps up)."""

    def __init__(self, files: Sequence[Sequence[Event]], folder: Path, paths: JobPaths) -> None:
        self.todo = list(files)
        self.folder = folder
        self.paths = paths

    def _commits(self) -> int:
        return len(committed_markers(self.paths.results))

    def _publish_next(self) -> None:
        publish(self.folder, self.todo.pop(0))

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        """Publish in a thread while the block runs."""
        stop = threading.Event()
        failed: list[BaseException] = []

        def loop() -> None:
            try:
                while self.todo and not stop.is_set():
                    seen = self._commits()
                    self._publish_next()
                    while not stop.is_set() and self._commits() <= seen:
                        stop.wait(0.05)
            except BaseException as exc:  # re-raised by the test's thread
                failed.append(exc)

        thread = threading.Thread(target=loop, daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
        if failed:
            raise failed[0]

    def publish_rest(self) -> None:
        while self.todo:
            self._publish_next()


def test_serve_killed_inside_cel_batches_gives_the_failure_free_result_set(
    spark: Any, tmp_path: Path
) -> None:
    print(f"XSCL_KILL_SEED={SEED}")
    rng = random.Random(SEED)
    events = arrival_order(generated_events(SEED), SLACK, rng)
    expected = released(GENERATED, events, SLACK)
    home = tmp_path / "home"
    with Spool(home / "spool", sync=False):
        pass  # the XSCL query beside it has no documents: every batch is the CEL query's
    cel = tmp_path / "queries.cel"
    cel.write_text(GENERATED, encoding="utf-8")
    options = [
        "--queries", str(QUERIES), "--home", str(home), "--cel-queries", str(cel),
        "--cel-reorder-slack", f"{SLACK // 1_000_000}s", "--quiet",
    ]  # fmt: skip
    paths = JobPaths(home, "xscl.cel")
    publisher = Publisher(split(events, FILES, rng), events_folder(home, "xscl"), paths)
    kills: list[Kill] = []

    def story() -> str:
        return f"XSCL_KILL_SEED={SEED}; " + "; ".join(k.describe() for k in kills)

    argv = [sys.executable, "-m", "xscl.spark_plugin.submit", *options]
    for point, further in kill_plan(SEED):
        arm = len(committed_markers(paths.results)) + further
        with (
            publisher.running(),
            Job([*argv, "--trigger-seconds", "0.5"], tmp_path / "jobs.log", tmp_path) as job,
        ):
            kills.append(kill_at(job, paths, point, after_commits=arm, timeout=TIMEOUT))
    assert all(k.inside for k in kills), story()
    assert publisher.todo, f"{story()}\nevery file was published before the last kill"

    publisher.publish_rest()
    assert main([*options, "--once"]) == 0, story()
    records = list(read_results(paths.results, key="id"))
    got = {result_of(r) for r in records}
    missing, extra = expected - got, got - expected
    assert not missing and not extra, f"{story()}\nmissing {missing}\nunexpected {extra}"
    ids = result_ids_of_parts(paths.results, key="id")
    twice = sorted({i for i in ids if ids.count(i) > 1})
    assert not twice, f"{story()}\ncommitted twice: {twice}"
    assert dead_letters(paths.results) == [], story()
    leftovers = sorted(str(p) for p in paths.results.glob(f"*/{STAGING}/*"))
    assert not leftovers, f"{story()}\norphaned staging files: {leftovers}"
    print(story())
