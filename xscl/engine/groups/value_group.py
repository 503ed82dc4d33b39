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
stored under its homes; then the second horizon. A value (or key label) with more
than ``hot_threshold`` documents stored under it here is reported hot: the job spreads
it over salts from the next batch on (``xscl.engine.routing``; a key label's spread
label is never reported, ``key_labels``). A keyed chain's match of a hot key is found
by one pass per key label the new document probes here (``keyed_chains``). A keyed
chain's last block is matched by probing or through the matches of its first blocks
the group keeps, as the plan choice says (``cached_chains``, ``join_plans``); those are
kept with the group's live documents in the worker's memory (``LiveGroup``), never in
the snapshot.

Where it runs: in the Spark job's stateful step, once per group and micro-batch
(``xscl.spark_plugin.job.join_groups``); in process in the tests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import reduce
from itertools import chain

from xscl.engine.groups.cached_chains import CachedChains
from xscl.engine.groups.composites import (
    Composite,
    doc_label,
    hop_value,
    is_event_label,
    is_hop_label,
)
from xscl.engine.groups.decoded import DecodedDocs
from xscl.engine.groups.exact import ExactDocs
from xscl.engine.groups.hop_chains import HopChains
from xscl.engine.groups.keyed_chains import keyed_matches, value_only, value_slice
from xscl.engine.groups.prefix_cache import PrefixCache
from xscl.engine.groups.routed import GroupContext, RoutedDoc, lateness_bases
from xscl.engine.groups.stored import GROUP_REACH, StoredDoc, StoredDocs, token_of
from xscl.engine.groups.time_joins import time_matches
from xscl.engine.key_labels import (
    is_key_label,
    is_spread_label,
    key_label,
    key_value,
    spread_label,
)
from xscl.engine.matcher import Match, match_document, no_stored
from xscl.engine.output import ResultRecord
from xscl.engine.partner_reach import partner_reach, partner_reaches
from xscl.engine.placements import COMPOSITE, KEYED, TIME, VALUE
from xscl.engine.plans import wider
from xscl.engine.state import DocState
from xscl.engine.subscriptions import Subscriptions
from xscl.engine.view_cache import Slice
from xscl.templates.canonical import Template

#: Default number of documents stored under one value in one group that make it hot.
DEFAULT_HOT_THRESHOLD = 500


@dataclass
class LiveGroup:
    """What a worker keeps of a group between batches (``stored.GroupMemory``): its
    documents, and the prefixes it keeps for the subscriptions of ``subscriptions``."""

    stored: StoredDocs
    caches: dict[Template, PrefixCache]
    subscriptions: tuple[int, int]


def _version(subs: Subscriptions) -> tuple[int, int]:
    """Which subscriptions kept prefixes were made with (the object, by its random
    serial number, and its count of changes)."""
    return subs.serial, subs.version


