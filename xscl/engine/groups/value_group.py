"""A value group: the two-block value joins whose owner edge's value falls in its bucket,
and the time-placed joins (``{TRUE, w}``) whose time labels do (``time_joins``).

The thesis's R_L slices (6.5), partitioned by string value. A document is stored in
the group of each value it holds at an owner edge (``placements.owner_edge``), under
that value, and probes there. The value-placed role plans probe their owner edge
first (``plans.role_steps``), and here a probe of value ``v`` finds only the stored
documents that are stored under ``v`` in this group, and only when the new document
probes ``v`` here. So a match is found only in the group that owns it, the group of
its owner edge's value where its older document is stored, and only once there:
every result exactly once in the whole cluster, whatever the batching, with no work
repeated in the groups a document is routed to for its other values.

A document routed for a time-placed join is stored under its time bucket's label and
probes the neighbouring labels (``time_buckets``); its matches are found by scanning
the documents stored under the labels it probes here, the same rule: each once, in the
group of its older-arriving document's label.

A match found on digests is checked on the real strings before its record is built
(``exact``).

Per batch: the stored documents older than the eviction horizon go first
(``routed.horizons``); then each new document, in sequence order, is matched and
stored under its homes; then the second horizon. A value with more than
``hot_threshold`` documents stored under it here is reported hot: the job spreads it
over salts from the next batch on (``xscl.engine.routing``).

Where it runs: in the Spark job's stateful step, once per group and micro-batch
(``xscl.spark_plugin.job.join_groups``); in process in the tests.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from xscl.engine.groups.decoded import DecodedDocs
from xscl.engine.groups.exact import ExactDocs
from xscl.engine.groups.routed import GroupContext, RoutedDoc, horizons
from xscl.engine.groups.stored import StoredDoc, StoredDocs, token_of
from xscl.engine.groups.time_joins import time_matches
from xscl.engine.matcher import match_document
from xscl.engine.output import ResultRecord
from xscl.engine.placements import TIME, VALUE
from xscl.engine.state import DocState
from xscl.engine.view_cache import Slice, add_to_slice

#: Default number of documents stored under one value in one group that make it hot.
DEFAULT_HOT_THRESHOLD = 500


def _no_scan() -> Iterable[DocState]:
    return ()


class ValueGroup:
    """See the module docstring."""

    def __init__(self, snapshot: bytes | None, context: GroupContext) -> None:
        live = None
        if snapshot is not None and context.memory is not None:
            live = context.memory.take(context.group, token_of(snapshot))
        self.stored = live if isinstance(live, StoredDocs) else StoredDocs.load(snapshot)
        self.context = context

    def process(self, docs: Sequence[RoutedDoc]) -> Iterator[ResultRecord]:
        context = self.context
        subs = context.subscriptions
        stored = self.stored
        plans = list(subs.plans(VALUE))
        timed = list(subs.plans(TIME))
        bounds = horizons(
            context.allowed_lateness, _widest(subs.reach(VALUE), subs.reach(TIME)), docs
        )
        if bounds is not None:
            stored.evict(bounds[0])
        cache = context.decoded if context.decoded is not None else DecodedDocs(len(docs))
        slices: dict[str, Slice] = {}
        anchors = [(plan, plan.probe_anchor()) for plan in plans]

        def state_of(entry: StoredDoc) -> DocState:
            return cache.get(entry.seq, entry.data)

        exact = ExactDocs(context.documents, context.records.trees)
        for doc in sorted(docs, key=lambda d: d.seq):
            new = cache.get(doc.seq, doc.data)
            probes = frozenset(doc.probes)
            # the variables whose values this document probes here: a plan whose probe
            # starts from none of them can find nothing here (it is owned elsewhere)
            probing = {var for var, _node, value in new.value_rows if value in probes}

            def slice_of(value: str, probes: frozenset[str] = probes) -> Slice:
                if value not in probes:
                    return {}  # owned by the group of that value
                part = slices.get(value)
                if part is None:
                    part = {}
                    for position in stored.index.get(value, ()):
                        _add_to_slice(part, state_of(stored.docs[position]), value)
                    slices[value] = part
                return part

            for plan, anchor in anchors:
                if anchor is None or probing.isdisjoint(plan.var_counts[anchor]):
                    continue
                for match in match_document(plan, new, slice_of, _no_scan):
                    if not subs.sees(match):
                        continue
                    real = exact.match(match)
                    if real is not None:  # None: equal digests of different strings
                        yield context.records.record(real)
            if timed:
                for match in time_matches(timed, new, doc.probes, stored, state_of):
                    if not subs.sees(match):
                        continue
                    real = exact.match(match)
                    if real is not None:
                        yield context.records.record(real)
            if doc.homes:  # else only probes here (a hot value stored under another salt)
                stored.add(StoredDoc(doc.seq, new.ts, doc.homes, doc.data))
                for value in doc.homes:
                    part = slices.get(value)
                    if part is not None:
                        _add_to_slice(part, new, value)
        if bounds is not None:
            stored.evict(bounds[1])

    def snapshot(self) -> bytes | None:
        data = self.stored.snapshot()
        if data is not None and self.context.memory is not None:
            self.context.memory.keep(self.context.group, self.stored.token, self.stored)
        return data

    def hot_values(self) -> list[str]:
        threshold = self.context.hot_threshold
        return [] if threshold is None else self.stored.hot(threshold)


def _widest(one: int | None, other: int | None) -> int | None:
    """The wider of two reaches (None: INF)."""
    return None if one is None or other is None else max(one, other)


def _add_to_slice(part: Slice, doc: DocState, value: str) -> None:
    """Add ``doc``'s (var, node) pairs whose value is ``value`` to a slice."""
    for var, node, strval in doc.value_rows:
        if strval == value:
            add_to_slice(part, var, doc, node)
