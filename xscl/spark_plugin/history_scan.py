"""History on subscribe on Spark: a subscription's history scanned and committed by
batch jobs on the executors (docs/architecture.md, "History on subscribe").

A scan is the job's own plan (``job.plan``) run ``availableNow`` over the job's spool
from the history's first offset to ``end``, with a registry of its own holding only the
new queries (event 1: they see every document of the scan, so they are subscribed at
``span.start``), into a results folder of its own. Stage 1, the join groups and the
result parts run in executor tasks as in the live job.

Its results are then committed into the subscription's history folder by executor
tasks too (``commit_owned``): each task reads some of the part files the scan's run
committed, keeps the records the history owns (``service.history.owned_record``: a
spool document not among the keys of ``[since, end)``, the documents that arrived after
the subscription, few next to the history) and not committed before, and stages them in
the history folder; the driver publishes the staged parts under the folder's next
marker (``service.history_runs``' commit steps). The driver only plans, lists files and
reads the keys of ``[since, end)``, each once per group (``ScanWork.live_keys``).

A group is scanned again with a growing ``end`` until it closes
(``service.history_runs``: the follow-up scans). Its ``ScanWork`` folder keeps the
scan's registry, streaming checkpoint and results between the calls, so a follow-up
run reads only the offsets after the previous one, with the join state in Spark's
state store (as the live job's), and commits only the results it made; the folder is
removed after the group's last scan. ``xscl serve`` keeps them in a folder of its
epoch: a new epoch starts each open group's scan afresh (the history's commit keeps
each result id once).

``SparkScanner`` is this scan as the ``HistoryScanner`` that ``xscl serve``'s
``service.history_runs.HistoryRuns`` runs between micro-batches.

Runs on the driver (planning, once per scan); the scan's tasks are the job's (``job/``),
so what they pickle is what the job's tasks pickle; ``commit_owned``'s tasks pickle an
``OwnedParts`` (strings and sets of strings).
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xscl.connectors.spool import SpoolReader
from xscl.lang.parser import parse_file
from xscl.service.history import HistorySpan, owned_record
from xscl.service.namespaces import registry_id
from xscl.service.subscriptions import SubscriptionEvent


@dataclass
class ScanWork:
    """One group's scan kept between calls: ``folder`` holds its registry, checkpoint
    and results (driver)."""

    folder: Path
    #: the committed result markers already read (batch names)
    read: set[str] = field(default_factory=set)
    #: the keys of the spool documents from ``since`` up to ``live_to``
    live: set[tuple[str, str]] = field(default_factory=set)
    live_to: int | None = None

    def run(
        self,
        spark: Any,
        *,
        spool: str | Path,
        text: str,
        span: HistorySpan,
        end: int,
        ids: Sequence[str] | None,
        namespace: str,
        allowed_lateness: int | None,
    ) -> list[str]:
        """Run the scan up to ``end``; the part files it committed that this work had
        not listed before."""
        from xscl.results.read import visible_markers
        from xscl.service.subscriptions import SubscriptionLog
        from xscl.spark_plugin.batch import _run_once
        from xscl.spark_plugin.job.plan import JobPlan

        registry = self.folder / "registry"
        log = SubscriptionLog(registry)
        if not log.versions():
            log.subscribe(text, source="history", namespace=namespace, only=ids)
        plan = JobPlan(
            spool=str(spool),
            registry=str(registry),
            output=str(self.folder / "results"),
            checkpoint=str(self.folder / "checkpoint"),
            name=f"xscl_history_{uuid.uuid4().hex}",
            allowed_lateness=allowed_lateness,
            once=True,
            start_offset=span.start,  # a new scan's; a kept one goes on from its checkpoint
            end_offset=end,
        )
        _run_once(spark, plan)
        files: list[str] = []
        for folder, marker in visible_markers(self.folder / "results"):
            batch = str(marker["batch"])
            if batch not in self.read:
                files.extend(str(folder / part["file"]) for part in marker["parts"])
                self.read.add(batch)
        return files

    def live_keys(self, spool: str | Path, since: int, end: int) -> set[tuple[str, str]]:
        """The keys of the spool's documents in ``[since, end)``, read once each."""
        start = since if self.live_to is None else self.live_to
        if end > start:
            self.live.update(doc.key for _o, doc in SpoolReader(spool).iter_range(start, end))
            self.live_to = end
        return self.live

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


@dataclass(frozen=True)
class OwnedParts:
    """``mapInArrow``'s function of ``commit_owned``: each task stages, in the history
    folder ``into``, the owned records of its scan part files not in ``known``
    (executors, once per task; pickled with its sets)."""

    into: str
    known: frozenset[str]
    live: frozenset[tuple[str, str]]
    published: frozenset[str]

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        from xscl.results.read import part_records
        from xscl.service.history_runs import stage_records

        for batch in batches:
            for row in batch.to_pylist():
                records = (
                    record
                    for file in row["files"]
                    for record in part_records(Path(file))
                    if owned_record(record, self.live, self.published)
                )
                part = stage_records(self.into, self.known, records, int(row["partition"]))
                yield pa.RecordBatch.from_pylist(
                    [{"partition": part.partition, "staged": part.staged, "rows": part.rows}],
                    schema=_staged_schema(),
                )


