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
from collections import Counter, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from xscl.engine.matcher import Match, match_document
from xscl.engine.output import DocumentTrees, QueryOutput, ResultRecord
from xscl.engine.plans import RolePlan, role_steps
from xscl.engine.records import DocsInfo, RecordPlan, build_record, docs_info
from xscl.engine.stage1_claims import Requirement, Stage1Claims
from xscl.engine.state import DocState
from xscl.engine.view_cache import Slice, ViewCache
from xscl.errors import LateDocumentError, PublishCycleError, XsclError
from xscl.lang.ast import Query
from xscl.lang.gc_pause import registering
from xscl.lang.normal_form.model import NormalQuery, VarDef
from xscl.templates.assign import TemplateAssignment
from xscl.templates.canonical import Template
from xscl.templates.registry import QueryRow, TemplateRegistry
from xscl.templates.shapes import ShapeMemo
from xscl.xpath import DocumentRows, Stage1, Stage1Error

#: document tuples whose shared record parts are remembered before the memo is reset
_DOCS_INFO_CAPACITY = 4096


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
    """The in-process engine (``--engine local``); see the module docstring."""

    def __init__(
        self,
        queries: Iterable[Query | NormalQuery] = (),
        *,
        view_cache: bool = True,
        view_cache_max_rows: int | None = 5_000_000,
        allowed_lateness_micros: int | None = None,
    ) -> None:
        self.stage1 = Stage1()
        #: each query's Stage 1 claims, and every requirement's number of claims
        self._claims: dict[str, Stage1Claims] = {}
        self._claim_counts: Counter[Requirement] = Counter()
        self._registering: Stage1Claims | None = None
        self.registry = TemplateRegistry(intern=self._intern)
        self.cache = ViewCache(enabled=view_cache, max_rows=view_cache_max_rows)
        self.allowed_lateness = allowed_lateness_micros
        self.plans: dict[Template, list[RolePlan]] = {}
        self.outputs: dict[str, QueryOutput] = {}
        self.publish: dict[str, str] = {}
        self.docs: dict[tuple[str, str], DocState] = {}
        self.seen: set[tuple[str, str]] = set()
        self.emitted: set[str] = set()
        self._emitted_by_end: list[tuple[int, str]] = []
        self.normal: dict[str, NormalQuery] = {}
        self.trees = DocumentTrees()
        self._record_plans: dict[str, RecordPlan] = {}
        #: per document tuple of recent matches; DocState hashes by identity
        self._docs_infos: dict[tuple[DocState, ...], DocsInfo] = {}
        self.stats = EngineStats()
        self.max_ts: int | None = None
        self._seq = 0
        self._by_ts: list[tuple[int, int, tuple[str, str]]] = []
        #: queries added with ``only_new_documents``: the first document seq they see
        self._since: dict[str, int] = {}
        #: normal forms and template assignments, computed once per query shape
        self.shapes = ShapeMemo()
        queries = list(queries)
        # many queries: the collector paused, then one collection here, not in the
        # first documents processed (seconds at 100k, docs/benchmarks.md)
        with registering(len(queries)):
            normal = [q if isinstance(q, NormalQuery) else self.shapes.normal(q) for q in queries]
            check_publish_cycles(normal)
            for query in normal:
                self.add_query(query)

    # ---------------------------------------------------------------- registry
    def add_query(
        self,
        query: Query | NormalQuery,
        *,
        only_new_documents: bool = False,
        assignment: TemplateAssignment | None = None,
    ) -> QueryRow:
        """Register one query (its R_T row, Stage 1 requirements, output plan).

        ``assignment``: the query's template assignment when already known (the
        Spark job's compiled table); computed otherwise.

        With ``only_new_documents`` (a subscription to a running engine) the query
        matches only documents ingested from now on: stored documents were evaluated
        before its definitions were required, so any other rule would depend on which
        definitions it happens to share with older queries.
        """
        normal = query if isinstance(query, NormalQuery) else self.shapes.normal(query)
        if normal.query.publish is not None:  # only a publishing query can close a cycle
            publishers = [self.normal[qid] for qid in self.publish if qid != normal.qid]
            check_publish_cycles([*publishers, normal])
        if normal.qid in self.outputs:
            self.remove_query(normal.qid)
        self.normal[normal.qid] = normal
        claims = Stage1Claims(self.stage1, self._claim_counts)
        self._registering = claims
        try:
            row = self.registry.add_assignment(assignment or self.shapes.assignment(normal))
        finally:
            self._registering = None
        self._claims[normal.qid] = claims
        template = row.template
        for meta, var_id in enumerate(row.var_ids):
            parent = template.parents[meta]
            if parent >= 0:
                claims.require_pair(row.var_ids[parent], var_id)
            if template.documents[meta] or parent < 0:
                claims.require_nodes(var_id)
        for a, b in template.value_edges:
            claims.require_value(row.var_ids[a])
            claims.require_value(row.var_ids[b])
        plans = self.plans.get(template)
        if plans is None:
            plans = [
                RolePlan(template, r, role_steps(template, r)) for r in range(template.block_count)
            ]
            self.plans[template] = plans
        for plan in plans:
            plan.insert(row)
        self.outputs[normal.qid] = QueryOutput(normal, claims)
        if normal.query.publish is not None:
            self.publish[normal.qid] = normal.query.publish
        if only_new_documents:
            self._since[normal.qid] = self._seq + 1
        return row

    def _intern(self, definition: VarDef) -> int:
        """The registry's var-id function: a Stage 1 registration, claimed by the query."""
        if self._registering is None:
            raise RuntimeError("definitions are interned only while a query is added")
        return self._registering.register(definition)

    def remove_query(self, qid: str) -> bool:
        """Unregister a query: its R_T row goes, and its Stage 1 claims are given back
        (what no other query needs stops being evaluated)."""
        if qid not in self.outputs:
            return False
        template = self.registry.template_of(qid)
        row = self.registry.table(template).rows[qid]
        for plan in self.plans[template]:
            plan.delete(row)
        self.registry.remove(qid)
        if not any(p.rows for p in self.plans[template]):
            del self.plans[template]
        del self.outputs[qid]
        self._record_plans.pop(qid, None)
        del self.normal[qid]
        self.publish.pop(qid, None)
        self._since.pop(qid, None)
        self._claims.pop(qid).release()
        return True

    @property
    def template_count(self) -> int:
        return len(self.plans)

    # ------------------------------------------- documents kept elsewhere
    def reset_documents(self, max_ts: int | None) -> None:
        """Forget every stored document, keeping queries, statistics and caches of plans.

        For a caller that keeps the join state itself (the Spark job's join groups,
        ``xscl.spark_plugin.job.groups``): per group and micro-batch it resets the
        engine, ``store``s the stored documents the batch can reach, then matches or
        processes the batch's documents.
        """
        self.docs = {}
        self.seen = set()
        self.emitted = set()
        self._emitted_by_end = []
        self._by_ts = []
        self._docs_infos = {}
        self.cache = ViewCache(enabled=self.cache.enabled, max_rows=self.cache.max_rows)
        self.max_ts = max_ts

    def store(self, doc: DocState) -> None:
        """Add an earlier document to the state without matching it (see ``reset_documents``)."""
        self.seen.add(doc.key)
        self.docs[doc.key] = doc
        self.cache.add(doc)
        heapq.heappush(self._by_ts, (doc.ts, doc.seq, doc.key))

    def advance_seq(self, at_least: int) -> None:
        """Number the next document above ``at_least`` (a caller's stable numbering)."""
        self._seq = max(self._seq, at_least)

    def reach(self) -> int | None:
        """The widest window of any registered query (None: some window is INF)."""
        return max(
            (p.max_window for ps in self.plans.values() for p in ps if p.rows),
            default=0,
            key=lambda w: float("inf") if w is None else w,
        )

    def block_count(self) -> int:
        """The most blocks of any registered template (how far joins can chain)."""
        return max(
            (t.block_count for t, ps in self.plans.items() if any(p.rows for p in ps)), default=0
        )

    def scans(self) -> bool:
        """True when some registered plan places a block by scanning every stored document."""
        return any(
            step.kind == "scan"
            for ps in self.plans.values()
            for p in ps
            if p.rows
            for step in p.steps
        )

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

    def process_one(
        self,
        stream: str,
        docid: str,
        ts: int,
        xml: str,
        witness: DocumentRows | Stage1Error | None = None,
    ) -> list[ResultRecord]:
        """One input document and every published document it causes.

        ``witness``: the document's Stage 1 output when it was computed elsewhere
        (the Spark job's route tasks), or the error that rejected it; None evaluates
        it here.
        """
        results: list[ResultRecord] = []
        queue: deque[tuple[str, str, int, str, bool]] = deque([(stream, docid, ts, xml, False)])
        given = witness
        while queue:
            s, d, t, x, derived = queue.popleft()
            for record in self._ingest(s, d, t, x, derived, given):
                results.append(record)
                target = self.publish.get(record.query)
                if target is not None:
                    queue.append((target, record.result_id, record.end_micros, record.xml, True))
            given = None
        return results

    def _ingest(
        self,
        stream: str,
        docid: str,
        ts: int,
        xml: str,
        derived: bool,
        witness: DocumentRows | Stage1Error | None = None,
    ) -> list[ResultRecord]:
        key = (stream, docid)
        if key in self.seen:
            self.stats.duplicates += 1
            return []
        self.seen.add(key)  # a later copy is a re-delivery, even if this one is dead-lettered
        if witness is None:
            try:
                witness = self.stage1.evaluate_rows(stream, docid, ts, xml)
            except Stage1Error as exc:
                witness = exc
        if isinstance(witness, Stage1Error):  # checked first, as the reference and the job do
            if not derived:  # delivered: its ts counts toward lateness (docs/language.md)
                self.max_ts = ts if self.max_ts is None else max(self.max_ts, ts)
            self.stats.rejected += 1
            self.stats.rejections.append(Rejected.of(stream, docid, witness))
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
        if self._since:
            found = [m for m in found if self._sees(m)]
        joined = time.perf_counter()
        self._docs_infos.clear()  # they hold parsed trees: keep only this document's
        records = [self.record(m) for m in found]
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
        self.docs[key] = doc
        self.cache.add(doc)
        heapq.heappush(self._by_ts, (ts, self._seq, key))
        if not derived:
            self.max_ts = ts if self.max_ts is None else max(self.max_ts, ts)
        self._evict()
        return fresh

    def matches(self, doc: DocState) -> list[Match]:
        """Every match of every template with ``doc`` in any block (the join processor)."""
        strings = {s for _, _, s in doc.value_rows if s}
        memo: dict[str, Slice] = self.cache.lookup(strings, self.docs.values()) if strings else {}

        def slice_of(value: str) -> Slice:
            part = memo.get(value)
            if part is None:
                part = self.cache.lookup([value], self.docs.values()).get(value, {})
                memo[value] = part
            return part

        def stored() -> Iterable[DocState]:
            return self.docs.values()

        found: list[Match] = []
        for plans in self.plans.values():
            for plan in plans:
                if plan.rows:
                    found.extend(match_document(plan, doc, slice_of, stored))
        self.stats.matches += len(found)
        return found

    def set_since(self, qid: str, seq: int) -> None:
        """Let query ``qid`` match only documents numbered ``seq`` or later (a caller's
        subscription cut-off, with its own numbering: see ``advance_seq``)."""
        self._since[qid] = seq

    def sees(self, match: Match) -> bool:
        """False for a match with a document older than its query's subscription."""
        return self._sees(match)

    def _sees(self, match: Match) -> bool:
        """False for a match with a document older than its query's subscription."""
        since = self._since.get(match[0].qid)
        return since is None or all(doc.seq >= since for doc in match[1])

    def record(self, match: Match) -> ResultRecord:
        """The result record (id, values, output XML) of one match (``xscl.engine.records``)."""
        row, docs, nodes = match
        plan = self._record_plans.get(row.qid)
        if plan is None or plan.row is not row:
            plan = RecordPlan(row, self.outputs[row.qid])
            self._record_plans[row.qid] = plan
        info = self._docs_infos.get(docs)
        if info is None:
            if len(self._docs_infos) >= _DOCS_INFO_CAPACITY:
                self._docs_infos.clear()
            info = docs_info(docs, self.trees)
            self._docs_infos[docs] = info
        return build_record(plan, docs, info, nodes, self.trees)

    # --------------------------------------------------------------- eviction
    def _evict(self) -> None:
        """Drop documents no query window can reach from the watermark any more."""
        if self.allowed_lateness is None or self.max_ts is None:
            return
        reach = self.reach()
        if reach is None:
            return
        horizon = self.max_ts - self.allowed_lateness - reach
        evicted = []
        while self._by_ts and self._by_ts[0][0] < horizon:
            _, _, key = heapq.heappop(self._by_ts)
            doc = self.docs.pop(key, None)
            if doc is not None:
                evicted.append(doc)
        if evicted:
            self.cache.remove_many(evicted)  # each slice filtered once
            self.stats.evicted += len(evicted)
        # a result whose last document is past the horizon can never be produced again
        while self._emitted_by_end and self._emitted_by_end[0][0] < horizon:
            self.emitted.discard(heapq.heappop(self._emitted_by_end)[1])


def check_publish_cycles(queries: Sequence[NormalQuery]) -> None:
    """Raise ``PublishCycleError`` when PUBLISH/FROM references form a cycle."""
    reads: dict[str, set[str]] = {}
    for query in queries:
        if query.query.publish is not None:
            reads.setdefault(query.query.publish, set()).update(b.stream for b in query.blocks)
    state: dict[str, int] = {}

    def visit(stream: str) -> None:
        state[stream] = 1
        for source in reads.get(stream, ()):
            if state.get(source) == 1:
                raise PublishCycleError(f"PUBLISH cycle through stream {source!r}")
            if source not in state:
                visit(source)
        state[stream] = 2

    for stream in reads:
        if stream not in state:
            visit(stream)
