"""``LocalEngine``: Stage 1 + the shared join processor (MMQJP) in one process.

Per new document (thesis Algorithm 4, made order-independent):

1. re-delivered (stream, docid), even after a dead letter: ignored; XML Stage 1
   rejects: a dead letter (its code, ``XSCL-X0xx``); later than the allowed
   lateness: a dead letter (``XSCL-R008``, reason ``late``);
2. Stage 1 evaluates every registered definition in one pass -> witnesses;
3. the view cache gives the slices R_L,s for the document's strings;
4. for every template and every block the document can fill, the role plan
   joins the new witnesses, the slices, the stored R_bin and the R_T trie, and
   Algorithm 3's window test keeps the matches (``xscl.engine.matcher``);
5. each match becomes a result record (deduplicated by result id: set
   semantics); results of PUBLISH queries are fed back as documents of the
   published stream (docid = result id, ts = the match's end), through Stage 1;
6. the document joins the state (Algorithm 2) and the cache (Algorithm 5);
   with an allowed lateness, documents no window can reach any more are evicted.

Example::

    engine = LocalEngine(parse_queries(text))
    records = engine.process(documents)     # list[ResultRecord]
"""

from __future__ import annotations

import heapq
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from xscl.engine.join_state import JoinState
from xscl.engine.matcher import Match
from xscl.engine.output import DocumentTrees, QueryOutput, ResultRecord
from xscl.engine.partner_reach import partner_reach, partner_reaches
from xscl.engine.records import RecordBuilder
from xscl.engine.state import DocState
from xscl.engine.subscriptions import Subscriptions, check_publish_cycles
from xscl.engine.view_cache import ViewCache
from xscl.errors import LateDocumentError, XsclError
from xscl.lang.ast import Query
from xscl.lang.gc_pause import registering
from xscl.lang.normal_form.model import NormalQuery
from xscl.templates.assign import TemplateAssignment
from xscl.templates.registry import QueryRow, TemplateRegistry
from xscl.templates.shapes import ShapeMemo
from xscl.xpath import Stage1, Stage1Error


@dataclass(frozen=True)
class Rejected:
    """A document the engine did not accept: why, with a stable code."""

    stream: str
    docid: str
    reason: str
    code: str

    @classmethod
    def of(cls, stream: str, docid: str, error: XsclError) -> Rejected:
        """The rejection an error stands for (its message and code)."""
        return cls(stream, docid, error.message, error.code)


@dataclass
class EngineStats:
    documents: int = 0
    duplicates: int = 0
    late: int = 0
    rejected: int = 0
    published: int = 0
    matches: int = 0
    results: int = 0
    evicted: int = 0
    #: wall time spent in the join processor (``matches``) and in building result records
    join_seconds: float = 0.0
    output_seconds: float = 0.0
    rejections: list[Rejected] = field(default_factory=list)


