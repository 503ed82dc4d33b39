"""Results PUBLISHed by one-block queries are documents of their stream made where
Stage 1 runs (``engine.routing``), and routed like any other document: their readers
are placed by their own templates (value, time, keyed, stateless), not in the chain
group (``placements.place_queries``). Through the job's executor functions without
Spark (``test_spark_job_groups.run_job``) against ``xscl.reference``, and on the
shared ``local[2]`` session.

A published result is numbered right after its cause (``seq`` + 1, + 2, ...), takes the
cause's newest timestamp, is never late, and carries its XML to the value groups (the
spool does not hold it). A stream published by a query of two or more blocks is still
fed back inside the chain group, with its readers.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from tests.profiles import examples
from tests.spark.jobkit import reference_by_id
from tests.spark.test_spark_job_groups import run_job
from tests.spark.test_spark_job_time_joins import _Spool
from xscl.connectors.document import Document, write_envelopes
from xscl.engine.groups.chain_group import ChainGroup
from xscl.engine.groups.decoded import DecodedDocs
from xscl.engine.groups.keys import CHAIN_GROUP, CHAIN_PUBLISHED, SEQ_STRIDE
from xscl.engine.groups.routed import GroupContext, RoutedDoc
from xscl.engine.output import DocumentTrees
from xscl.engine.placements import CHAIN, KEYED, STATELESS, TIME, VALUE
from xscl.engine.records import RecordBuilder
from xscl.engine.routing import Router, RouteShape
from xscl.lang.parser import parse_queries
from xscl.service.live_queries import LiveQueries
from xscl.service.subscriptions import SubscriptionLog
from xscl.spark_plugin.batch import run_batch

SECOND = 1_000_000
QUERIES = """\
alert: S//item[./b = 'w0'] PUBLISH P;
other: T//item[./b = 'w1'] PUBLISH P;
again: P/result/item[./a->y] PUBLISH Q;
pair: P/result/item[./a->x] FOLLOWED BY {x = y, 5s} S//item[./a->y];
near: Q/result//item JOIN {TRUE, 2s} T//item[./b = 'w0'];
keyed: P/result/item[./a->x] FOLLOWED BY {x = y, 6s} T//item[./a->y]
       FOLLOWED BY {y = z, 6s} S//item[./a->z];
plain: Q/result//item[./a = 'v1'];
twice: P/result/item[./a->x] JOIN {x = y, 4s} S//item[./a->y] PUBLISH R;
reads_r: R/result/item[./a->u] FOLLOWED BY {u = v, 8s} T//item[./a->v];
"""
PLACED = {
    "alert": STATELESS, "other": STATELESS, "again": STATELESS, "pair": VALUE,
    "near": TIME, "keyed": KEYED, "plain": STATELESS, "twice": CHAIN, "reads_r": CHAIN,
}  # fmt: skip


def _documents(rng: random.Random, count: int) -> list[Document]:
    docs = []
    for n in range(count):
        stream = rng.choice("ST")
        ts = rng.randrange(0, 12 * SECOND, SECOND // 2)
        xml = f"<item><a>v{rng.randrange(2)}</a><b>w{rng.randrange(2)}</b></item>"
        docs.append(Document(stream, f"{stream}{n}", ts, xml))
    return docs


def test_the_readers_of_stateless_publishers_are_placed_by_their_templates(
    tmp_path: Path,
) -> None:
    log = SubscriptionLog(tmp_path / "registry")
    log.subscribe(QUERIES, source="q.xscl")
    log.record_applied(1, 0)
    subs = LiveQueries().at(str(tmp_path / "registry"), 1).subscriptions
    assert subs.placement == PLACED


@examples(60, suppress=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 2**32),
    count=st.integers(2, 20),
    cuts=st.lists(st.integers(1, 21), max_size=4),
    lateness=st.sampled_from([None, 0, 2 * SECOND, 10 * SECOND]),
    ordered=st.booleans(),
)
def test_published_streams_agree_with_the_reference(
    tmp_path_factory: Any, seed: int, count: int, cuts: list[int], lateness: int | None,
    ordered: bool,
) -> None:  # fmt: skip
    docs = _documents(random.Random(seed), count)
    if ordered:
        docs.sort(key=lambda d: d.ts_micros)
    work = tmp_path_factory.mktemp("published")
    got, _dead = run_job(work, QUERIES, docs, cuts, lateness)
    assert got == reference_by_id(work, QUERIES, docs, lateness)


@pytest.mark.spark
def test_published_streams_on_spark(spark: Any, tmp_path: Path) -> None:
    """The streaming job on the shared ``local[2]`` session: micro-batches of 4
    documents, values turning hot after 3; the reference's results, each once."""
    docs = _documents(random.Random(8), 30)
    source = tmp_path / "docs.jsonl"
    with open(source, "w", encoding="utf-8") as handle:
        write_envelopes(docs, handle)
    out = tmp_path / "results.jsonl"
    run_batch(
        parse_queries(QUERIES), source, out, allowed_lateness_micros=None,
        max_records_per_batch=4, hot_threshold=3,
    )  # fmt: skip
    got = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(got) == len({r["result_id"] for r in got}), "a result written twice"
    expected = reference_by_id(tmp_path, QUERIES, docs)
    assert {r["result_id"]: r for r in got} == expected
    assert {r["query"] for r in got} >= {"pair", "near", "keyed", "plain", "reads_r"}


def test_published_documents_never_share_a_number(tmp_path: Path) -> None:
    """A result published where Stage 1 runs and one the chain group publishes from the
    same spool record get different numbers: the chain group rebuilds its state from
    a worker's decoded documents by number (``groups.decoded``), batch after batch."""
    log = SubscriptionLog(tmp_path / "registry")
    log.subscribe(QUERIES, source="q.xscl")
    log.record_applied(1, 0)
    queries = LiveQueries().at(str(tmp_path / "registry"), 1)
    subs = queries.subscriptions
    docs = _documents(random.Random(3), 24)
    router = Router(
        RouteShape((0, 1, 2, 3), 1, None), subs, queries.routing(), RecordBuilder(subs.record_plan)
    )
    decoded = DecodedDocs()
    snapshot: bytes | None = None
    got: list[str] = []
    seqs: set[int] = set()
    for n, doc in enumerate(docs):  # one document per batch, one shared decoded cache
        out = router.route(n, doc.stream, doc.docid, doc.ts_micros, doc.xml, None)
        rows = [
            RoutedDoc(out.seq if r.seq is None else r.seq, out.newest, r.homes, r.probes, r.data)
            for r in out.rows
            if r.group == CHAIN_GROUP
        ]
        records = RecordBuilder(subs.record_plan, DocumentTrees())
        context = GroupContext(subs, _Spool(docs), records, None, None, decoded, None, CHAIN_GROUP)
        group = ChainGroup(snapshot, context)
        got.extend(r.result_id for r in group.process(rows))
        snapshot = group.snapshot()
        numbers = [entry.seq for entry in group.stored.docs]
        assert len(numbers) == len(set(numbers)), "two stored documents share a number"
        seqs.update(numbers)
    expected = reference_by_id(tmp_path, QUERIES, docs)
    chain = {rid for rid, r in expected.items() if r["query"] in ("twice", "reads_r")}
    assert set(got) == chain and chain
    assert any(seq % SEQ_STRIDE >= CHAIN_PUBLISHED for seq in seqs)  # R, published there
    assert any(1 < seq % SEQ_STRIDE < CHAIN_PUBLISHED for seq in seqs)  # P, routed here
