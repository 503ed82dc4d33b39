"""The chain group: the chain-placed queries, with every document of their streams.

Chain-placed queries (``placements.CHAIN``: three or more blocks without a key class,
``{TRUE, INF}`` joins, queries of two or more blocks that PUBLISH and the queries
reading what they publish) run here, in one group that stores every document of the
streams they read, with real string values and XML (``codec``). Per batch the stored
documents (those the eviction horizon keeps) form a ``JoinState``; each new document,
in sequence order, is matched with the chain plans, its results are recorded, and a
PUBLISHing query's results are fed back as documents of the published stream (docid
= result id, ts = the result's end, numbered after their cause:
``routed.SEQ_STRIDE``), evaluated by the same Stage 1, matched and stored in turn, as
``xscl run`` does (docs/language.md).

Its cost grows with its state and it is one partition: docs/architecture.md ("The
chain group") says why, and what would spread it.

Where it runs: in the Spark job's stateful step, once per micro-batch
(``xscl.spark_plugin.job.join_groups``); in process in the tests.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence

from xscl.engine.groups.codec import encode_state
from xscl.engine.groups.decoded import DecodedDocs
from xscl.engine.groups.keys import CHAIN_PUBLISHED, SEQ_STRIDE, spool_offset
from xscl.engine.groups.routed import GroupContext, RoutedDoc, horizons
from xscl.engine.groups.stored import StoredDoc, StoredDocs, token_of
from xscl.engine.join_state import JoinState
from xscl.engine.output import ResultRecord
from xscl.engine.placements import CHAIN
from xscl.engine.state import DocState
from xscl.xpath import Stage1Error


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
        #: spool offset -> the last number given to a result published here from it
        numbers: dict[int, int] = {}
        for doc in sorted(docs, key=lambda d: d.seq):
            queue: deque[DocState] = deque([self.decoded.get(doc.seq, doc.data)])
            offset = spool_offset(doc.seq)
            number = numbers.get(offset, offset * SEQ_STRIDE + CHAIN_PUBLISHED)
            while queue:
                current = queue.popleft()
                found = [m for m in state.matches(plans, current) if subs.sees(m)]
                records.forget_tuples()  # they hold parsed trees
                for match in found:
                    record = records.record(match)
                    if record.result_id in emitted:
                        continue
                    emitted.add(record.result_id)
                    yield record
                    target = subs.publish.get(record.query)
                    if target is not None:
                        number += 1
                        numbers[offset] = number
                        published = self._published(target, record, number)
                        if published is not None:
                            queue.append(published)
                state.store(current)
                data = doc.data if current.seq == doc.seq else encode_state(current)
                stored.add(StoredDoc(current.seq, current.ts, (), data))
        if bounds is not None:
            stored.evict(bounds[1])
            state.evict(bounds[1])

    def _published(self, stream: str, record: ResultRecord, seq: int) -> DocState | None:
        """A PUBLISHed result as a document of ``stream`` (None: Stage 1 refuses it)."""
        stage1 = self.context.subscriptions.stage1
        try:
            rows = stage1.evaluate_rows(stream, record.result_id, record.end_micros, record.xml)
        except Stage1Error:
            return None  # a result's XML is the engine's own: this cannot happen
        return DocState.from_rows(
            stream, record.result_id, record.end_micros, record.xml, seq, rows
        )

    def snapshot(self) -> bytes | None:
        data = self.stored.snapshot()
        if data is not None and self.context.memory is not None:
            live = (self.stored, self.state)
            self.context.memory.keep(self.context.group, self.stored.token, live)
        return data

    def hot_values(self) -> list[str]:
        return []
