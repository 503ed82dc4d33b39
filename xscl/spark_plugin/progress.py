"""One line per micro-batch from Spark's query progress (what ``xscl serve`` prints).

``ProgressPrinter`` is a ``StreamingQueryListener``: Spark calls it on the driver, on
its listener-bus thread, once per finished micro-batch (and on start/termination),
asynchronously to the query. It parses the progress JSON into a ``BatchProgress``:

* ``documents``: spool records of the batch (the source's end minus start offset:
  the job's source emits one row per routed copy of a document, not per record);
* ``results``: the ``results`` count of the observed metric ``xscl`` when the job
  attached one (``observe_results``), else the sink's row count when it reports one;
* ``docs_per_s``: documents over the batch's ``triggerExecution`` time;
* ``watermark``: the event-time watermark (None before any);
* ``lag``: the spool's committed end minus the batch's end offset, from the
  ``xscl-spool`` source's ``latestOffset`` (its ``reportLatestOffset``);
* ``state_rows`` / ``state_bytes``: summed over the stateful operators.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyspark.sql.streaming.listener import StreamingQueryListener

from xscl.results.commit import COMMITS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: Name of the observed metric that carries the results count.
OBSERVED_NAME = "xscl"


@dataclass(frozen=True)
class BatchProgress:
    """The per-micro-batch figures ``xscl serve`` prints."""

    query: str
    batch_id: int
    documents: int
    results: int | None
    docs_per_s: float
    watermark: str | None
    lag: int | None
    state_rows: int
    state_bytes: int
    duration_ms: int
    #: seconds of the slowest and the mean task of the stateful stage (None: unknown)
    slowest_task_s: float | None = None
    mean_task_s: float | None = None

    def line(self) -> str:
        """The printed line, fixed field order, ``-`` for unknown values."""
        results = "-" if self.results is None else str(self.results)
        lag = "-" if self.lag is None else str(self.lag)
        tasks = ""
        if self.slowest_task_s is not None and self.mean_task_s is not None:
            tasks = f", join tasks max {self.slowest_task_s:.2f} s / mean {self.mean_task_s:.2f} s"
        return (
            f"[{self.query}] batch {self.batch_id}: {self.documents} docs, {results} results, "
            f"{self.docs_per_s:.1f} docs/s, {self.duration_ms} ms, "
            f"watermark {self.watermark or '-'}, lag {lag}, "
            f"state {self.state_rows} rows / {self.state_bytes} bytes{tasks}"
        )


def _offset(value: Any) -> int | None:
    """The ``offset`` of an ``xscl-spool`` offset (a dict or its JSON text)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if isinstance(value, Mapping) and isinstance(value.get("offset"), int):
        return int(value["offset"])
    return None


def _records(sources: list[Mapping[str, Any]]) -> int | None:
    """Spool records the batch read: end minus start offset, summed (None: not a spool)."""
    total, known = 0, False
    for source in sources:
        start, end = _offset(source.get("startOffset")), _offset(source.get("endOffset"))
        if end is not None:
            total += end - (start or 0)
            known = True
    return total if known else None


def _lag(sources: list[Mapping[str, Any]]) -> int | None:
    total, known = 0, False
    for source in sources:
        latest, end = _offset(source.get("latestOffset")), _offset(source.get("endOffset"))
        if latest is not None and end is not None:
            total += max(0, latest - end)
            known = True
    return total if known else None


def _observed(progress: Mapping[str, Any]) -> bool:
    return OBSERVED_NAME in (progress.get("observedMetrics") or {})


def _results(progress: Mapping[str, Any]) -> int | None:
    observed = (progress.get("observedMetrics") or {}).get(OBSERVED_NAME) or {}
    if isinstance(observed.get("results"), int):
        return int(observed["results"])
    sink_rows = (progress.get("sink") or {}).get("numOutputRows")
    return int(sink_rows) if isinstance(sink_rows, int) and sink_rows >= 0 else None


class CommittedResults:
    """Results per committed micro-batch, read from the sink's markers (driver).

    The job's sink counts the results of a batch in its commit marker
    (``_commits/<batch>.json``, ``results.commit.commit_batch``); the progress line
    reads it there, so the driver never counts results itself.
    """

    def __init__(self, output: str | Path) -> None:
        self.output = Path(output)

    def marker(self, batch_id: int) -> dict[str, Any] | None:
        """The batch's commit marker, None before it is committed."""
        path = self.output / COMMITS / f"{batch_id:020d}.json"
        try:
            body = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return body if isinstance(body, dict) else None

    def get(self, batch_id: int, default: int | None = None) -> int | None:
        body = self.marker(batch_id)
        try:
            return int(body["rows"]) if body is not None else default
        except (KeyError, TypeError, ValueError):
            return default

    def tasks(self, batch_id: int) -> tuple[float, float] | None:
        """(slowest, mean) seconds of the batch's join tasks, from its marker."""
        body = self.marker(batch_id)
        tasks = (body or {}).get("stateful_tasks")
        if not isinstance(tasks, dict):
            return None
        return float(tasks["max_s"]), float(tasks["mean_s"])


