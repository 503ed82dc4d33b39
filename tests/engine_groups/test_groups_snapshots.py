"""The join groups' logic in process: a replay from an older snapshot, and a worker's
kept states.

Spark hands a group the snapshot its last committed batch wrote; a batch that failed
after the group ran is replayed with the snapshot before it. A worker keeps the
states it wrote (``GroupMemory``) and reuses them only for the snapshot they were
written as: a replay must read the older snapshot's bytes and give the same records.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from xscl.connectors.document import Document
from xscl.engine.groups.chain_group import ChainGroup
from xscl.engine.groups.decoded import DecodedDocs
from xscl.engine.groups.routed import GroupContext, GroupLogic, RoutedDoc, kind_of
from xscl.engine.groups.stored import GroupMemory
from xscl.engine.groups.value_group import ValueGroup
from xscl.engine.output import DocumentTrees
from xscl.engine.records import RecordBuilder
from xscl.engine.routing import Router, RouteShape
from xscl.service.live_queries import JobQueries, LiveQueries
from xscl.service.subscriptions import SubscriptionLog

QUERIES = """\
pair: S//item->i[./a->x] JOIN {x = y, INF} S//item->j[./a->y];
keyed: S//item[./a->x] FOLLOWED BY {x = y, INF} S//item[./a->y]
    FOLLOWED BY {y = z, INF} S//item[./a->z];
chain: S//item[./a->x] FOLLOWED BY {x = y, INF} S//item[./a->y] FOLLOWED BY {TRUE, INF} S//item;
"""


class Spool:
    """The documents of a test by sequence number (``DocumentStore``)."""

    def __init__(self, docs: list[Document]) -> None:
        self.docs = docs

    def xml(self, seq: int) -> str:
        return self.docs[seq >> 20].xml


def _docs(count: int) -> list[Document]:
    return [
        Document("S", f"d{i}", i * 1_000_000, f"<item><a>{'v' if i % 2 else 'w'}</a></item>")
        for i in range(count)
    ]


def _job_queries(tmp_path: Path) -> JobQueries:
    """The test's queries subscribed in a registry and built as a worker builds them."""
    log = SubscriptionLog(tmp_path / "registry")
    log.subscribe(QUERIES, source="q.xscl")
    log.record_applied(1, 0)
    return LiveQueries().at(str(tmp_path / "registry"), 1)


def _routed(
    queries: JobQueries, docs: list[Document], shape: RouteShape
) -> dict[int, list[RoutedDoc]]:
    router = Router(
        shape, queries.subscriptions, queries.routing(),
        RecordBuilder(queries.subscriptions.record_plan),
    )  # fmt: skip
    out: dict[int, list[RoutedDoc]] = defaultdict(list)
    for offset, doc in enumerate(docs):
        routed = router.route(offset, doc.stream, doc.docid, doc.ts_micros, doc.xml, None)
        for row in routed.rows:
            out[row.group].append(
                RoutedDoc(routed.seq, routed.newest, row.homes, row.probes, row.data)
            )
    return out


def _logic(
    key: int, snapshot: bytes | None, queries: JobQueries, spool: Spool, memory: GroupMemory[object]
) -> GroupLogic:
    records = RecordBuilder(queries.subscriptions.record_plan, DocumentTrees())
    context = GroupContext(
        queries.subscriptions, spool, records, None, None, DecodedDocs(), memory, key
    )
    kind = kind_of(key)
    return ChainGroup(snapshot, context) if kind == "chain" else ValueGroup(snapshot, context)


def _run(logic: GroupLogic, docs: list[RoutedDoc]) -> tuple[set[str], bytes | None]:
    ids = {r.result_id for r in logic.process(docs)}
    return ids, logic.snapshot()


def test_a_replay_from_the_older_snapshot_gives_the_same_records(tmp_path: Path) -> None:
    queries = _job_queries(tmp_path)
    docs = _docs(12)
    spool = Spool(docs)
    shape = RouteShape((0, 1, 2), 1, None)
    first, second = _routed(queries, docs[:6], shape), _routed(queries, docs, shape)
    assert set(first) == set(second) and len(first) >= 2  # value groups and the chain group
    for key in second:
        later = [d for d in second[key] if d.seq >> 20 >= 6]
        memory: GroupMemory[object] = GroupMemory()
        ids1, snap1 = _run(_logic(key, None, queries, spool, memory), first[key])
        ids2, snap2 = _run(_logic(key, snap1, queries, spool, memory), later)  # kept state
        assert snap2 is not None
        fresh: GroupMemory[object] = GroupMemory()
        assert _run(_logic(key, snap1, queries, spool, fresh), later)[0] == ids2  # from bytes
        # the replay on the worker that went on: its kept state is newer than snap1
        replayed, _snap = _run(_logic(key, snap1, queries, spool, memory), later)
        assert replayed == ids2
        assert ids2 and not ids1 & ids2


def test_groups_alternating_between_two_workers_give_one_worker_s_records(
    tmp_path: Path,
) -> None:
    """Spark sends a group's batches to whichever worker is free: a worker handed a
    snapshot the other wrote rebuilds from its bytes, reusing the documents it decoded
    before and decoding only the others."""
    queries = _job_queries(tmp_path)
    docs = _docs(18)
    spool = Spool(docs)
    routed = _routed(queries, docs, RouteShape((0, 1, 2), 1, None))
    assert any(kind_of(key) == "chain" for key in routed)
    for key, rows in routed.items():
        batches = [[d for d in rows if lo <= d.seq >> 20 < lo + 6] for lo in (0, 6, 12)]
        records = RecordBuilder(queries.subscriptions.record_plan, DocumentTrees())

        def logic(
            snapshot: bytes | None,
            decoded: DecodedDocs,
            key: int = key,
            records: RecordBuilder = records,
        ) -> GroupLogic:
            context = GroupContext(
                queries.subscriptions, spool, records, None, None, decoded, None, key
            )
            if kind_of(key) == "chain":
                return ChainGroup(snapshot, context)
            return ValueGroup(snapshot, context)

        alone, snapshot = DecodedDocs(), None
        expected: set[str] = set()
        for batch in batches:
            ids, snapshot = _run(logic(snapshot, alone), batch)
            expected |= ids
        workers = [DecodedDocs(), DecodedDocs()]
        got: set[str] = set()
        snapshot = None
        for number, batch in enumerate(batches):
            ids, snapshot = _run(logic(snapshot, workers[number % 2]), batch)
            got |= ids
        assert got == expected and expected
        if kind_of(key) == "chain":  # each document decoded once per worker, not per batch
            seen_by_first = len(batches[0]) + len(batches[1]) + len(batches[2])
            assert workers[0].misses == seen_by_first
            assert workers[1].misses == len(batches[0]) + len(batches[1])
