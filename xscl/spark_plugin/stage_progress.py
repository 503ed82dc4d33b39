"""Progress inside a long micro-batch: its stages' tasks, polled from Spark's status
tracker (what ``xscl serve`` prints while a large backlog is one batch).

``ProgressPrinter`` (``progress``) prints a batch's figures only when it ends; a first
backlog of 100,000 documents is one batch of minutes. ``StageProgress`` is a driver
thread that, every ``interval`` seconds, asks Spark's status tracker which job of the
streaming query runs (the query's jobs carry its run id as their job group) and how
many tasks each of its stages finished, and reads the batch's offsets from the
checkpoint's offset log (how many spool documents it reads). Once two polls in a row
saw the same batch running, it prints one line each time these counts change, e.g.::

    [xscl] batch 0 (100,000 documents): routing 4/10 tasks (~40,000 documents read),
    join groups 0/4 tasks, writing 0/4 tasks

(one line, cut here)

A batch's job has the three stages of the job's plan (``job.plan``: two shuffles), in
the order of their ids: ``routing`` (the spool read, Stage 1 and the routing, one task
per range of at most ``spool_source.DEFAULT_RECORDS_PER_PARTITION`` documents), ``join
groups`` (one task per state partition) and ``writing`` (one task per feed owner). A
job of another shape (a plan this module does not know) names them ``stage 1``,
``stage 2``, .... The documents read are estimated from the routing tasks done: the
ranges are of equal size but the last.

What it costs: a few status-tracker calls (Py4J) and one small file read per poll,
on the driver; nothing per document, nothing on the executors. Short batches (under
``interval``) print nothing: the end-of-batch line says it all.

Where it runs: the driver, one thread per ``xscl serve`` primary run.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xscl.service.pair.epochs import batch_end_offset, newest_planned_batch

#: What the stages of a batch's job do, in the order of their ids (``job.plan``).
STAGE_NAMES = ("routing", "join groups", "writing")
#: Seconds between two polls by default (``xscl serve --progress-seconds``).
DEFAULT_INTERVAL = 5.0


@dataclass(frozen=True)
class StageCount:
    """One stage of a batch's job: tasks finished of all."""

    name: str
    done: int
    total: int


@dataclass(frozen=True)
class BatchSnapshot:
    """Where a running micro-batch is (driver)."""

    batch_id: int
    #: spool documents the batch reads (None: its offsets are unknown)
    documents: int | None
    stages: tuple[StageCount, ...]

    def line(self, query: str) -> str:
        """The printed line.

        >>> snapshot = BatchSnapshot(3, 1000, (StageCount("routing", 1, 4),))
        >>> snapshot.line("xscl")
        '[xscl] batch 3 (1,000 documents): routing 1/4 tasks (~250 documents read)'
        """
        head = f"[{query}] batch {self.batch_id}"
        if self.documents is not None:
            head += f" ({self.documents:,} documents)"
        parts = []
        for stage in self.stages:
            text = f"{stage.name} {stage.done}/{stage.total} tasks"
            if stage.name == STAGE_NAMES[0] and self.documents is not None and stage.total:
                read = self.documents * stage.done // stage.total
                text += f" (~{read:,} documents read)"
            parts.append(text)
        return f"{head}: {', '.join(parts) or 'planning'}"


def stage_counts(tracker: Any, run_id: str) -> tuple[StageCount, ...] | None:
    """The stages of the streaming query's running job (None: no job of it runs).

    ``tracker``: the ``SparkContext``'s ``statusTracker()``; ``run_id``: the query's
    run id, which Spark sets as the job group of every job of its micro-batches.
    """
    running = sorted(set(tracker.getJobIdsForGroup(run_id)) & set(tracker.getActiveJobsIds()))
    if not running:
        return None
    job = tracker.getJobInfo(running[-1])
    if job is None:
        return None
    ids = sorted(job.stageIds)
    names: tuple[str, ...] = STAGE_NAMES
    if len(ids) != len(STAGE_NAMES):  # a plan of another shape
        names = tuple(f"stage {n}" for n in range(1, len(ids) + 1))
    counts = []
    for name, stage_id in zip(names, ids, strict=True):
        info = tracker.getStageInfo(stage_id)
        done, total = (0, 0) if info is None else (info.numCompletedTasks, info.numTasks)
        counts.append(StageCount(name, done, total))
    return tuple(counts)


def running_batch(checkpoint: Path) -> tuple[int, int | None] | None:
    """The batch the checkpoint's offset log planned last, and the documents it reads
    (None: no batch planned yet). Spark writes a batch's offsets before it runs it."""
    batch = newest_planned_batch(checkpoint)
    if batch < 0:
        return None
    end = batch_end_offset(checkpoint, batch)
    start = batch_end_offset(checkpoint, batch - 1) if batch > 0 else 0
    if end is None or start is None:
        return batch, None
    return batch, max(0, end - start)


class StageProgress:
    """The polling thread (see the module docstring); ``start`` and ``stop`` it on the
    driver around the streaming query's run."""

    def __init__(
        self,
        spark: Any,
        query: Any,
        checkpoint: str | Path,
        emit: Callable[[str], None],
        *,
        interval: float = DEFAULT_INTERVAL,
        name: str | None = None,
    ) -> None:
        self.tracker = spark.sparkContext.statusTracker()
        self.run_id = str(query.runId)
        self.name = name or str(query.name)
        self.checkpoint = Path(checkpoint)
        self.emit = emit
        self.interval = interval
        #: the lines printed (for tests and the report)
        self.lines: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="xscl-stage-progress", daemon=True)
        self._seen: int | None = None  # the batch the last poll saw running
        self._last: BatchSnapshot | None = None

    def start(self) -> StageProgress:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop polling (before the query and the session stop: no Py4J call after)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.poll()
            except Exception:  # the session stopping under a poll: stop quietly
                return

    def poll(self) -> BatchSnapshot | None:
        """One look (every ``interval`` seconds): the running batch's line, printed when
        an earlier poll saw the same batch running and its counts changed since."""
        stages = stage_counts(self.tracker, self.run_id)
        planned = running_batch(self.checkpoint) if stages is not None else None
        if stages is None or planned is None:
            self._seen = None
            return None
        batch, documents = planned
        snapshot = BatchSnapshot(batch, documents, stages)
        seen, self._seen = self._seen, batch
        if seen != batch or snapshot == self._last:
            return None
        self._last = snapshot
        line = snapshot.line(self.name)
        self.lines.append(line)
        self.emit(line)
        return snapshot
