"""Stage 2 on the executors: the join groups (``applyInPandasWithState``, RocksDB state).

The routed rows (``route_task``) are grouped by their ``group`` key; Spark hands a
group's rows of one micro-batch and its state to ``JoinGroups`` on an executor, and
keeps the updated state in its state store (checkpointed with the query, restored
after a failure, partitioned over the cluster). A group's state is the documents
stored in it (``StoredDocs``): their witness rows; a matched document's XML is read
back from the spool (``documents``).

* **Value groups** (key = ``route_task.value_bucket`` of a string value): the
  thesis's R_L slices (6.5), bucketed. A document is stored in the group of each
  value it holds at an owner edge. The group runs the value engine's role plans
  (``xscl.engine.matcher``: R_T tries, windows, distinct documents) for each new
  document against the stored documents that share a string with it, in sequence
  order, and **emits a match only if its older document is stored here under the
  match's owner-edge value**: that older document is stored under exactly one
  group per value and the newer one is routed to that group, so every result is
  found exactly once in the whole cluster, whatever the batching.
* **The chain group** (``CHAIN_GROUP``): the chain engine's queries (three or more
  blocks, joins without a value condition, PUBLISH chains) in one group that holds
  every document of their streams and runs ``LocalEngine.process_one`` (Stage 1
  with its own definitions, published results fed back in dependency order). Its
  cost grows with its state: it is the documented single partition
  (docs/architecture.md).
* **Dead letters** (``DEAD_GROUP``) pass through unchanged: one sink writes all.

Eviction (invariant 4): with an allowed lateness L and every window finite, a group
drops stored documents older than ``newest - L - reach``: before matching with the
smallest ``newest`` of its batch's documents, afterwards with the largest
(``_horizons``; ``newest`` is a document's own timestamp or the stream's newest
before it, never later than the stream's: a group only evicts what no document
from then on can still reach). INF windows keep them, on RocksDB's disk.

Hot values (DESIGN.md, load balancing): a value group reports each value with more
than ``hot_threshold`` documents stored under it (a ``hot`` row); the driver's commit
adds it to the job's hot set, and from the next batch on ``route_task`` spreads it.

Results are written here, not sent on: a group stages its records as a result
part, renders its queries' newest records as Atom entries and yields a ``part``
row and an ``entry-at`` row per entry (``group_parts``). Output rows
(``OUTPUT_DDL``): ``kind`` (``part`` | ``entry-at`` | ``dead`` | ``hot`` |
``time``; the sink also takes ``result`` rows, which
carry a record's JSON line, from the CEL job), ``query``, ``result_id``, ``end``
(microseconds), ``line`` (see ``group_parts``; a dead letter's line; a hot row's
value). Dead and hot rows have empty ``query`` and ``result_id``; a ``time`` row
(one per group and batch) carries the state partition in ``query`` and the
microseconds the group took in ``end``: the sink sums them per partition into the
batch's marker, which is how ``xscl serve`` reports the slowest and the mean task of
the stateful stage.

Where it runs: ``JoinGroups`` is built on the driver once per query start and
pickled to executors (strings and integers only, ``GroupParts`` included);
``__call__`` runs on an executor once per group and micro-batch (and replay).
"""

from __future__ import annotations

import marshal
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from xscl.engine import LocalEngine, ResultRecord
from xscl.engine.codec import decode, encode_state
from xscl.engine.matcher import Match
from xscl.engine.state import DocState
from xscl.results.group_parts import GroupParts, OutputRow
from xscl.service.live_queries import SEQ_STRIDE, JobQueries, owner_edge, queries_at
from xscl.spark_plugin.job.documents import fill_xml, spool_xml
from xscl.spark_plugin.job.route_task import CHAIN_GROUP, DEAD_GROUP
from xscl.spark_plugin.results_sink import task_partition

#: Spark DDL of the join groups' output.
OUTPUT_DDL = "kind STRING, query STRING, result_id STRING, end BIGINT, line BINARY"
#: Spark DDL of a group's state.
STATE_DDL = "docs BINARY"
_OUTPUT_COLUMNS = ("kind", "query", "result_id", "end", "line")
#: Output rows per frame a group yields: PySpark turns frames into Arrow batches of
#: ``spark.sql.execution.arrow.maxRecordsPerBatch`` rows (``session``), so a batch
#: with hundreds of thousands of entry rows never sits whole in the worker's memory.
OUTPUT_CHUNK = 1_000


@dataclass
class StoredDoc:
    """One document stored in a group: what eviction and candidate lookup read unencoded."""

    seq: int
    ts: int
    #: the values it is stored under in this group (value groups)
    homes: list[str]
    #: its distinct non-empty string values (the group's index keys)
    strings: list[str]
    data: bytes


