"""``{TRUE, w}`` joins partitioned by time (``placements.TIME``, ``engine.time_buckets``),
through the job's executor functions without Spark (``test_spark_job_groups.run_job``).

A join with no value condition and a finite window is spread over the value groups by
the time buckets of its documents: each result is found once, in the group of its
older-arriving document's bucket, whatever the arrival order, the batch cuts and the
lateness; a busy bucket spreads over salts as a hot value does. The queries' windows
straddle the bucket widths (``window_class``) so documents join across neighbouring
buckets, and one query of each class shares a template with another (both found once).
The last test runs the streaming job on the shared ``local[2]`` session.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from tests.profiles import examples
from tests.spark.jobkit import reference_by_id
from tests.spark.test_spark_job_groups import run_job
from xscl.connectors.document import Document, write_envelopes
from xscl.engine.groups.decoded import DecodedDocs
from xscl.engine.groups.routed import GroupContext, RoutedDoc
from xscl.engine.groups.value_group import ValueGroup
from xscl.engine.output import DocumentTrees
from xscl.engine.placements import TIME
from xscl.engine.records import RecordBuilder
from xscl.engine.routing import Router, RouteShape
from xscl.engine.time_buckets import is_label
from xscl.lang.parser import parse_queries
from xscl.service.live_queries import LiveQueries
from xscl.service.subscriptions import SubscriptionLog
from xscl.spark_plugin.batch import run_batch

SECOND = 1_000_000
QUERIES = """\
near: S//item->i[./a->x] JOIN {TRUE, 1s} T//item->j;
after: S//item->i FOLLOWED BY {TRUE, 2.5s} S//item->j[./a->y];
same: S//item->i[./a->x] JOIN {TRUE, 1.5s} T//item->j;
wide: T//item->i FOLLOWED BY {TRUE, 9s} S//item->j;
equal: T//item->i JOIN {TRUE, 0} T//item->j;
"""


def _documents(rng: random.Random, count: int) -> list[Document]:
    docs = []
    for n in range(count):
        stream = rng.choice("ST")
        ts = rng.randrange(0, 30 * SECOND, rng.choice([SECOND // 2, SECOND, 1]))
        docs.append(Document(stream, f"{stream}{n}", ts, f"<item><a>v{n % 3}</a></item>"))
    return docs


@examples(30, suppress=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 2**32),
    count=st.integers(2, 24),
    cuts=st.lists(st.integers(1, 25), max_size=4),
    lateness=st.sampled_from([None, 0, 2 * SECOND, 10 * SECOND]),
    ordered=st.booleans(),
)
def test_time_placed_joins_agree_with_the_reference(
    tmp_path_factory: Any, seed: int, count: int, cuts: list[int], lateness: int | None,
    ordered: bool,
) -> None:  # fmt: skip
    rng = random.Random(seed)
    docs = _documents(rng, count)
    if ordered:
        docs.sort(key=lambda d: d.ts_micros)
    work = tmp_path_factory.mktemp("time")
    got, _dead = run_job(work, QUERIES, docs, cuts, lateness)
    assert got == reference_by_id(work, QUERIES, docs, lateness)


def test_the_queries_are_time_placed_and_spread_over_groups(tmp_path: Path) -> None:
    log = SubscriptionLog(tmp_path / "registry")
    log.subscribe(QUERIES, source="q.xscl")
    log.record_applied(1, 0)
    queries = LiveQueries().at(str(tmp_path / "registry"), 1)
    subs = queries.subscriptions
    assert set(subs.placement.values()) == {TIME}
    router = Router(
        RouteShape(tuple(range(16)), 1, None), subs, queries.routing(),
        RecordBuilder(subs.record_plan),
    )  # fmt: skip
    groups: set[int] = set()
    for n, doc in enumerate(_documents(random.Random(3), 40)):
        routed = router.route(n, doc.stream, doc.docid, doc.ts_micros, doc.xml, None)
        assert routed.rows, "every document has a time-placed block"
        for row in routed.rows:
            assert all(is_label(label) for label in row.probes)
            groups.add(row.group)
    assert len(groups) > 3  # partitioned, not one group


def test_a_busy_bucket_spreads_over_salts(tmp_path: Path) -> None:
    """A time label found hot is spread as a hot value is: from then on a document is
    stored under one salt and probes every salt, and every result is still found once
    (the groups run in process, the label turning hot halfway)."""
    log = SubscriptionLog(tmp_path / "registry")
    log.subscribe(QUERIES, source="q.xscl")
    log.record_applied(1, 0)
    queries = LiveQueries().at(str(tmp_path / "registry"), 1)
    subs = queries.subscriptions
    docs = [
        Document("ST"[n % 2], f"d{n}", 5 * SECOND + n * 1_000, f"<item><a>v{n % 3}</a></item>")
        for n in range(24)
    ]
    shape = RouteShape(tuple(range(16)), 4, None)
    plain = Router(shape, subs, queries.routing(), RecordBuilder(subs.record_plan))
    first = plain.route(0, docs[0].stream, "d0", docs[0].ts_micros, docs[0].xml, None)
    busy = frozenset(h for row in first.rows for h in row.homes)  # its buckets' labels
    hot = Router(shape, subs, queries.routing(), RecordBuilder(subs.record_plan), busy)
    routed: dict[int, list[RoutedDoc]] = defaultdict(list)
    for n, doc in enumerate(docs):
        router = plain if n < 12 else hot
        out = router.route(n, doc.stream, doc.docid, doc.ts_micros, doc.xml, None)
        for row in out.rows:
            routed[row.group].append(
                RoutedDoc(out.seq, out.newest, row.homes, row.probes, row.data)
            )
        if n >= 12:
            assert len({row.group for row in out.rows}) > len({r.group for r in first.rows})
    got: list[str] = []
    for key, rows in routed.items():
        records = RecordBuilder(subs.record_plan, DocumentTrees())
        context = GroupContext(subs, _Spool(docs), records, None, None, DecodedDocs(), None, key)
        got.extend(r.result_id for r in ValueGroup(None, context).process(rows))
    assert len(got) == len(set(got)), "a result found twice"
    assert set(got) == set(reference_by_id(tmp_path, QUERIES, docs))


class _Spool:
    """The test's documents by sequence number (``groups.routed.DocumentStore``)."""

    def __init__(self, docs: list[Document]) -> None:
        self.docs = docs

    def xml(self, seq: int) -> str:
        return self.docs[seq >> 20].xml


@pytest.mark.spark
def test_time_placed_joins_on_spark(spark: Any, tmp_path: Path) -> None:
    """The streaming job on the shared ``local[2]`` session (``xscl run --engine spark``):
    out-of-order arrival, micro-batches of 5 documents, and buckets turning hot after 3
    documents; the reference's results, each once."""
    rng = random.Random(11)
    docs = _documents(rng, 40)
    source = tmp_path / "docs.jsonl"
    with open(source, "w", encoding="utf-8") as handle:
        write_envelopes(docs, handle)
    out = tmp_path / "results.jsonl"
    run_batch(
        parse_queries(QUERIES), source, out, allowed_lateness_micros=None,
        max_records_per_batch=5, hot_threshold=3,
    )  # fmt: skip
    got = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(got) == len({r["result_id"] for r in got}), "a result written twice"
    expected = reference_by_id(tmp_path, QUERIES, docs)
    assert {r["result_id"]: r for r in got} == expected and expected