class LocalEngine:
    """The in-process engine (``--engine local``); see the module docstring.

    Its queries are a ``Subscriptions`` (everything placed in ``ALL``), its documents
    one ``JoinState``; it owns the order of documents: re-deliveries, lateness, the
    sequence numbers, the results already emitted and eviction.
    """

    def __init__(
        self,
        queries: Iterable[Query | NormalQuery] = (),
        *,
        view_cache: bool = True,
        view_cache_max_rows: int | None = 5_000_000,
        allowed_lateness_micros: int | None = None,
        presearch: bool = True,
    ) -> None:
        self.subscriptions = Subscriptions(presearch=presearch)
        self.state = JoinState(view_cache=view_cache, view_cache_max_rows=view_cache_max_rows)
        self.records = RecordBuilder(self.subscriptions.record_plan)
        self.allowed_lateness = allowed_lateness_micros
        self.seen: set[tuple[str, str]] = set()
        self.emitted: set[str] = set()
        self._emitted_by_end: list[tuple[int, str]] = []
        #: (registry version, var id -> reach) of ``partner_reaches``
        self._reaches: tuple[int, dict[int, int | None]] | None = None
        self.stats = EngineStats()
        self.max_ts: int | None = None
        self._seq = 0
        queries = list(queries)
        # many queries: the collector paused, then one collection here, not in the
        # first documents processed (seconds at 100k, docs/benchmarks.md)
        with registering(len(queries)):
            normal = [self.subscriptions.normalized(q) for q in queries]
            check_publish_cycles(normal)
            for query in normal:
                self.add_query(query)

    # ------------------------------------------------- the parts, by their names
    @property
    def stage1(self) -> Stage1:
        return self.subscriptions.stage1

    @property
    def registry(self) -> TemplateRegistry:
        return self.subscriptions.registry

    @property
    def outputs(self) -> dict[str, QueryOutput]:
        return self.subscriptions.outputs

    @property
    def shapes(self) -> ShapeMemo:
        return self.subscriptions.shapes

    @property
    def docs(self) -> dict[tuple[str, str], DocState]:
        return self.state.docs

    @property
    def cache(self) -> ViewCache:
        return self.state.cache

    @property
    def trees(self) -> DocumentTrees:
        return self.records.trees

    @property
    def template_count(self) -> int:
        return self.subscriptions.template_count

    # ---------------------------------------------------------------- registry
    def add_query(
        self,
        query: Query | NormalQuery,
        *,
        only_new_documents: bool = False,
        assignment: TemplateAssignment | None = None,
    ) -> QueryRow:
        """Register one query (``Subscriptions.add_query``).

        With ``only_new_documents`` (a subscription to a running engine) the query
        matches only documents ingested from now on: stored documents were evaluated
        before its definitions were required, so any other rule would depend on which
        definitions it happens to share with older queries.
        """
        since = self._seq + 1 if only_new_documents else None
        return self.subscriptions.add_query(query, assignment=assignment, since=since)

    def remove_query(self, qid: str) -> bool:
        """Unregister a query (``Subscriptions.remove_query``)."""
        return self.subscriptions.remove_query(qid)

    def reach(self) -> int | None:
        """The widest window of any registered query (None: some window is INF)."""
        return self.subscriptions.reach()

    # -------------------------------------------------------------- processing
    def process(self, documents: Iterable[Any]) -> list[ResultRecord]:
        """Process documents in arrival order; return the new results, in production order.

        A document is anything with ``stream``, ``docid``, ``ts_micros`` and ``xml``
        (``xscl.connectors.document.Document``) or a 4-tuple in that order.
        """
        out: list[ResultRecord] = []
        for item in documents:
            if isinstance(item, tuple):
                stream, docid, ts, xml = item
            else:
                stream, docid, ts, xml = item.stream, item.docid, item.ts_micros, item.xml
            out.extend(self.process_one(stream, docid, ts, xml))
        return out

    def process_one(self, stream: str, docid: str, ts: int, xml: str) -> list[ResultRecord]:
        """One input document and every published document it causes."""
        results: list[ResultRecord] = []
        queue: deque[tuple[str, str, int, str, bool]] = deque([(stream, docid, ts, xml, False)])
        while queue:
            s, d, t, x, derived = queue.popleft()
            for record in self._ingest(s, d, t, x, derived):
                results.append(record)
                target = self.subscriptions.publish.get(record.query)
                if target is not None:
                    queue.append((target, record.result_id, record.end_micros, record.xml, True))
        return results

    def _ingest(
        self, stream: str, docid: str, ts: int, xml: str, derived: bool
    ) -> list[ResultRecord]:
        key = (stream, docid)
        if key in self.seen:
            self.stats.duplicates += 1
            return []
        self.seen.add(key)  # a later copy is a re-delivery, even if this one is dead-lettered
        try:
            witness = self.stage1.evaluate_rows(stream, docid, ts, xml)
        except Stage1Error as exc:  # checked first, as the reference and the job do
            if not derived:  # delivered: its ts counts toward lateness (docs/language.md)
                self.max_ts = ts if self.max_ts is None else max(self.max_ts, ts)
            self.stats.rejected += 1
            self.stats.rejections.append(Rejected.of(stream, docid, exc))
            return []
        lateness = self.allowed_lateness
        if (
            not derived
            and lateness is not None
            and self.max_ts is not None
            and ts < self.max_ts - lateness
        ):
            self.stats.late += 1
            self.stats.rejections.append(Rejected.of(stream, docid, LateDocumentError()))
            return []
        self._seq += 1
        doc = DocState.from_rows(stream, docid, ts, xml, self._seq, witness)
        if derived:
            self.stats.published += 1
        else:
            self.stats.documents += 1
        started = time.perf_counter()
        found = self.matches(doc)
        if self.subscriptions.since:
            found = [m for m in found if self.subscriptions.sees(m)]
        joined = time.perf_counter()
        self.records.forget_tuples()  # they hold parsed trees: keep only this document's
        records = [self.records.record(m) for m in found]
        self.stats.join_seconds += joined - started
        self.stats.output_seconds += time.perf_counter() - joined
        fresh: list[ResultRecord] = []
        for record in records:
            if record.result_id not in self.emitted:
                self.emitted.add(record.result_id)
                if self.allowed_lateness is not None:
                    heapq.heappush(self._emitted_by_end, (record.end_micros, record.result_id))
                fresh.append(record)
        self.stats.results += len(fresh)
        self.state.store(doc, self._partner_reach(doc))
        if not derived:
            self.max_ts = ts if self.max_ts is None else max(self.max_ts, ts)
        self._evict()
        return fresh

    def matches(self, doc: DocState) -> list[Match]:
        """Every match of every template with ``doc`` in any block (the join processor)."""
        found = self.state.matches(self.subscriptions.plans(), doc)
        self.stats.matches += len(found)
        return found

    def record(self, match: Match) -> ResultRecord:
        """The result record (id, values, output XML) of one match (``xscl.engine.records``)."""
        return self.records.record(match)

    # --------------------------------------------------------------- eviction
    def _partner_reach(self, doc: DocState) -> int | None:
        """How long ``doc`` stays joinable by later documents (``partner_reach``:
        0 for one that can only be the newest of its matches; None: INF)."""
        if self.allowed_lateness is None:
            return 0  # nothing is evicted
        reaches = self._reaches
        if reaches is None or reaches[0] != self.subscriptions.version:
            reaches = (
                self.subscriptions.version,
                partner_reaches(self.subscriptions.plans()),
            )
            self._reaches = reaches
        return partner_reach(reaches[1], doc.nodes)

    def _evict(self) -> None:
        """Drop documents no later document can join any more (each by its reach)."""
        if self.allowed_lateness is None or self.max_ts is None:
            return
        base = self.max_ts - self.allowed_lateness
        self.stats.evicted += self.state.evict(base)
        reach = self.reach()
        if reach is None:
            return
        # a result whose last document is past the horizon can never be produced again
        horizon = base - reach
        while self._emitted_by_end and self._emitted_by_end[0][0] < horizon:
            self.emitted.discard(heapq.heappop(self._emitted_by_end)[1])
