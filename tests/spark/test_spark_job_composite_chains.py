"""Chains matched one hop at a time (``placements.COMPOSITE``, ``groups.hop_chains``),
through the job's executor functions without Spark (``test_spark_job_groups.run_job``).

A chain whose blocks are each joined to an earlier one by a value or a finite window,
with no one value joining them all (``A {x = y} B {p = q} C``, ``A {x = y} B {TRUE, 2s}
C``), used to run in the one chain group. Now the match of its first blocks is a
composite event, found in the group of its last hop's value (or time bucket),
published, and routed in the next micro-batch to the group of each value (or bucket) its
next hop can join it by, where it meets that block's documents. The workload mixes JOIN and
FOLLOWED BY, a hop from block 0 to block 2, four blocks, a hop with a second equality,
INF windows, a composite chain that PUBLISHes, read by a value join, and hops without a
value but with a finite window (matched by the time buckets of the window's class: two
queries of one template with windows of two classes). Every test
compares with ``xscl.reference``: random arrival orders, re-deliveries, batch cuts and
lateness (generated), hop labels turning hot and spread over salts, and a late document
in each block position (by hand).
``tests/spark/test_spark_job_shapes.py`` runs a composite chain on ``local[2]`` and
``local-cluster[2,1,1024]``.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from tests.profiles import examples
from tests.spark.jobkit import reference_by_id, subscribed
from tests.spark.test_spark_job_groups import run_job
from xscl.connectors.document import Document
from xscl.engine.groups.codec import digest
from xscl.engine.groups.composites import (
    COMPOSITE_STREAM,
    Composite,
    doc_label,
    event_label,
)
from xscl.engine.groups.keys import PUBLISHED_BASE
from xscl.engine.placements import CHAIN, COMPOSITE, VALUE
from xscl.engine.records import RecordBuilder
from xscl.engine.routing import Router, RouteShape, value_bucket

SECOND = 1_000_000
QUERIES = """\
fans: S//item[./a->x][./b->p] FOLLOWED BY {x = y, 6s} T//item[./a->y]
      FOLLOWED BY {p = q, 6s} S//item[./b->q];
hops: S//item[./a->x] JOIN {x = y, 5s} T//item[./a->y][./b->p]
      JOIN {p = q, 5s} U//item[./b->q];
four: S//item[./a->x] JOIN {x = y, 5s} T//item[./a->y][./b->p]
      JOIN {p = q, 5s} S//item[./b->q][./c->r] FOLLOWED BY {r = s, 6s} U//item[./c->s];
both: S//item[./a->x][./b->p] JOIN {x = y, INF} T//item[./a->y][./c->k]
      JOIN {p = r AND k = m, INF} U//item[./b->r][./c->m];
pubs: S//item[./a->x] FOLLOWED BY {x = y, 6s} T//item[./a->y][./b->p]
      JOIN {p = q, 6s} U//item[./b->q] PUBLISH C;