#: what each ``OwnedParts`` task returns: its staged part
_STAGED_DDL = "partition INT, staged STRING, rows BIGINT"


def _staged_schema() -> Any:
    """``_STAGED_DDL`` in Arrow (executors)."""
    import pyarrow as pa

    return pa.schema([("partition", pa.int32()), ("staged", pa.string()), ("rows", pa.int64())])


def commit_owned(
    spark: Any,
    files: Sequence[str],
    into: Path,
    live: set[tuple[str, str]],
    published: set[str],
) -> int:
    """Commit the owned records of the scan's part ``files`` that ``into`` does not hold,
    as its next batch: staged by executor tasks, published by the driver; how many."""
    from xscl.results.commit import StagedPart
    from xscl.service.history_runs import next_batch, publish

    if not files:
        return 0
    batch = next_batch(into)
    tasks = min(len(files), spark.sparkContext.defaultParallelism)
    rows = [(k, list(files[k::tasks])) for k in range(tasks)]
    stage = OwnedParts(str(into), batch.known, frozenset(live), frozenset(published))
    staged = (
        spark.createDataFrame(rows, "partition INT, files ARRAY<STRING>")
        .repartition(tasks)
        .mapInArrow(stage, _STAGED_DDL)
        .collect()
    )
    parts = [StagedPart(int(r["partition"]), r["staged"], int(r["rows"])) for r in staged]
    return publish(into, batch, parts)


def scan_on_spark(
    spark: Any,
    *,
    spool: str | Path,
    text: str,
    span: HistorySpan,
    end: int,
    into: Path,
    ids: Sequence[str] | None = None,
    namespace: str = "",
    allowed_lateness: int | None = None,
    work: ScanWork | None = None,
    scratch: str | Path | None = None,
) -> int:
    """Commit into ``into`` the history's results of the queries ``ids`` (None: all;
    registry ids, the file's ids in ``namespace``, ``service.namespaces``) of ``text``
    over ``[span.start, end)`` of the spool (``end`` at least ``span.since``) that it
    does not hold; how many. ``work``: a kept scan to go on with; else a new one in a
    folder under ``scratch``, removed after."""
    end = max(end, span.since)
    if span.start >= end:
        return 0
    kept = work
    if kept is None:
        kept = ScanWork(Path(tempfile.mkdtemp(prefix="xscl-history-", dir=scratch)))
    try:
        files = kept.run(
            spark,
            spool=spool,
            text=text,
            span=span,
            end=end,
            ids=ids,
            namespace=namespace,
            allowed_lateness=allowed_lateness,
        )
        live = kept.live_keys(spool, span.since, end)
        queries = [
            q
            for q in parse_file(text).queries
            if ids is None or registry_id(namespace, q.qid) in ids
        ]
        published = {q.publish for q in queries if q.publish is not None}
        return commit_owned(spark, files, into, live, published)
    finally:
        if work is None:
            kept.remove()


@dataclass
class SparkScanner:
    """``service.history_runs.HistoryScanner`` on Spark: ``scan_on_spark`` in the job's
    session (driver, once per scan a ``HistoryRuns`` step owes), each group's scan kept
    in a folder under ``work`` until its last scan."""

    spark: Any
    spool: str
    allowed_lateness: int | None = None
    #: where each group's scan keeps its registry, checkpoint and results
    work: str | None = None
    kept: dict[str, ScanWork] = field(default_factory=dict)

    def __call__(
        self,
        event: SubscriptionEvent,
        ids: Sequence[str],
        span: HistorySpan,
        end: int,
        *,
        last: bool,
        into: Path,
    ) -> int:
        name = _work_name(event, ids, span)
        work = self.kept.get(name)
        if work is None:
            root = Path(self.work) if self.work is not None else Path(tempfile.gettempdir())
            work = self.kept[name] = ScanWork(root / name)
        try:
            return scan_on_spark(
                self.spark,
                spool=self.spool,
                text=event.text,
                ids=ids,
                namespace=event.namespace,
                span=span,
                end=end,
                into=into,
                allowed_lateness=self.allowed_lateness,
                work=work,
            )
        finally:
            if last:
                self.kept.pop(name).remove()


def _work_name(event: SubscriptionEvent, ids: Sequence[str], span: HistorySpan) -> str:
    """A group's scan folder name: its event, first offset and queries.

    >>> from types import SimpleNamespace
    >>> _work_name(SimpleNamespace(version=3), ["a", "b"], HistorySpan(4, 10, 27))
    'event-3-from-4-7e18f73731'
    """
    digest = hashlib.sha256("\n".join(sorted(ids)).encode("utf-8")).hexdigest()[:10]
    return f"event-{event.version}-from-{span.start}-{digest}"
