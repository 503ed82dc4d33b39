"""The join groups on Spark: ``applyInPandasWithState`` over the pure groups' logic.

The routed rows (``routed_source``) are grouped by their ``group`` key; Spark hands a
group's rows of one micro-batch and its state to ``JoinGroups`` on an executor, and
keeps the updated state in its state store (RocksDB: checkpointed with the query,
restored after a failure, partitioned over the cluster). This adapter only turns
Spark's frames and state into the arguments of the group's logic
(``xscl.engine.groups``: ``ValueGroup`` or ``ChainGroup`` by ``kind_of(key)``), writes
the records it yields where they are made (``results.group_parts``: a staged part, and
the Atom entries a feed may keep) and keeps the snapshot it leaves. Rows of
``PASS_GROUP`` need no state and pass to the sink as they are.

Output rows (``OUTPUT_DDL``): ``kind`` (``part`` | ``entry-at`` | ``dead`` | ``hot`` |
``publish`` | ``time``; the sink also takes ``result`` rows, which carry a record's
JSON line, from the CEL job), ``query``, ``result_id``, ``end`` (microseconds),
``line``. A ``hot`` row carries a value the group found hot in ``line``; a ``publish``
row, a result of a query that PUBLISHes, as a document of its stream (``query``: the
stream; docid = the result id, ts = ``end``, its XML in ``line``), or a composite event
of a chain matched hop by hop (``groups.hop_chains``: stream ``xscl.composite``, the
event as text in ``line``), which the job's commit appends to the published spool
(``sink``); a ``time`` row (one per group and
batch) the state partition in ``query`` and the microseconds the group took in
``end``: the sink sums them per partition into the batch's marker, which is how
``xscl serve`` reports the slowest and the mean task of the stateful stage.

Where it runs: ``JoinGroups`` is built on the driver once per query start and pickled
to executors (frozen, plain values only); ``__call__`` runs on an executor once per
group and micro-batch (and replay), with the worker's context (``worker_context``).
"""

from __future__ import annotations

import marshal
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from xscl.engine.groups.chain_group import ChainGroup
from xscl.engine.groups.composites import COMPOSITE_STREAM
from xscl.engine.groups.join_plans import DEFAULT_CACHE_MEMORY
from xscl.engine.groups.routed import GroupContext, GroupLogic, RoutedDoc, kind_of
from xscl.engine.groups.value_group import ValueGroup
from xscl.engine.output import ResultRecord
from xscl.engine.records import RecordBuilder
from xscl.results.group_parts import GroupParts, OutputRow
from xscl.spark_plugin.results_sink import task_partition
from xscl.spark_plugin.worker_context import worker

#: Spark DDL of the join groups' output.
OUTPUT_DDL = "kind STRING, query STRING, result_id STRING, end BIGINT, line BINARY"
#: Spark DDL of a group's state.
STATE_DDL = "docs BINARY"
_OUTPUT_COLUMNS = ("kind", "query", "result_id", "end", "line")
#: Output rows per frame a group yields: PySpark turns frames into Arrow batches of
#: ``spark.sql.execution.arrow.maxRecordsPerBatch`` rows (``session``), so a batch
#: with hundreds of thousands of entry rows never sits whole in the worker's memory.
OUTPUT_CHUNK = 1_000


@dataclass(frozen=True)
class JoinGroups:
    """The ``applyInPandasWithState`` function (see the module docstring)."""

    registry: str
    #: where documents' XML is read back (``engine.groups.spool_documents``)
    spool: str
    allowed_lateness: int | None
    parts: GroupParts
    #: a value with more documents stored under it in one group is reported hot
    hot_threshold: int | None = None
    #: where the job records the offsets subscription events took effect at
    applied: str | None = None
    #: the job's published spool: the XML of published documents is read back there
    published: str | None = None
    #: how a group matches a keyed chain's last block, and the memory its kept prefixes
    #: may take (``engine.groups.join_plans``)
    join_plan: str = "adaptive"
    cache_memory: int = DEFAULT_CACHE_MEMORY

    def __call__(
        self, key: tuple[Any, ...], frames: Iterable[pd.DataFrame], state: Any
    ) -> Iterator[pd.DataFrame]:
        """One group's micro-batch (executor, once per group and batch)."""
        started = time.perf_counter()
        group = int(key[0])
        frame = pd.concat(list(frames), ignore_index=True)
        kind = kind_of(group)
        if kind == "pass":
            yield _frame([marshal.loads(line) for line in frame["line"].tolist()])
            return
        context = worker()
        queries = context.queries.at(self.registry, int(frame["version"].max()), self.applied)
        group_context = GroupContext(
            queries.subscriptions,
            context.documents(self.spool, self.published),
            RecordBuilder(queries.subscriptions.record_plan, context.trees(self.registry)),
            self.allowed_lateness,
            self.hot_threshold,
            context.decoded(self.registry, kind),
            context.memory(self.registry),
            group,
            context.join_plans(self.registry, self.join_plan, self.cache_memory),
        )
        snapshot = state.get[0] if state.exists else None
        logic: GroupLogic = (
            ChainGroup(snapshot, group_context)
            if kind == "chain"
            else ValueGroup(snapshot, group_context)
        )
        docs = [
            RoutedDoc(seq, newest, tuple(homes), tuple(probes), data)
            for seq, newest, homes, probes, data in zip(
                frame["seq"].tolist(),
                frame["newest"].tolist(),
                frame["homes"].tolist(),
                frame["probes"].tolist(),
                frame["doc"].tolist(),
                strict=True,
            )
        ]
        out: list[OutputRow] = []
        partition = task_partition()
        published: list[OutputRow] = []
        records = _publishing(logic.process(docs), queries.subscriptions.publish, published)
        for row in self.parts.rows(records, partition, context.renderer):
            out.append(row)
            if len(out) >= OUTPUT_CHUNK:
                yield _frame(out)
                out = []
        out.extend(published)
        out.extend(
            ("publish", COMPOSITE_STREAM, event.event_id(), event.end, event.encode().encode())
            for event in logic.composites()
        )
        out.extend(("hot", "", "", 0, v.encode()) for v in logic.hot_values())
        kept = logic.snapshot()
        if kept is not None:
            state.update((kept,))
        elif state.exists:
            state.remove()
        spent = round((time.perf_counter() - started) * 1e6)
        out.append(("time", str(partition), "", spent, b""))
        yield _frame(out)


def _publishing(
    records: Iterable[ResultRecord], publish: Mapping[str, str], published: list[OutputRow]
) -> Iterator[ResultRecord]:
    """``records``, and a ``publish`` row in ``published`` for each one whose query
    PUBLISHes (``publish``: query id -> stream)."""
    for record in records:
        stream = publish.get(record.query)
        if stream is not None:
            xml = record.xml.encode()
            published.append(("publish", stream, record.result_id, record.end_micros, xml))
        yield record


def _frame(rows: list[OutputRow]) -> pd.DataFrame:
    """Output rows as the pandas frame Spark expects (``OUTPUT_DDL``; no missing values:
    dead-letter and hot rows carry empty strings and 0)."""
    columns = [list(c) for c in zip(*rows, strict=True)] or [[] for _ in _OUTPUT_COLUMNS]
    return pd.DataFrame(dict(zip(_OUTPUT_COLUMNS, columns, strict=True)))