reads: C/result/item[./c->m] JOIN {m = n, 6s} T//item[./c->n];
loose: S//item[./a->x] FOLLOWED BY {x = y, 4s} T//item[./a->y] JOIN {TRUE, 2s} S//item[./c->q];
wide: S//item[./a->x] FOLLOWED BY {x = y, 9s} T//item[./a->y] JOIN {TRUE, 7s} S//item[./c->q];
head: S//item JOIN {TRUE, 3s} T//item[./b->p] FOLLOWED BY {p = q, 5s} U//item[./b->q];
mixed: S//item[./a->x] JOIN {x = y, INF} T//item[./a->y] JOIN {TRUE, 3s} U//item[./c->q];
"""
#: a hop without a value and an INF window: every pair may join (the chain group)
FOREVER = """\
forever: S//item[./a->x] JOIN {x = y, 5s} T//item[./a->y] JOIN {TRUE, INF} U//item;
"""
PLACED = {
    "fans": COMPOSITE, "hops": COMPOSITE, "four": COMPOSITE, "both": COMPOSITE,
    "pubs": COMPOSITE, "reads": VALUE, "loose": COMPOSITE, "wide": COMPOSITE,
    "head": COMPOSITE, "mixed": COMPOSITE, "forever": CHAIN,
}  # fmt: skip


def _item(rng: random.Random) -> str:
    return (
        f"<item><a>v{rng.randrange(2)}</a><b>w{rng.randrange(2)}</b>"
        f"<c>u{rng.randrange(2)}</c></item>"
    )


def _documents(rng: random.Random, count: int) -> list[Document]:
    docs = []
    for n in range(count):
        stream = rng.choice("STU")
        ts = rng.randrange(0, 10 * SECOND, SECOND // 2)
        docs.append(Document(stream, f"{stream}{n}", ts, _item(rng)))
    return docs


def test_unkeyed_chains_with_a_value_or_a_finite_window_per_hop_are_composite(
    tmp_path: Path,
) -> None:
    queries = subscribed(tmp_path, QUERIES + FOREVER)
    assert queries.subscriptions.placement == PLACED
    assert queries.subscriptions.feeds_back()  # composite events come back a batch later


@examples(40, suppress=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 2**32),
    count=st.integers(3, 24),
    cuts=st.lists(st.integers(1, 25), max_size=4),
    lateness=st.sampled_from([None, 0, 2 * SECOND, 10 * SECOND]),
    ordered=st.booleans(),
    again=st.lists(st.integers(0, 23), max_size=3),
    hot=st.sampled_from([None, 2]),
)
def test_composite_chains_agree_with_the_reference(
    tmp_path_factory: Any, seed: int, count: int, cuts: list[int], lateness: int | None,
    ordered: bool, again: list[int], hot: int | None,
) -> None:  # fmt: skip
    """``hot``: a hop label with more than that many entries in a group turns hot, and
    is spread over 4 salts from the next batch on."""
    rng = random.Random(seed)
    docs = _documents(rng, count)
    if ordered:
        docs.sort(key=lambda d: d.ts_micros)
    docs += [docs[n] for n in again if n < len(docs)]  # re-deliveries: the same document
    work = tmp_path_factory.mktemp("composite")
    got, _dead = run_job(work, QUERIES, docs, sorted(set(cuts)), lateness, hot_threshold=hot)
    assert got == reference_by_id(work, QUERIES, docs, lateness)


def test_a_late_document_in_each_block_position_completes_its_match(tmp_path: Path) -> None:
    """``hops``'s three documents at 10, 11 and 12 s; the one of block ``p`` arrives last,
    after a document at 13 s, so it is 1 to 3 s late, within the allowed 3 s; each in a
    micro-batch of its own. Its match is found (the composite event is built after it,
    or it meets the composite event stored before it) and equals the reference's."""
    text = QUERIES.split("four:")[0]
    members = [
        Document("S", "s", 10 * SECOND, "<item><a>v0</a></item>"),
        Document("T", "t", 11 * SECOND, "<item><a>v0</a><b>w0</b></item>"),
        Document("U", "u", 12 * SECOND, "<item><b>w0</b></item>"),
    ]
    later = Document("T", "later", 13 * SECOND, "<item><a>v9</a></item>")
    for position in range(3):
        others = [d for n, d in enumerate(members) if n != position]
        docs = [*others, later, members[position]]
        work = tmp_path / f"late-{position}"
        work.mkdir()
        got, dead = run_job(work, text, docs, [1, 2, 3, 4], 3 * SECOND)
        assert not dead
        expected = reference_by_id(work, text, docs, 3 * SECOND)
        assert got == expected
        assert [r["query"] for r in got.values()] == ["hops"], position


def test_a_composite_event_is_routed_to_the_groups_of_its_exits(tmp_path: Path) -> None:
    """A composite event read from the published spool goes to the group of each value
    its next hop can join it by, stored and probing under its event label there, in the
    group its hop's documents are stored in; a document a user sends on the reserved
    stream is not one (it is routed as any document: no query reads it)."""
    queries = subscribed(tmp_path, QUERIES)
    subs = queries.subscriptions
    router = Router(
        RouteShape(tuple(range(16))), subs, queries.routing(), RecordBuilder(subs.record_plan)
    )
    template = next(t for t in subs.hop_plans if t.block_count == 3)
    exits = (digest("w0"), digest("w1"))
    event = Composite(template, (digest("v0"),), (1, 2), (b"", b""), exits, 7)
    routed = router.route(PUBLISHED_BASE + 3, COMPOSITE_STREAM, event.event_id(), 7,
                          event.encode(), None)  # fmt: skip
    assert not routed.records and routed.dead is None
    placed = {label: row.group for row in routed.rows for label in row.homes}
    assert placed == {event_label(v): value_bucket(doc_label(v), 16) for v in exits}
    assert all(row.homes == row.probes for row in routed.rows)
    # a T document is the later end of hop 1 (y): stored under its label; its b (p)
    # travels in the composite events it is part of, so no label of it
    document = router.route(4, "T", "d", 7, "<item><a>v0</a><b>w0</b></item>", None)
    homes = {label: row.group for row in document.rows for label in row.homes}
    assert homes[doc_label(digest("v0"))] == value_bucket(doc_label(digest("v0")), 16)
    assert doc_label(digest("w0")) not in homes
    user = router.route(5, COMPOSITE_STREAM, "x", 7, "<item/>", None)
    assert user.dead is None and not user.rows  # a stream no query may read


def test_a_composite_event_of_an_unsubscribed_chain_goes_nowhere(tmp_path: Path) -> None:
    """Its chain was unsubscribed between the match that made it and the batch that
    reads it: no group row, no error (the groups drop one that arrives anyway)."""
    made = subscribed(tmp_path / "made", QUERIES)
    template = next(t for t in made.subscriptions.hop_plans if t.block_count == 3)
    event = Composite(template, (digest("v0"),), (1, 2), (b"", b""), (digest("w0"),), 7)
    later = subscribed(
        tmp_path / "later", "only: S//item[./a->x] JOIN {x = y, 5s} T//item[./a->y];"
    )
    subs = later.subscriptions
    router = Router(
        RouteShape(tuple(range(16))), subs, later.routing(), RecordBuilder(subs.record_plan)
    )
    routed = router.route(PUBLISHED_BASE, COMPOSITE_STREAM, event.event_id(), 7,
                          event.encode(), None)  # fmt: skip
    assert routed.rows == [] and routed.dead is None and not routed.records
