"""``xscl cel run --engine spark``: the CEL batch contract on Spark (docs/cel.md 10.6).

The batch run is the CEL streaming query run once, so both share one plan
(``cel.plan``): the queries are the first event of a temporary CEL registry, the
admitted events (``xscl.events.batch`` has already
dead-lettered bad lines and, with a reorder slack, late ones in file order) are
written as one file of a temporary events folder, the query runs with
``availableNow`` and ``releaseAll`` (the input has ended: every epoch is
processed), and the committed results are read back as ``Result``s.

An active SparkSession is reused; otherwise one is built for the run and stopped.
"""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Iterable
from pathlib import Path

from xscl.connectors.document import parse_ts
from xscl.connectors.durable import write_lines_atomically
from xscl.errors import SparkBatchError
from xscl.events.envelope import Event
from xscl.events.event_folder import add_events
from xscl.events.results import Result

__all__ = ["evaluate_on_spark"]


def evaluate_on_spark(queries_text: str, events: Iterable[Event]) -> set[Result]:
    """Every result of the CEL queries over ``events`` (all admitted), on Spark."""
    from xscl.results.read import read_results
    from xscl.service.cel_subscriptions import CelSubscriptionLog
    from xscl.spark_plugin.batch import _session
    from xscl.spark_plugin.cel.plan import CelPlan, start_cel_job

    with tempfile.TemporaryDirectory(prefix="xscl-cel-run-") as work_dir:
        work = Path(work_dir)
        registry = CelSubscriptionLog(work / "registry", {})
        registry.subscribe(queries_text, source="queries.cel")
        staged = work / "input.jsonl"
        write_lines_atomically(staged, (e.to_json() for e in events))
        add_events(work / "events", staged)
        plan = CelPlan(
            cel_registry=str(registry.folder),
            catalog=registry.catalog_json,
            output=str(work / "results"),
            checkpoint=str(work / "checkpoint"),
            name=f"xscl_cel_run_{uuid.uuid4().hex}",
            events=str(work / "events"),
            release_all=True,
            once=True,
        )
        with _session(work / "home") as spark:
            query = start_cel_job(spark, plan)
            try:
                query.awaitTermination()
            except Exception as exc:  # StreamingQueryException: a task failed
                raise SparkBatchError(f"the CEL streaming query failed: {exc}") from exc
        return {result_of(record) for record in read_results(work / "results", key="id")}


def result_of(record: dict[str, object]) -> Result:
    """The ``Result`` a CEL result record (docs/cel.md 5.2) was written from."""
    attrs = record["attrs"]
    assert isinstance(attrs, dict)
    return Result(
        str(record["query"]),
        None if record["stream"] is None else str(record["stream"]),
        parse_ts(record["start"]),
        parse_ts(record["end"]),
        tuple(attrs.items()),
    )