@dataclass
class StoredDocs:
    """A group's state: its stored documents and an index string value -> positions."""

    docs: list[StoredDoc] = field(default_factory=list)
    index: dict[str, list[int]] = field(default_factory=dict)

    @classmethod
    def load(cls, state: Any) -> StoredDocs:
        if not state.exists:
            return cls()
        stored = cls([StoredDoc(*entry) for entry in marshal.loads(state.get[0])])
        stored.reindex()
        return stored

    def dump(self) -> bytes:
        return marshal.dumps([(d.seq, d.ts, d.homes, d.strings, d.data) for d in self.docs])

    def reindex(self) -> None:
        self.index = {}
        for position, doc in enumerate(self.docs):
            for value in doc.strings:
                self.index.setdefault(value, []).append(position)

    def add(self, doc: StoredDoc) -> None:
        position = len(self.docs)
        self.docs.append(doc)
        for value in doc.strings:
            self.index.setdefault(value, []).append(position)

    def hot(self, threshold: int) -> list[str]:
        """Values with more than ``threshold`` documents stored under them here."""
        counts: dict[str, int] = {}
        for doc in self.docs:
            for value in doc.homes:
                counts[value] = counts.get(value, 0) + 1
        return sorted(v for v, n in counts.items() if n > threshold)

    def evict(self, horizon: int) -> int:
        """Drop documents older than ``horizon``; how many."""
        kept = [d for d in self.docs if d.ts >= horizon]
        dropped = len(self.docs) - len(kept)
        if dropped:
            self.docs = kept
            self.reindex()
        return dropped


@dataclass
class NewDoc:
    """A routed row of this batch, decoded."""

    seq: int
    newest: int
    homes: list[str]
    data: bytes
    state: DocState