def parsed_progress(progress: Any) -> BatchProgress:
    """``batch_progress`` of a PySpark ``StreamingQueryProgress`` (its ``json``)."""
    return batch_progress(json.loads(progress.json))


def batch_progress(progress: Mapping[str, Any]) -> BatchProgress:
    """Parse one ``StreamingQueryProgress`` JSON object."""
    operators = progress.get("stateOperators") or []
    sources = list(progress.get("sources") or [])
    records = _records(sources)
    documents = int(progress.get("numInputRows") or 0) if records is None else records
    duration = int((progress.get("durationMs") or {}).get("triggerExecution") or 0)
    return BatchProgress(
        query=str(progress.get("name") or progress.get("id") or "query"),
        batch_id=int(progress.get("batchId", -1)),
        documents=documents,
        results=_results(progress),
        docs_per_s=documents * 1000 / duration if duration else 0.0,
        watermark=(progress.get("eventTime") or {}).get("watermark"),
        lag=_lag(sources),
        state_rows=sum(int(op.get("numRowsTotal") or 0) for op in operators),
        state_bytes=sum(int(op.get("memoryUsedBytes") or 0) for op in operators),
        duration_ms=duration,
    )


def observe_results(results: DataFrame) -> DataFrame:
    """Attach the ``xscl`` observed metric (``results`` = row count) to a results frame."""
    from pyspark.sql import functions as F

    return results.observe(OBSERVED_NAME, F.count(F.lit(1)).alias("results"))


class ProgressPrinter(StreamingQueryListener):
    """Turns progress events into lines; keeps the last ``keep`` for inspection.

    ``emit`` (default ``print``) is called on Spark's listener thread for every
    micro-batch; exceptions in it are swallowed by Spark, so keep it simple.
    ``results`` (batch id -> results count, e.g. ``CommittedResults``) gives the
    results of a batch when no ``xscl`` observed metric is attached (the sink's own
    row count includes dead letters). ``query``: only that query's batches (``xscl
    serve`` runs the CEL query beside the XSCL one; None: every query's).
    """

    def __init__(
        self,
        emit: Callable[[str], None] | None = print,
        *,
        keep: int = 1000,
        results: Mapping[int, int] | CommittedResults | None = None,
        query: str | None = None,
    ) -> None:
        self.emit = emit
        self.query = query
        self.results = results
        self.batches: deque[BatchProgress] = deque(maxlen=keep)
        self._changed = threading.Condition()
        #: set once Spark delivered the query's termination (events are asynchronous)
        self.terminated = threading.Event()

    def onQueryStarted(self, event: Any) -> None:
        """A query started (driver, listener thread, once per start)."""

    def onQueryProgress(self, event: Any) -> None:
        """A micro-batch finished (driver, listener thread, once per batch)."""
        progress = json.loads(event.progress.json)
        figures = batch_progress(progress)
        if self.query is not None and figures.query != self.query:
            return
        if self.results is not None and not _observed(progress):
            figures = replace(figures, results=self.results.get(figures.batch_id))
        if isinstance(self.results, CommittedResults):
            tasks = self.results.tasks(figures.batch_id)
            if tasks is not None:
                figures = replace(figures, slowest_task_s=tasks[0], mean_task_s=tasks[1])
        with self._changed:
            self.batches.append(figures)
            self._changed.notify_all()
        if self.emit is not None:
            self.emit(figures.line())

    def onQueryIdle(self, event: Any) -> None:
        """No new data (driver, listener thread): nothing to print."""

    def onQueryTerminated(self, event: Any) -> None:
        """A query stopped (driver, listener thread, once per query). A failure is not
        printed here: the command tells it in one line (``xscl serve``), where Spark's
        text (its traces and the query's plan) was pages long."""
        self.terminated.set()

    def wait_for(self, batches: int, timeout: float) -> bool:
        """Block until at least ``batches`` progress events arrived (events are async)."""
        with self._changed:
            return self._changed.wait_for(lambda: len(self.batches) >= batches, timeout)