class ValueGroup:
    """See the module docstring."""

    def __init__(self, snapshot: bytes | None, context: GroupContext) -> None:
        live = None
        if snapshot is not None and context.memory is not None:
            live = context.memory.take(context.group, token_of(snapshot))
        #: the kept prefixes of the keyed chains this group caches (``cached_chains``):
        #: derived from the documents and the subscriptions, so kept only in the
        #: worker's memory, for the subscriptions they were made with
        self.caches: dict[Template, PrefixCache] = {}
        if isinstance(live, LiveGroup):
            self.stored = live.stored
            if live.subscriptions == _version(context.subscriptions):
                self.caches = live.caches
        else:
            self.stored = StoredDocs.load(snapshot)
        self.context = context
        self.hops: HopChains | None = None

    def process(self, docs: Sequence[RoutedDoc]) -> Iterator[ResultRecord]:
        context = self.context
        subs = context.subscriptions
        stored = self.stored
        plans = list(subs.plans(VALUE))
        keyed = list(subs.plans(KEYED))
        timed = list(subs.plans(TIME))
        hopping = list(subs.plans(COMPOSITE))
        reach = reduce(wider, [subs.reach(p) for p in (VALUE, TIME, KEYED, COMPOSITE)])
        bases = lateness_bases(context.allowed_lateness, docs)
        evicted = 0 if bases is None else stored.evict_partners(bases[0], reach)
        reaches = partner_reaches([*plans, *keyed, *timed, *hopping]) if bases is not None else {}
        cache = context.decoded if context.decoded is not None else DecodedDocs(len(docs))
        slices: dict[str, Slice] = {}
        anchors = [(plan, plan.probe_anchor()) for plan in plans]

        def state_of(entry: StoredDoc) -> DocState:
            return cache.get(entry.seq, entry.data)

        def label_slice(label: str, value: str) -> Slice:
            """The (var, node) pairs of ``value`` in the documents stored under
            ``label`` (cached for the batch, extended as documents are stored)."""
            part = slices.get(label)
            if part is None:
                part = {}
                for position in stored.index.get(label, ()):
                    value_slice(part, state_of(stored.docs[position]), value)
                slices[label] = part
            return part

        passes: dict[str, Slice] = {}  # key label L -> the slice of its pass (L and H)

        def pass_positions(label: str, value: str) -> Sequence[int]:
            """Where the documents of a key label's pass are stored (``keyed_chains``):
            for a spread label, under it; for a key label, under it and its spread
            label."""
            own = stored.index.get(label, ())
            spread = () if is_spread_label(label) else stored.index.get(spread_label(value), ())
            return sorted([*own, *spread]) if spread else own

        def pass_slice(label: str, value: str) -> Slice:
            """The slice of a key label's pass."""
            if is_spread_label(label) or not stored.index.get(spread_label(value)):
                return label_slice(label, value)  # one label's documents only
            part = passes.get(label)
            if part is None:
                part = passes[label] = {}
                for position in pass_positions(label, value):
                    value_slice(part, state_of(stored.docs[position]), value)
            return part

        under: dict[str, dict[int, int]] = {}  # key label -> seq -> ts stored under it

        def stored_under(label: str) -> dict[int, int]:
            found = under.get(label)
            if found is None:
                entries = (stored.docs[p] for p in stored.index.get(label, ()))
                found = under[label] = {entry.seq: entry.ts for entry in entries}
            return found

        keyed_reach = subs.reach(KEYED)

        def pass_docs(label: str, value: str) -> list[DocState]:
            """A key label's pass's documents."""
            return [state_of(stored.docs[p]) for p in pass_positions(label, value)]

        def pass_of(label: str, value: str) -> Callable[[str], Slice]:
            """A key label's pass's slice, as the matcher probes it."""
            return value_only(value, pass_slice(label, value))

        choice = context.join_plans
        cached = (
            CachedChains(subs, choice, context.group, self.caches)
            if keyed and choice is not None and subs.prefix_plans
            else None
        )
        if cached is None:
            self.caches.clear()  # every plan probes
        else:
            if evicted:
                cached.evicted({entry.seq for entry in stored.docs})
            cached.begin(list(stored.index), pass_docs, pass_of)

        exact = ExactDocs(context.documents, context.records.trees)

        def records(found: Iterable[Match]) -> Iterator[ResultRecord]:
            """The records of the matches the subscriptions see, checked on the real
            strings (``exact``: None for equal digests of different strings)."""
            for match in found:
                if subs.sees(match):
                    real = exact.match(match)
                    if real is not None:
                        yield context.records.record(real)

        hops = HopChains(subs, stored, state_of, label_slice, cache) if subs.hop_plans else None
        self.hops = hops
        for doc in sorted(docs, key=lambda d: d.seq):
            if doc.probes and is_event_label(doc.probes[0]):  # a composite event
                if hops is None:
                    continue  # its chains were unsubscribed
                yield from records(hops.composite(doc.seq, doc.data, doc.probes))
                if doc.homes:  # else only probes here (a neighbouring bucket, a hot salt)
                    event = hops.stored_event(
                        doc.seq, doc.homes, doc.data, evicting=bases is not None
                    )
                    stored.add(event)
                continue
            new = cache.get(doc.seq, doc.data)
            probes = frozenset(doc.probes)
            homes = frozenset(doc.homes)
            # the variables whose values this document probes here: a plan whose probe
            # starts from none of them can find nothing here (it is owned elsewhere)
            probing = {var for var, _node, value in new.value_rows if value in probes}

            def slice_of(value: str, probes: frozenset[str] = probes) -> Slice:
                if value not in probes:
                    return {}  # owned by the group of that value
                return label_slice(value, value)

            found = chain(
                (
                    match
                    for plan, anchor in anchors
                    if anchor is not None and not probing.isdisjoint(plan.var_counts[anchor])
                    for match in match_document(plan, new, slice_of, no_stored)
                ),
                keyed_matches(
                    keyed,
                    new,
                    probes,
                    homes,
                    pass_slice,
                    stored_under,
                    keyed_reach,
                    None if cached is None else cached.run,
                )
                if keyed
                else (),
                time_matches(timed, new, doc.probes, stored, state_of) if timed else (),
                hops.document(new, doc.probes) if hops is not None else (),
            )
            yield from records(found)
            if doc.homes:  # else only probes here (a hot value stored under another salt)
                # without lateness nothing is evicted: the group's reach, should a later
                # run of the job allow lateness
                kept = partner_reach(reaches, new.nodes) if bases is not None else GROUP_REACH
                stored.add(StoredDoc(doc.seq, new.ts, doc.homes, doc.data, kept))
                for label in doc.homes:
                    under.pop(label, None)
                    value = (
                        key_value(label)
                        if is_key_label(label)
                        else hop_value(label)
                        if is_hop_label(label)
                        else label
                    )
                    part = slices.get(label)
                    if part is not None:
                        value_slice(part, new, value)
                    part = passes.get(key_label(value)) if is_key_label(label) else None
                    if part is not None:
                        value_slice(part, new, value)
                if cached is not None:  # the slices hold ``new`` now, once
                    cached.stored(new, doc.homes, pass_of)
        evicted = 0 if bases is None else stored.evict_partners(bases[1], reach)
        if cached is not None:
            if evicted:
                cached.evicted({entry.seq for entry in stored.docs})
            cached.finish()

    def snapshot(self) -> bytes | None:
        data = self.stored.snapshot()
        if data is not None and self.context.memory is not None:
            live = LiveGroup(self.stored, self.caches, _version(self.context.subscriptions))
            self.context.memory.keep(self.context.group, self.stored.token, live)
        return data

    def hot_values(self) -> list[str]:
        threshold = self.context.hot_threshold
        if threshold is None:
            return []
        # a spread label is not reported: its key label is hot already (``key_labels``);
        # a composite chain's hop label is reported as its document label, which places
        # the value's documents and composite events alike (``routing``)
        hot = self.stored.hot(threshold)
        labels = (doc_label(hop_value(v)) if is_hop_label(v) else v for v in hot)
        return list(dict.fromkeys(v for v in labels if not is_spread_label(v)))

    def composites(self) -> list[Composite]:
        """The composite events the batch made (``hop_chains``), for the commit to
        publish."""
        return [] if self.hops is None else list(self.hops.events.values())
