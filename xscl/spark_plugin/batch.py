"""``xscl run --engine spark``: the batch contract of spec section 4 on Spark.

The batch run is the streaming job run once over a finished input, so the batch
and the continuous paths share one code path (``job.plan.start_job``):

1. the JSONL envelopes are read with ``xscl.connectors.document`` (file order =
   arrival order); malformed envelopes become dead letters;
2. the good documents are appended, in file order, to a temporary spool
   (``xscl.connectors.spool.Spool``), which drops a repeated (stream, docid);
3. the queries become the first event of a temporary subscription registry, and
   the job's plan (``job.plan``: Stage 1 and the join groups on the executors,
   results written by tasks) runs once with ``trigger(availableNow=True)``;
4. the committed, deduplicated result set is written sorted by (query,
   result_id), and the dead letters (envelope errors, Stage 1 rejects, late
   documents, in input-line order) to ``RESULTS.deadletter.jsonl``; both through
   a temporary file and a rename, dead letters first (as ``xscl.engine.batch``).

An active SparkSession is reused; otherwise one is built for the run (its
scratch space in the run's temporary folder) and stopped at the end.

Known difference from the local engine: the spool deduplicates on append, so a
document whose (stream, docid) repeats one that Stage 1 rejected is dropped here,
while the local engine would evaluate it.
"""

from __future__ import annotations

import json
import os
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xscl.connectors.dead_letters import DeadLetter
from xscl.connectors.document import read_numbered_envelope_file
from xscl.connectors.durable import write_lines_atomically
from xscl.connectors.spool import Spool
from xscl.engine.batch import BatchSummary, deadletter_path_for
from xscl.errors import SparkBatchError
from xscl.lang.ast import Query

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: Name of the results folder inside the run's temporary folder.
_RESULTS = "results"


def run_batch(
    queries: Sequence[Query],
    input_path: str | os.PathLike[str],
    output_path: str | os.PathLike[str],
    *,
    allowed_lateness_micros: int | None = None,
    max_records_per_batch: int | None = None,
    hot_threshold: int | None = None,
    join_plan: str | None = None,
) -> BatchSummary:
    """Evaluate ``queries`` over the envelope file with Spark; write results and dead letters.

    ``max_records_per_batch`` caps the documents per micro-batch (default: one
    micro-batch for the whole input); the result set does not depend on it, nor on
    ``hot_threshold`` (documents under one value in one join group that make it hot:
    spread over several groups from the next micro-batch on), nor on ``join_plan`` (how a
    join group matches a keyed chain's last block, ``engine.groups.join_plans``; default
    adaptive).
    """
    from xscl.results.read import read_results
    from xscl.service.subscriptions import SubscriptionLog
    from xscl.spark_plugin.job.plan import JobPlan

    source = str(input_path)
    output = Path(output_path)
    dead_path = deadletter_path_for(output)
    with tempfile.TemporaryDirectory(prefix="xscl-spark-run-") as work_dir:
        work = Path(work_dir)
        with Spool(work / "spool", sync=False) as spool:
            spooled = spool_input(Path(input_path), spool)
        dead, line_of_offset = spooled.dead, spooled.line_of_offset
        registry = work / "registry"
        if queries:
            SubscriptionLog(registry).subscribe(registry_text(queries), source=source)
        plan = JobPlan(
            spool=str(work / "spool"),
            registry=str(registry),
            output=str(work / _RESULTS),
            checkpoint=str(work / "checkpoint"),
            name=f"xscl_run_{uuid.uuid4().hex}",
            allowed_lateness=allowed_lateness_micros,
            max_records_per_batch=max_records_per_batch,
            once=True,
            hot_folder=str(work / "hot-values"),
        )
        with _session(work / "home") as spark:
            if hot_threshold is not None:
                plan = replace(plan, hot_threshold=hot_threshold)
            if join_plan is not None:
                plan = replace(plan, join_plan=join_plan)
            batches = _run_once(spark, plan)
        engine_dead = list(_engine_dead_letters(work / _RESULTS))
        for offset, rejected in engine_dead:
            line = line_of_offset[offset]
            letter = DeadLetter(
                source, line, rejected["stream"], rejected["docid"], rejected["reason"],
                rejected["code"],
            )  # fmt: skip
            dead.append((line, letter.to_json()))
        records = sorted(read_results(work / _RESULTS), key=lambda r: (r["query"], r["result_id"]))
    dead.sort(key=lambda item: item[0])
    write_lines_atomically(dead_path, (text for _line, text in dead))
    write_lines_atomically(output, (_json(record) for record in records))
    late = sum(1 for _offset, rejected in engine_dead if rejected["code"] == "XSCL-R008")
    return BatchSummary(
        documents=len(line_of_offset) - len(engine_dead),
        duplicates=spooled.dropped,
        late=late,
        dead_letters=len(dead),
        results=len(records),
        published_documents=0,
        templates=0,
        micro_batches=batches,
        output_path=output,
        deadletter_path=dead_path,
    )


