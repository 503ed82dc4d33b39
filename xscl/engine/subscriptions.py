"""The registered queries, compiled once into data every document is matched against.

What a query adds (thesis 6.3-6.4): its Stage 1 definitions and requirements (claimed
per query, so removing it gives them back, ``stage1_claims``), a row in its template's
query table R_T (``templates.registry``), that row in the R_T trie of each of the
template's role plans (``plans``), and its output plan (``output``). Queries are
rows, not plans: a template's role plans serve all its queries.

The role plans are kept per **placement** (``placements``): the in-process engine
places everything in ``ALL``; the Spark job places each query where a partition can
evaluate it, and each of its steps runs only its placement's plans. Value-placed
plans probe their owner edge first (``plans.role_steps``), which is what lets a join
group match only what it owns.

A query subscribed while documents flow matches only documents numbered from its
``since`` on (``sees``): docs/language.md, a subscription matches what arrives after
it takes effect.

Example::

    subs = Subscriptions()
    subs.add_query(normal_query)                 # placement ALL
    for plan in subs.plans():                     # every role plan with rows
        ...

Where it runs: in the process that matches (``LocalEngine``; a Spark worker, built
once per registry version by ``xscl.service.live_queries``). Nothing here is pickled.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Iterator

from xscl.engine.hop_plans import HopPlans
from xscl.engine.matcher import Match
from xscl.engine.output import QueryOutput
from xscl.engine.placements import (
    ALL,
    CHAIN,
    COMPOSITE,
    KEYED,
    STATELESS,
    VALUE,
    Placement,
    key_class,
    key_edge,
    owner_edge,
)
from xscl.engine.plans import RolePlan, role_steps
from xscl.engine.prefix_plans import PrefixPlans
from xscl.engine.records import RecordPlan
from xscl.engine.stage1_claims import Requirement, Stage1Claims
from xscl.errors import PublishCycleError
from xscl.lang.ast import Query
from xscl.lang.normal_form.model import NormalQuery, VarDef
from xscl.templates.assign import TemplateAssignment
from xscl.templates.canonical import Template
from xscl.templates.registry import QueryRow, TemplateRegistry
from xscl.templates.shapes import ShapeMemo
from xscl.xpath import Stage1


class Subscriptions:
    """See the module docstring."""

    def __init__(self, shapes: ShapeMemo | None = None, *, presearch: bool = True) -> None:
        #: ``presearch``: Stage 1 screens function predicates by the terms they require
        #: (``xpath.presearch``; off: every candidate is checked, for comparison)
        self.stage1 = Stage1(presearch=presearch)
        #: each query's Stage 1 claims, and every requirement's number of claims
        self.claims: dict[str, Stage1Claims] = {}
        self.claim_counts: Counter[Requirement] = Counter()
        self._registering: Stage1Claims | None = None
        self.registry = TemplateRegistry(intern=self._intern)
        #: placement -> template -> one role plan per block
        self.plan_sets: dict[Placement, dict[Template, list[RolePlan]]] = {}
        #: a composite-placed template's plans, one hop at a time (``hop_plans``)
        self.hop_plans: dict[Template, HopPlans] = {}
        #: a keyed template's prefix plans, for the groups that keep its prefix matches
        #: (``prefix_plans``; only templates whose prefix is keyed by the same class)
        self.prefix_plans: dict[Template, PrefixPlans] = {}
        self.placement: dict[str, Placement] = {}
        self.outputs: dict[str, QueryOutput] = {}
        #: query id -> the stream it PUBLISHes
        self.publish: dict[str, str] = {}
        #: the normal forms of the queries that PUBLISH (a new publisher is checked for
        #: cycles against them); no other query's is kept after registration
        self.publishers: dict[str, NormalQuery] = {}
        #: the streams the chain-placed queries read (``routing``: their documents go
        #: to the chain group)
        self.chain_streams: dict[str, tuple[str, ...]] = {}
        #: query id -> the first document sequence number it may match
        self.since: dict[str, int] = {}
        self._record_plans: dict[str, RecordPlan] = {}
        #: normal forms and template assignments, computed once per query shape
        self.shapes = shapes if shapes is not None else ShapeMemo()
        #: grows at every query added or removed (what is derived from the plans is
        #: recomputed when it changes)
        self.version = 0
        #: this object's own random number (a copy keeps it): with ``version``, what a
        #: worker's derived state (a group's kept prefixes) was made for
        self.serial = int.from_bytes(os.urandom(8), "big")

    # ---------------------------------------------------------------- registry
    def normalized(self, query: Query | NormalQuery) -> NormalQuery:
        return query if isinstance(query, NormalQuery) else self.shapes.normal(query)

    def add_query(
        self,
        query: Query | NormalQuery,
        *,
        placement: Placement = ALL,
        assignment: TemplateAssignment | None = None,
        since: int | None = None,
    ) -> QueryRow:
        """Register one query (its R_T row, Stage 1 requirements, output plan).

        ``assignment``: the query's template assignment when already known (the Spark
        job's compiled table); computed otherwise. ``since``: the first document
        sequence number it may match (None: every document).
        """
        normal = self.normalized(query)
        if normal.query.publish is not None:  # only a publishing query can close a cycle
            publishers = [q for qid, q in self.publishers.items() if qid != normal.qid]
            check_publish_cycles([*publishers, normal])
        if normal.qid in self.outputs:
            self.remove_query(normal.qid)
        claims = Stage1Claims(self.stage1, self.claim_counts)
        self._registering = claims
        try:
            row = self.registry.add_assignment(assignment or self.shapes.assignment(normal))
        finally:
            self._registering = None
        self.claims[normal.qid] = claims
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
        for plan in self._role_plans(placement, template):
            plan.insert(row)
        if placement == COMPOSITE:
            hops = self.hop_plans.get(template)
            if hops is None:
                hops = self.hop_plans[template] = HopPlans.of(template)
            hops.insert(row)
        if placement == KEYED:
            prefix = self.prefix_plans.get(template) or PrefixPlans.of(template)
            if prefix is not None:
                self.prefix_plans[template] = prefix
                prefix.insert(row)
        self.placement[normal.qid] = placement
        if placement == CHAIN:
            self.chain_streams[normal.qid] = tuple(block.stream for block in normal.blocks)
        self.outputs[normal.qid] = QueryOutput(normal, claims)
        if normal.query.publish is not None:
            self.publish[normal.qid] = normal.query.publish
            self.publishers[normal.qid] = normal
        if since is not None:
            self.since[normal.qid] = since
        self.version += 1
        return row

    def _role_plans(self, placement: Placement, template: Template) -> list[RolePlan]:
        plans_of = self.plan_sets.setdefault(placement, {})
        plans = plans_of.get(template)
        if plans is None:
            key = frozenset(key_class(template)) if placement == KEYED else frozenset()
            plans = [
                RolePlan(
                    template, r, role_steps(template, r, _first_probe(placement, template, r), key)
                )
                for r in range(template.block_count)
            ]
            if key and any(step.kind == "scan" for plan in plans for step in plan.steps):
                raise ValueError(f"a keyed plan of {template} scans: it would miss matches")
            plans_of[template] = plans
        return plans

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
        placement = self.placement.pop(qid)
        plans_of = self.plan_sets[placement]
        for plan in plans_of[template]:
            plan.delete(row)
        if placement == COMPOSITE:
            hops = self.hop_plans[template]
            hops.delete(row)
            if not hops.rows:
                del self.hop_plans[template]
        prefix = self.prefix_plans.get(template) if placement == KEYED else None
        if prefix is not None:
            prefix.delete(row)
            if not prefix.rows:
                del self.prefix_plans[template]
        self.registry.remove(qid)
        if not any(p.rows for p in plans_of[template]):
            del plans_of[template]
        del self.outputs[qid]
        self._record_plans.pop(qid, None)
        self.publishers.pop(qid, None)
        self.chain_streams.pop(qid, None)
        self.publish.pop(qid, None)
        self.since.pop(qid, None)
        self.claims.pop(qid).release()
        self.version += 1
        return True

    # ------------------------------------------------------------ what to match
    def plans(self, placement: Placement | None = None) -> Iterator[RolePlan]:
        """The role plans with rows (of one placement, or of all)."""
        for where, plans_of in self.plan_sets.items():
            if placement is not None and where != placement:
                continue
            for plans in plans_of.values():
                for plan in plans:
                    if plan.rows:
                        yield plan

    def rows(self, placement: Placement) -> Iterator[QueryRow]:
        """The R_T rows of the queries placed in ``placement``."""
        for qid, where in self.placement.items():
            if where == placement:
                yield self.registry.table(self.registry.template_of(qid)).rows[qid]

    def templates(self, placement: Placement | None = None) -> set[Template]:
        return {plan.template for plan in self.plans(placement)}

    @property
    def template_count(self) -> int:
        return len(self.templates())

    def reach(self, placement: Placement | None = None) -> int | None:
        """The widest window of the registered queries (None: some window is INF)."""
        return max(
            (p.max_window for p in self.plans(placement)),
            default=0,
            key=lambda w: float("inf") if w is None else w,
        )

    def block_count(self, placement: Placement | None = None) -> int:
        """The most blocks of any registered template (how far joins can chain)."""
        return max((p.template.block_count for p in self.plans(placement)), default=0)

    def scans(self, placement: Placement | None = None) -> bool:
        """True when some plan places a block by scanning every stored document."""
        return any(step.kind == "scan" for p in self.plans(placement) for step in p.steps)

    def feeds_back(self) -> bool:
        """Whether a join group publishes: some query that PUBLISHes is placed in one
        (neither ``STATELESS`` nor the in-process ``ALL``), or a chain is matched hop by
        hop (``COMPOSITE``: its composite events are published). Its results come back as
        documents a micro-batch later: the job's source then gives every row the batch's
        eviction floor (``spark_plugin.job.published_floor``)."""
        if self.hop_plans:  # a composite event is a document of the next micro-batch
            return True
        return any(self.placement[qid] not in (STATELESS, ALL) for qid in self.publish)

    def sees(self, match: Match) -> bool:
        """False for a match with a document older than its query's subscription."""
        since = self.since.get(match[0].qid)
        return since is None or all(doc.seq >= since for doc in match[1])

    def record_plan(self, row: QueryRow) -> RecordPlan:
        """What a result record of ``row``'s query needs that depends only on the query."""
        plan = self._record_plans.get(row.qid)
        if plan is None or plan.row is not row:
            plan = RecordPlan(row, self.outputs[row.qid])
            self._record_plans[row.qid] = plan
        return plan


def check_publish_cycles(queries: Iterable[NormalQuery]) -> None:
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


def _first_probe(placement: Placement, template: Template, role: int) -> tuple[int, int] | None:
    """The value edge a role plan must probe first: the owner edge of a value-placed
    query, the key class's edge from the new document's block of a keyed one (the join
    groups own a match by that value and can only probe the values they hold)."""
    if placement == VALUE:
        return owner_edge(template)
    if placement == KEYED:
        return key_edge(template, role)
    return None
