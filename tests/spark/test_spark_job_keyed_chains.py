"""Chains of three or more blocks joined through one class of values
(``placements.KEYED``, ``engine.key_labels``), through the job's executor functions
without Spark (``test_spark_job_groups.run_job``).

A keyed match is owned by its key value: each document is stored under the label of
each key value it holds, in that label's group, and the match is found there when its
newest document arrives, whatever the arrival order, the batch cuts and the lateness.
The queries mix probes by the key class with an equality outside it (``p = q``), an
INF window and a chain that is not keyed (it stays in the chain group). A busy key
value is never spread over salts. The last test runs the streaming job on the shared
``local[2]`` session.
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
from tests.spark.test_spark_job_time_joins import _Spool
from xscl.connectors.document import Document, write_envelopes
from xscl.engine.groups.decoded import DecodedDocs
from xscl.engine.groups.routed import GroupContext, RoutedDoc
from xscl.engine.groups.value_group import ValueGroup
from xscl.engine.key_labels import is_key_label
from xscl.engine.output import DocumentTrees
from xscl.engine.placements import CHAIN, KEYED
from xscl.engine.records import RecordBuilder
from xscl.engine.routing import Router, RouteShape
from xscl.lang.parser import parse_queries
from xscl.service.live_queries import LiveQueries
from xscl.service.subscriptions import SubscriptionLog
from xscl.spark_plugin.batch import run_batch

SECOND = 1_000_000
KEYED_QUERIES = """\
three: S//item->i[./a->x] JOIN {x = y, 4s} T//item->j[./a->y]
       FOLLOWED BY {y = z, 6s} U//item->k[./a->z];
outside: S//item[./a->x][./b->p] JOIN {x = y, 3s} T//item[./a->y]
         JOIN {x = z AND p = q, 5s} S//item[./a->z][./b->q];
forever: T//item[./a->x] FOLLOWED BY {x = y, INF} T//item[./a->y]
         FOLLOWED BY {y = z, INF} U//item[./a->z];
four: S//item[./a->w] JOIN {w = x, 5s} T//item[./a->x] JOIN {x = y, 5s} U//item[./a->y]
      JOIN {w = z, 8s} S//item[./a->z];
"""
QUERIES = (
    KEYED_QUERIES
    + """\
unkeyed: S//item[./a->x][./b->p] JOIN {x = y, 3s} T//item[./a->y]
         JOIN {p = q, 3s} U//item[./b->q];
"""
)


def _documents(rng: random.Random, count: int, values: int = 2) -> list[Document]:
    docs = []
    for n in range(count):
        stream = rng.choice("STU")
        ts = rng.randrange(0, 8 * SECOND, rng.choice([SECOND // 2, SECOND]))
        a = "".join(f"<a>v{rng.randrange(values)}</a>" for _ in range(rng.choice([1, 1, 2])))
        b = f"<b>w{rng.randrange(2)}</b>" if rng.random() < 0.8 else ""
        docs.append(Document(stream, f"{stream}{n}", ts, f"<item>{a}{b}</item>"))
    return docs


def _queries(tmp_path: Path, text: str) -> Any:
    log = SubscriptionLog(tmp_path / "registry")
    log.subscribe(text, source="q.xscl")
    log.record_applied(1, 0)
    return LiveQueries().at(str(tmp_path / "registry"), 1)


@examples(60, suppress=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 2**32),
    count=st.integers(3, 22),
    cuts=st.lists(st.integers(1, 23), max_size=4),
    lateness=st.sampled_from([None, 0, 2 * SECOND, 10 * SECOND]),
    ordered=st.booleans(),
)
def test_keyed_chains_agree_with_the_reference(
    tmp_path_factory: Any, seed: int, count: int, cuts: list[int], lateness: int | None,
    ordered: bool,
) -> None:  # fmt: skip
    rng = random.Random(seed)
    docs = _documents(rng, count)
    if ordered:
        docs.sort(key=lambda d: d.ts_micros)
    work = tmp_path_factory.mktemp("keyed")
    got, _dead = run_job(work, QUERIES, docs, cuts, lateness)
    assert got == reference_by_id(work, QUERIES, docs, lateness)


def test_keyed_chains_are_placed_by_their_key_and_spread_over_groups(tmp_path: Path) -> None:
    queries = _queries(tmp_path, QUERIES)
    subs = queries.subscriptions
    assert subs.placement == {
        "three": KEYED, "outside": KEYED, "forever": KEYED, "four": KEYED, "unkeyed": CHAIN,
    }  # fmt: skip
    keyed_only = _queries(tmp_path / "keyed", KEYED_QUERIES)
    router = Router(
        RouteShape(tuple(range(16)), 4, None), keyed_only.subscriptions, keyed_only.routing(),
        RecordBuilder(keyed_only.subscriptions.record_plan),
    )  # fmt: skip
    groups: set[int] = set()
    for n in range(30):
        xml = f"<item><a>v{n}</a></item>"
        routed = router.route(n, "STU"[n % 3], f"d{n}", n * SECOND, xml, None)
        (row,) = routed.rows  # one key value: one group, no chain group
        assert row.homes == row.probes and all(is_key_label(label) for label in row.homes)
        groups.add(row.group)
    assert len(groups) > 3  # partitioned, not one group


def test_a_busy_key_is_never_spread(tmp_path: Path) -> None:
    """A key value the groups would find busy is not reported hot, and even a router
    that holds its label as hot keeps it in one group: a keyed match needs every
    document together. Every result is still found once (groups in process)."""
    queries = _queries(tmp_path, KEYED_QUERIES)
    subs = queries.subscriptions
    docs = [
        Document("STU"[n % 3], f"d{n}", n * SECOND // 4, "<item><a>v</a><b>w</b></item>")
        for n in range(18)
    ]
    shape = RouteShape(tuple(range(16)), 4, None)
    plain = Router(shape, subs, queries.routing(), RecordBuilder(subs.record_plan))
    first = plain.route(0, docs[0].stream, "d0", docs[0].ts_micros, docs[0].xml, None)
    busy = frozenset(h for row in first.rows for h in row.homes)
    hot = Router(shape, subs, queries.routing(), RecordBuilder(subs.record_plan), busy)
    routed: dict[int, list[RoutedDoc]] = defaultdict(list)
    for n, doc in enumerate(docs):
        out = (plain if n < 9 else hot).route(
            n, doc.stream, doc.docid, doc.ts_micros, doc.xml, None
        )
        assert [row.group for row in out.rows] == [row.group for row in first.rows]
        for row in out.rows:
            routed[row.group].append(
                RoutedDoc(out.seq, out.newest, row.homes, row.probes, row.data)
            )
    got: list[str] = []
    for key, rows in routed.items():
        records = RecordBuilder(subs.record_plan, DocumentTrees())
        context = GroupContext(subs, _Spool(docs), records, None, 3, DecodedDocs(), None, key)
        group = ValueGroup(None, context)
        got.extend(r.result_id for r in group.process(rows))
        assert group.hot_values() == []
    assert len(got) == len(set(got)), "a result found twice"
    assert set(got) == set(reference_by_id(tmp_path, KEYED_QUERIES, docs)) and got


@pytest.mark.spark
def test_keyed_chains_on_spark(spark: Any, tmp_path: Path) -> None:
    """The streaming job on the shared ``local[2]`` session (``xscl run --engine spark``):
    out-of-order arrival, micro-batches of 5 documents, values turning hot after 3
    documents; the reference's results, each once."""
    docs = _documents(random.Random(5), 40, values=2)
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