class JoinGroups:
    """The ``applyInPandasWithState`` function (see the module docstring)."""

    def __init__(
        self,
        registry: str,
        spool: str,
        allowed_lateness: int | None,
        parts: GroupParts,
        hot_threshold: int | None = None,
        applied: str | None = None,
    ) -> None:
        self.registry = registry
        #: where the groups stage their results (``group_parts``)
        self.parts = parts
        #: where the job records the offsets subscription events took effect at
        self.applied = applied
        #: where documents' XML is read back (``documents``)
        self.spool = spool
        self.allowed_lateness = allowed_lateness
        #: a value with more documents stored under it in one group is reported hot
        self.hot_threshold = hot_threshold

    def __call__(
        self, key: tuple[Any, ...], frames: Iterable[pd.DataFrame], state: Any
    ) -> Iterator[pd.DataFrame]:
        """One group's micro-batch (executor, once per group and batch)."""
        started = time.perf_counter()
        group = int(key[0])
        frame = pd.concat(list(frames), ignore_index=True)
        out: list[OutputRow] = []
        if group == DEAD_GROUP:
            out.extend(("dead", "", "", 0, line) for line in frame["line"].tolist())
            yield _frame(out)
            return
        version = int(frame["version"].max())
        queries = queries_at(self.registry, version, self.applied)
        stored = StoredDocs.load(state)
        new = sorted(
            (
                NewDoc(seq, newest, list(homes), data, decode(data))
                for seq, newest, homes, data in zip(
                    frame["seq"].tolist(),
                    frame["newest"].tolist(),
                    frame["homes"].tolist(),
                    frame["doc"].tolist(),
                    strict=True,
                )
            ),
            key=lambda d: d.seq,
        )
        if group == CHAIN_GROUP:
            records = self._chain(queries, stored, new)
        else:
            records = self._values(queries, stored, new)
        for row in self.parts.rows(records, task_partition()):
            out.append(row)
            if len(out) >= OUTPUT_CHUNK:
                yield _frame(out)
                out = []
        if group != CHAIN_GROUP and self.hot_threshold is not None:
            out.extend(("hot", "", "", 0, v.encode()) for v in stored.hot(self.hot_threshold))
        if stored.docs:
            state.update((stored.dump(),))
        elif state.exists:
            state.remove()
        spent = round((time.perf_counter() - started) * 1e6)
        out.append(("time", str(task_partition()), "", spent, b""))
        yield _frame(out)

    # ------------------------------------------------------------ value groups
    def _values(
        self, queries: JobQueries, stored: StoredDocs, new: list[NewDoc]
    ) -> Iterator[ResultRecord]:
        engine = queries.value
        horizons = self._horizons(engine, new)
        if horizons is not None:
            stored.evict(horizons[0])
        engine.reset_documents(None)
        homes: dict[int, list[str]] = {}  # id(DocState) -> values stored under here
        wanted: set[int] = set()
        for doc in new:
            for value in doc.state.values.values():
                wanted.update(stored.index.get(value, ()))
        for position in sorted(wanted):
            entry = stored.docs[position]
            state = decode(entry.data)
            engine.store(state)
            homes[id(state)] = entry.homes
        exact = ExactDocs(queries, self.spool)
        for doc in new:
            for match in engine.matches(doc.state):
                if self._owned(match, homes) and engine.sees(match):
                    real = exact.match(match)
                    if real is None:
                        continue  # equal digests of different strings: no result
                    yield engine.record(real)  # a repeated id is dropped (group_parts)
            if not doc.homes:
                continue  # only probes here (a hot value stored under another salt)
            engine.store(doc.state)
            homes[id(doc.state)] = doc.homes
            strings = sorted({v for v in doc.state.values.values() if v})
            stored.add(StoredDoc(doc.seq, doc.state.ts, doc.homes, strings, doc.data))
        if horizons is not None:
            stored.evict(horizons[1])
        engine.reset_documents(None)  # release this batch's documents

    @staticmethod
    def _owned(match: Match, homes: dict[int, list[str]]) -> bool:
        """Is this group the one that emits ``match``? (module docstring)."""
        row, docs, nodes = match
        edge = owner_edge(row.template)
        assert edge is not None  # the value engine holds only such templates
        meta = edge[0]
        value = docs[row.template.blocks[meta]].values.get(nodes[meta], "")
        older = min(docs, key=lambda d: d.seq)
        return value in homes.get(id(older), ())

    # ------------------------------------------------------------- chain group
    def _chain(
        self, queries: JobQueries, stored: StoredDocs, new: list[NewDoc]
    ) -> Iterator[ResultRecord]:
        engine = queries.chain
        horizons = self._horizons(engine, new)
        if horizons is not None:
            stored.evict(horizons[0])
        engine.reset_documents(None)
        for entry in stored.docs:
            engine.store(decode(entry.data))
        for doc in new:
            engine.advance_seq(doc.seq - 1)
            s = doc.state
            fill_xml(self.spool, (s,))
            yield from engine.process_one(s.stream, s.docid, s.ts, s.xml)
        known = {entry.seq for entry in stored.docs}  # kept as they are, bytes and all
        for state in sorted(engine.docs.values(), key=lambda d: d.seq):
            if state.seq not in known:  # this batch's documents and what they published
                stored.add(StoredDoc(state.seq, state.ts, [], [], encode_state(state)))
        if horizons is not None:
            stored.evict(horizons[1])
        engine.reset_documents(None)

    def _horizons(self, engine: LocalEngine, new: list[NewDoc]) -> tuple[int, int] | None:
        """Eviction horizons: (before matching, after the batch); None keeps everything.

        A document with newest timestamp n (its own or the stream's before it) that is
        not late can only join documents at or after ``n - lateness - reach``. The
        first bound is the smallest of these over the batch's documents (an early one
        may still join what a later one cannot); the second, the largest, holds for
        every later batch too (newest timestamps only grow).
        """
        reach = engine.reach()
        if self.allowed_lateness is None or reach is None or not new:
            return None
        bound = self.allowed_lateness + reach
        return min(d.newest for d in new) - bound, max(d.newest for d in new) - bound


class ExactDocs:
    """A batch's matched documents read back from the spool and evaluated again, so a
    match found on digests (``codec``) is checked, and its record built, on the real
    string values (executor, once per matched document and group batch)."""

    def __init__(self, queries: JobQueries, spool: str) -> None:
        self.stage1 = queries.value.stage1
        self.spool = spool
        self.docs: dict[int, DocState] = {}

    def doc(self, stored: DocState) -> DocState:
        found = self.docs.get(stored.seq)
        if found is None:
            xml = spool_xml(self.spool, stored.seq // SEQ_STRIDE)
            rows = self.stage1.evaluate_rows(stored.stream, stored.docid, stored.ts, xml)
            found = DocState.from_rows(
                stored.stream, stored.docid, stored.ts, xml, stored.seq, rows
            )
            self.docs[stored.seq] = found
        return found

    def match(self, match: Match) -> Match | None:
        """``match`` over the real documents, None if a value equality fails on them."""
        row, docs, nodes = match
        real = tuple(self.doc(d) for d in docs)
        blocks = row.template.blocks
        for a, b in row.template.value_edges:
            left = real[blocks[a]].values.get(nodes[a], "")
            if not left or left != real[blocks[b]].values.get(nodes[b], ""):
                return None
        return row, real, nodes


def _frame(rows: list[OutputRow]) -> pd.DataFrame:
    """Output rows as the pandas frame Spark expects (``OUTPUT_DDL``; no missing values:
    dead-letter and hot rows carry empty strings and 0)."""
    columns = [list(c) for c in zip(*rows, strict=True)]
    return pd.DataFrame(dict(zip(_OUTPUT_COLUMNS, columns, strict=True)))
