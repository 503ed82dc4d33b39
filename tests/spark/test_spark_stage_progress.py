"""Progress inside a long micro-batch (issue 36, defect 15): ``xscl serve`` prints the
tasks done of the running batch's stages and the documents read, polled from Spark's
status tracker (``spark_plugin.stage_progress``); ``--quiet`` silences it."""

from __future__ import annotations

import re
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.spark.served import QUERIES, example_documents
from xscl.cli.main import main
from xscl.connectors.spool import Spool
from xscl.spark_plugin.stage_progress import StageCount, StageProgress, running_batch, stage_counts

#: A line of the running batch, as ``xscl serve`` prints it on stderr.
LINE = re.compile(
    r"\[xscl\] batch (\d+) \((\d+) documents\): routing (\d+)/(\d+) tasks "
    r"\(~(\d+) documents read\), join groups (\d+)/(\d+) tasks, writing (\d+)/(\d+) tasks"
)


class _Tracker:
    """Spark's status tracker as ``stage_counts`` uses it: one job of ``run`` runs."""

    def __init__(self, stages: dict[int, tuple[int, int]], run: str = "run-1") -> None:
        self.stages = stages
        self.run = run
        self.active = [7]

    def getJobIdsForGroup(self, group: str) -> list[int]:
        return [5, 7] if group == self.run else [9]

    def getActiveJobsIds(self) -> list[int]:
        return self.active

    def getJobInfo(self, job: int) -> Any:
        return SimpleNamespace(jobId=job, stageIds=list(reversed(self.stages)), status="RUNNING")

    def getStageInfo(self, stage: int) -> Any:
        done, total = self.stages[stage]
        return SimpleNamespace(stageId=stage, numCompletedTasks=done, numTasks=total)


def _offsets(checkpoint: Path, batch: int, end: int) -> None:
    folder = checkpoint / "offsets"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / str(batch)).write_text(f'v1\n{{"batchWatermarkMs":0}}\n{{"offset":{end}}}\n')


def test_the_stages_of_the_querys_running_job_are_named_by_what_they_do() -> None:
    tracker = _Tracker({12: (3, 8), 13: (1, 4), 14: (0, 4)})
    assert stage_counts(tracker, "run-1") == (
        StageCount("routing", 3, 8), StageCount("join groups", 1, 4), StageCount("writing", 0, 4)
    )  # fmt: skip
    assert stage_counts(tracker, "another query's run") is None  # its job 9 is not running
    tracker.active = []
    assert stage_counts(tracker, "run-1") is None
    other = _Tracker({20: (1, 2), 21: (0, 2)})  # a plan of another shape
    assert [s.name for s in stage_counts(other, "run-1") or ()] == ["stage 1", "stage 2"]


def test_the_running_batch_and_its_documents_come_from_the_offset_log(tmp_path: Path) -> None:
    assert running_batch(tmp_path) is None
    _offsets(tmp_path, 0, 40)
    assert running_batch(tmp_path) == (0, 40)  # a new query starts at offset 0
    _offsets(tmp_path, 1, 100)
    assert running_batch(tmp_path) == (1, 60)


def test_a_line_once_a_batch_was_seen_running_twice_then_on_each_change(tmp_path: Path) -> None:
    tracker = _Tracker({1: (0, 8), 2: (0, 4), 3: (0, 4)})
    spark = SimpleNamespace(sparkContext=SimpleNamespace(statusTracker=lambda: tracker))
    query = SimpleNamespace(runId="run-1", name="job")
    lines: list[str] = []
    watcher = StageProgress(spark, query, tmp_path, lines.append, interval=60)
    _offsets(tmp_path, 0, 1000)
    assert watcher.poll() is None  # first seen: a short batch prints nothing
    assert watcher.poll() is not None  # still running at the next look
    assert watcher.poll() is None  # nothing changed
    tracker.stages[1] = (2, 8)
    watcher.poll()
    assert lines == [
        "[job] batch 0 (1,000 documents): routing 0/8 tasks (~0 documents read), "
        "join groups 0/4 tasks, writing 0/4 tasks",
        "[job] batch 0 (1,000 documents): routing 2/8 tasks (~250 documents read), "
        "join groups 0/4 tasks, writing 0/4 tasks",
    ]
    _offsets(tmp_path, 1, 1500)  # the next batch: seen once, no line yet
    tracker.stages[1] = (0, 8)
    assert watcher.poll() is None and len(lines) == 2
    tracker.active = []  # between batches
    assert watcher.poll() is None


def _serve(home: Path, *extra: str) -> int:
    return main(["serve", "--queries", str(QUERIES), "--home", str(home), "--once",
                 "--progress-seconds", "0.2", *extra])  # fmt: skip


@pytest.mark.spark
def test_serve_shows_the_progress_of_a_running_batch_and_quiet_silences_it(
    spark: Any, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """``serve --once`` over 600 documents, one batch of them (and one of what its join
    groups published), polled every 0.2 s: lines with the batch's documents and counts
    that only grow, then the batch's end line."""
    docs = example_documents(100)
    for home in (tmp_path / "shown", tmp_path / "quiet"):
        with Spool(home / "spool") as spool:
            spool.append(docs)
    capfd.readouterr()
    assert _serve(tmp_path / "shown") == 0
    time.sleep(0.5)  # the JVM's stderr is passed on by a thread
    err = capfd.readouterr().err.splitlines()
    running = [LINE.fullmatch(line) for line in err if " documents): " in line]
    assert running and all(running), err
    counts = [tuple(int(g) for g in m.groups()) for m in running if m is not None]
    # batch 0 reads all 600; a batch 1 reads what busy_author published from a join
    assert {c[:2] for c in counts} <= {(0, len(docs)), (1, 0)}, err
    assert (0, len(docs)) in {c[:2] for c in counts}, err
    for _batch, documents, routed, routing, read, joined, joins, written, writes in counts:
        assert read == documents * routed // routing
        assert routed <= routing and joined <= joins and written <= writes
    first = [c[2:] for c in counts if c[0] == 0]
    assert first == sorted(first)  # counts only grow
    ended = [line for line in err if line.startswith("[xscl] batch 0: ")]
    assert ended and ended[0].startswith(f"[xscl] batch 0: {len(docs)} docs, "), err
    of_batch_0 = [err.index(m.group(0)) for m in running if m and m.group(1) == "0"]
    assert err.index(ended[0]) > max(of_batch_0), err

    assert _serve(tmp_path / "quiet", "--quiet") == 0
    time.sleep(0.5)
    quiet = capfd.readouterr().err
    assert "[xscl]" not in quiet and " documents): " not in quiet, quiet
