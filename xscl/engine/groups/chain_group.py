"""The chain group: the chain-placed queries, with every document of their streams.

Chain-placed queries (``placements.CHAIN``: three or more blocks without a key class,
and ``{TRUE, INF}`` joins) run here, in one group that stores every document of the
streams they read, with real string values and XML (``codec``). Per batch the stored
documents (those the eviction horizon keeps) form a ``JoinState``; each new document,
in sequence order, is matched with the chain plans and its results are recorded. What
a query PUBLISHes leaves with its record, as every join group's does: the job's commit
appends it to the published spool, and the next micro-batch routes it
(docs/architecture.md, "Published streams").

Its cost grows with its state and it is one partition: docs/architecture.md ("The
chain group") says why, and what would spread it.

Where it runs: in the Spark job's stateful step, once per micro-batch
(``xscl.spark_plugin.job.join_groups``); in process in the tests.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from xscl.engine.groups.composites import Composite
from xscl.engine.groups.decoded import DecodedDocs
from xscl.engine.groups.routed import GroupContext, RoutedDoc, horizons
from xscl.engine.groups.stored import StoredDoc, StoredDocs, token_of
from xscl.engine.join_state import JoinState
from xscl.engine.output import ResultRecord
from xscl.engine.placements import CHAIN


class ChainGroup:
    """See the module docstring."""

    def __init__(self, snapshot: bytes | None, context: GroupContext) -> None:
        live = None
        if snapshot is not None and context.memory is not None:
            live = context.memory.take(context.group, token_of(snapshot))
        #: the worker's decoded documents (a batch's own when the caller keeps none)
        self.decoded = context.decoded if context.decoded is not None else DecodedDocs()
        self.stored: StoredDocs
        self.state: JoinState
        if isinstance(live, tuple):  # what this worker kept: the documents, decoded
            self.stored, self.state = live
        else:
            # another worker wrote the snapshot (Spark does not send a group to the worker
            # that ran it last), or none did: what this worker decoded before is reused
            self.stored = StoredDocs.load(snapshot)
            self.state = JoinState()
            for entry in self.stored.docs:
                self.state.store(self.decoded.get(entry.seq, entry.data))
        self.context = context

    def process(self, docs: Sequence[RoutedDoc]) -> Iterator[ResultRecord]:
        context = self.context
        subs = context.subscriptions
        records = context.records
        stored = self.stored
        plans = list(subs.plans(CHAIN))
        bounds = horizons(context.allowed_lateness, subs.reach(CHAIN), docs)
        state = self.state
        if bounds is not None:
            stored.evict(bounds[0])
            state.evict(bounds[0])
        emitted: set[str] = set()
        for doc in sorted(docs, key=lambda d: d.seq):
            current = self.decoded.get(doc.seq, doc.data)
            found = [m for m in state.matches(plans, current) if subs.sees(m)]
            records.forget_tuples()  # they hold parsed trees
            for match in found:
                record = records.record(match)
                if record.result_id not in emitted:
                    emitted.add(record.result_id)
                    yield record
            state.store(current)
            stored.add(StoredDoc(current.seq, current.ts, (), doc.data))
        if bounds is not None:
            stored.evict(bounds[1])
            state.evict(bounds[1])

    def snapshot(self) -> bytes | None:
        data = self.stored.snapshot()
        if data is not None and self.context.memory is not None:
            live = (self.stored, self.state)
            self.context.memory.keep(self.context.group, self.stored.token, live)
        return data

    def hot_values(self) -> list[str]:
        return []

    def composites(self) -> list[Composite]:
        return []