@dataclass
class SpooledInput:
    """What ``spool_input`` did with an envelope file."""

    #: (file line, dead-letter JSON) of each envelope that was rejected
    dead: list[tuple[int, str]] = field(default_factory=list)
    #: spool offset -> the file line of its envelope (for the engine's dead letters)
    line_of_offset: dict[int, int] = field(default_factory=dict)
    #: documents whose (stream, docid) the spool already held
    dropped: int = 0


def spool_input(input_path: Path, spool: Spool) -> SpooledInput:
    """Append the good envelopes of the file to ``spool``, in file order (driver).

    Every dead letter names the envelope's line in the file (blank lines count), as
    the local engine's do, whether the envelope was bad or the engine rejects it.
    """
    spooled = SpooledInput()
    for line, item in read_numbered_envelope_file(input_path):
        if isinstance(item, DeadLetter):
            spooled.dead.append((line, item.to_json()))
            continue
        (offset,) = spool.append([item])
        if offset is None:
            spooled.dropped += 1
        else:
            spooled.line_of_offset[offset] = line
    return spooled


def registry_text(queries: Sequence[Query]) -> str:
    """One query file holding ``queries`` under their own ids (for a registry event)."""
    from xscl.lang.ast import QueryFile
    from xscl.lang.printer import format_file

    declared: dict[str, str] = {}
    for query in queries:
        declared.update(query.namespaces)
    labelled = tuple(replace(q, explicit_id=True) for q in queries)
    return format_file(QueryFile(tuple(declared.items()), labelled))


@contextmanager
def _session(home: Path) -> Iterator[SparkSession]:
    """The active SparkSession, or one built under ``home`` and stopped on exit."""
    from pyspark.sql import SparkSession

    from xscl.spark_plugin.registration import register_data_sources
    from xscl.spark_plugin.session import build_session

    active = SparkSession.getActiveSession()
    if active is not None:
        register_data_sources(active)
        yield active
        return
    spark = build_session(None, "xscl-run", home=home)
    try:
        yield spark
    finally:
        spark.stop()


def _run_once(spark: Any, plan: Any) -> int:
    """One ``availableNow`` run of the job's plan over the spool; its micro-batches (driver)."""
    from xscl.spark_plugin.job.plan import start_job
    from xscl.spark_plugin.progress import parsed_progress

    query = start_job(spark, plan)
    try:
        query.awaitTermination()
    except Exception as exc:  # StreamingQueryException: a task failed
        raise SparkBatchError(f"the streaming query failed: {exc}") from exc
    if query.exception() is not None:
        raise SparkBatchError(f"the streaming query failed: {query.exception()}")
    # the records each batch read (its numInputRows counts routed rows: none for
    # documents that bind nothing)
    return sum(1 for p in query.recentProgress if parsed_progress(p).documents)


def _engine_dead_letters(results: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(spool offset, dead letter without offset) of every engine reject, batch order."""
    folder = results / "deadletters"
    if not folder.is_dir():
        return
    for part in sorted(folder.glob("*.jsonl")):
        for text in part.read_text(encoding="utf-8").splitlines():
            if text:
                record = json.loads(text)
                yield int(record.pop("offset")), record


def _json(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


__all__ = ["BatchSummary", "SparkBatchError", "run_batch"]
