"""Chains matched one hop at a time, partitioned by each hop's value or time bucket
(Cayuga's NEXT).

A composite-placed chain ``B0 op1 B1 op2 B2 ...`` (``placements.COMPOSITE``: every
block r >= 1 is joined to an earlier block by its hop edge's value, or by a finite
window alone, and no one value joins them all) is matched as Cayuga's automaton does
(Hong ch. 4, NEXT): a match of blocks 0..j is a composite event (``composites``; spec
3.2) that waits, in the group of each value hop j + 1 can join it by, for block j + 1's
document, and that document waits there for it. Every step runs in the value groups:

* **Hop 1** joins two documents, like a two-block value join: each is stored under
  ``doc_label(v)`` of each value it holds at a hop edge's end and probes it; a new
  document finds the stored ones by the hop edge's value (``hop_plans``: the prefix of
  two blocks, block 0's or block 1's plan, probing the hop edge first).
* **Hop j >= 2** joins a composite event of j documents with block j's document. A new
  document probes the composite events stored under ``event_label(v)``; a new composite
  event (from the published spool, a micro-batch after the match that made it) probes
  the documents stored under ``doc_label(v)``. Each candidate is checked by block j's
  plan of the prefix of j + 1 blocks over the event's documents and the new one, so a
  composite event is a real match of its prefix, windows included.
* **A time hop** (no value, a finite window ``w``) is partitioned as a two-block
  ``{TRUE, w}`` join is (``time_buckets``), per class of the query's window: its later
  block's document (both documents of hop 1) is stored under the hop label of its own
  bucket and probes the neighbouring ones' (a "value" that is a time label); a composite
  event the same way by its end, since a document joins it only within ``w`` of its
  end (spec 3.2). The hop's entry in the path is the bucket label the two met under,
  and a match counts only through its own query's class (``_on_path``).

A match of every block is a result; a match of fewer leaves as a composite event
(``events``), published by the job's commit and routed by its exits in the next
micro-batch.

**Each result once.** A match's hop values are fixed by its nodes. A match of the
prefix of j + 1 blocks is kept only in the group of its own hop j value (the label
probed) and only when its hop values 1..j-1 are the composite event's path. The
composite event of (documents, path) is made in one group at one time (when its last
part arrives there), with the exits of every prefix match of that path; the spool keeps
it once. Its documents' next partner and it meet once in the group of their hop value,
by the later of the two. So every match of the chain is found once, through the one
chain of composite events whose paths are its hop values, whatever the arrival order,
the batching or a replay.

**Eviction.** A composite event is stored with its end as timestamp and the template's
widest window as reach: a later document joins it only within its window of the event's
start, which is no later than its end. A document is kept by ``partner_reach``, as in
a value join. The job's eviction floor (``spark_plugin.job.published_floor``) applies,
as to every published document: an event's end is its timestamp there.

Where it runs: in a value group's batch (``value_group``), per new document that probes
a hop label and per composite event routed there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace

from xscl.engine.groups.codec import encode_state
from xscl.engine.groups.composites import (
    Composite,
    doc_label,
    event_label,
    hop_value,
    is_doc_label,
    is_event_label,
)
from xscl.engine.groups.decoded import DecodedDocs
from xscl.engine.groups.keyed_chains import value_slice
from xscl.engine.groups.stored import GROUP_REACH, StoredDoc, StoredDocs
from xscl.engine.hop_plans import HopPlans
from xscl.engine.matcher import Match, match_document, no_slice, no_stored
from xscl.engine.plans import RolePlan
from xscl.engine.state import DocState
from xscl.engine.subscriptions import Subscriptions
from xscl.engine.time_buckets import LABEL_PREFIX, is_label, label_class
from xscl.engine.view_cache import Slice


class HopChains:
    """One value group's composite chains for one batch (see the module docstring)."""

    def __init__(
        self,
        subscriptions: Subscriptions,
        stored: StoredDocs,
        state_of: Callable[[StoredDoc], DocState],
        label_slice: Callable[[str, str], Slice],
        decoded: DecodedDocs,
    ) -> None:
        self.subscriptions = subscriptions
        self.stored = stored
        self.state_of = state_of
        self.label_slice = label_slice
        self.decoded = decoded
        #: the composite events this batch made: id -> event (exits merged)
        self.events: dict[str, Composite] = {}
        self._composites: dict[int, Composite] = {}
        self._encoded: dict[int, bytes] = {}

    def document(self, new: DocState, probes: Iterable[str]) -> Iterator[Match]:
        """The full matches a new document completes here (its composite events go to
        ``events``)."""
        labels = {hop_value(label) for label in probes if is_doc_label(label)}
        if not labels:
            return
        values = {label for label in labels if not is_label(label)}
        times = sorted(label for label in labels if is_label(label))
        hops = self.subscriptions.hop_plans

        def slice_of(value: str) -> Slice:
            if value not in values:
                return {}  # another hop value's group owns it
            return self.label_slice(doc_label(value), value)

        # a time hop: the documents stored under each bucket label probed here
        under = {label: self._stored_under(doc_label(label)) for label in times}
        for plans in hops.values():
            first = plans.edges[0]
            for plan in plans.hops[0]:
                if first is not None:
                    for match in match_document(plan, new, slice_of, no_stored):
                        self._extend(plans, 2, match, (_value_at(match, first[0]),))
                    continue
                for label, docs in under.items():
                    width = label_class(label)
                    for match in match_document(plan, new, no_slice, docs.copy):
                        if plans.hop_class(match[0].qid, 1) == width:
                            self._extend(plans, 2, match, (label,))
        for label in labels:
            for position in self.stored.index.get(event_label(label), ()):
                entry = self.stored.docs[position]
                event = self._event(entry.seq, entry.data)
                chain = hops.get(event.template)
                if chain is not None:
                    yield from self._hop(chain, event, label, new)

    def composite(self, seq: int, data: bytes, probes: Iterable[str]) -> Iterator[Match]:
        """The full matches a composite event routed here completes (``events``: the
        longer ones it makes)."""
        event = self._event(seq, data)
        plans = self.subscriptions.hop_plans.get(event.template)
        if plans is None:
            return  # its queries were unsubscribed
        for label in probes:
            if not is_event_label(label):
                continue
            value = hop_value(label)
            for doc in self._stored_under(doc_label(value)):
                yield from self._hop(plans, event, value, doc)

    def stored_event(
        self, seq: int, homes: tuple[str, ...], data: bytes, *, evicting: bool
    ) -> StoredDoc:
        """A composite event routed here, as the group stores it: its end as timestamp,
        the template's widest window as reach (``evicting``: the lateness is set; else
        the group's, should a later run allow lateness)."""
        event = self._event(seq, data)
        plans = self.subscriptions.hop_plans.get(event.template)
        reach = (0 if plans is None else plans.max_window) if evicting else GROUP_REACH
        return StoredDoc(seq, event.end, homes, data, reach)

    def _event(self, seq: int, data: bytes) -> Composite:
        """Composite event ``seq``, decoded once per batch."""
        event = self._composites.get(seq)
        if event is None:
            event = self._composites[seq] = Composite.decode(data)
        return event

    def _stored_under(self, label: str) -> list[DocState]:
        """The documents stored here under ``label``."""
        return [self.state_of(self.stored.docs[p]) for p in self.stored.index.get(label, ())]

    def _hop(self, plans: HopPlans, event: Composite, value: str, new: DocState) -> Iterator[Match]:
        """Composite event ``event`` (j documents) with ``new`` in block j, by hop j's
        ``value``: the full matches, or the longer event."""
        j = len(event.seqs)
        if new.seq in event.seqs or j >= plans.block_count:
            return
        members = [
            self.decoded.get(seq, data) for seq, data in zip(event.seqs, event.members, strict=True)
        ]
        slices: dict[str, Slice] = {}

        def slice_of(probed: str) -> Slice:
            part = slices.get(probed)
            if part is None:
                part = slices[probed] = {}
                for member in members:
                    value_slice(part, member, probed)
            return part

        plan: RolePlan = plans.hops[j - 1][0]
        want = (*event.seqs, new.seq)
        path = (*event.path, value)
        for match in match_document(plan, new, slice_of, lambda: members):
            if tuple(d.seq for d in match[1]) != want or not _on_path(plans, match, path):
                continue
            if j + 1 == plans.block_count:
                yield match
            else:
                self._extend(plans, j + 1, match, path)

    def _extend(self, plans: HopPlans, blocks: int, match: Match, path: tuple[str, ...]) -> None:
        """The composite event of a prefix match of ``blocks`` blocks with hop values
        ``path``: made, or given the match's exit."""
        row, docs, _nodes = match
        edge = plans.edges[blocks - 1]  # the next hop's
        if edge is None:  # a time hop: its buckets, of this query's window's class
            exit_value = f"{LABEL_PREFIX}{plans.hop_class(row.qid, blocks)}"
        else:
            exit_value = _value_at(match, edge[0])
        if not path[-1] or not exit_value:
            return  # empty values never join
        event = Composite(
            plans.template,
            path,
            tuple(d.seq for d in docs),
            tuple(self._bytes(d) for d in docs),
            (exit_value,),
            max(d.ts for d in docs),
        )
        key = event.event_id()
        known = self.events.get(key)
        if known is not None:
            if exit_value in known.exits:
                return
            event = replace(known, exits=(*known.exits, exit_value))
        self.events[key] = event

    def _bytes(self, doc: DocState) -> bytes:
        """A document as a composite event carries it (encoded once per batch)."""
        data = self._encoded.get(doc.seq)
        if data is None:
            data = self._encoded[doc.seq] = encode_state(doc)
        return data


def _value_at(match: Match, meta: int) -> str:
    """The value (a digest) of meta-variable ``meta``'s node in ``match``."""
    _row, docs, nodes = match
    return docs[match[0].template.blocks[meta]].values.get(nodes[meta], "")


def _on_path(plans: HopPlans, match: Match, path: tuple[str, ...]) -> bool:
    """Whether ``match``'s hop values are ``path`` (hop 1, 2, ...): a value hop's edge
    value, a time hop's bucket of the class of the match's query."""
    for hop, (edge, value) in enumerate(zip(plans.edges, path, strict=False), start=1):
        if edge is None:
            if label_class(value) != plans.hop_class(match[0].qid, hop):
                return False
        elif _value_at(match, edge[0]) != value:
            return False
    return True
