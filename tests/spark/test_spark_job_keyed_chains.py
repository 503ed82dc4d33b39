"""Chains of three or more blocks joined through one class of values
(``placements.KEYED``, ``engine.key_labels``), through the job's executor functions
without Spark (``test_spark_job_groups.run_job``).

A keyed match is owned by its key value: each document is stored under the label of
each key value it holds, in that label's group, and the match is found there when its
newest document arrives, whatever the arrival order, the batch cuts and the lateness.
The queries mix probes by the key class with an equality outside it (``p = q``), an
INF window and a chain that is not keyed (it stays in the chain group). A key value
turned hot is spread over salts ("store everywhere, probe one", ``key_labels``) and
every result is still found once. The last test runs the streaming job on the shared
``local[2]`` session.
"""

from __future__ import annotations

import itertools
import json
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from tests.profiles import examples
from tests.spark.jobkit import reference_by_id, subscribed
from tests.spark.test_spark_job_groups import run_job
from tests.spark.test_spark_job_time_joins import _Spool
from xscl.connectors.document import Document, write_envelopes
from xscl.engine.groups.codec import digest
from xscl.engine.groups.decoded import DecodedDocs
from xscl.engine.groups.join_plans import PlanChoice
from xscl.engine.groups.routed import GroupContext, RoutedDoc
from xscl.engine.groups.stored import GroupMemory
from xscl.engine.groups.value_group import ValueGroup
from xscl.engine.key_labels import (
    is_key_label,
    is_spread_label,
    key_label,
    key_value,
    spread_label,
)
from xscl.engine.output import DocumentTrees
from xscl.engine.placements import COMPOSITE, KEYED
from xscl.engine.records import RecordBuilder
from xscl.engine.routing import Routed, Router, RouteShape, salt_of
from xscl.lang.parser import parse_queries
from xscl.spark_plugin.batch import run_batch

SECOND = 1_000_000
KEYED_QUERIES = """\
three: S//item->i[./a->x] JOIN {x = y, 4s} T//item->j[./a->y]
       FOLLOWED BY {y = z, 6s} U//item->k[./a->z];
outside: S//item[./a->x][./b->p] JOIN {x = y, 3s} T//item[./a->y]
         JOIN {x = z AND p = q, 5s} S//item[./a->z][./b->q];
wide: T//item[./a->x] FOLLOWED BY {x = y, 30s} T//item[./a->y]
      FOLLOWED BY {y = z, 30s} U//item[./a->z];
four: S//item[./a->w] JOIN {w = x, 5s} T//item[./a->x] JOIN {x = y, 5s} U//item[./a->y]
      JOIN {w = z, 8s} S//item[./a->z];
"""
UNKEYED = """\
unkeyed: S//item[./a->x][./b->p] JOIN {x = y, 3s} T//item[./a->y]
         JOIN {p = q, 3s} U//item[./b->q];
"""
#: a keyed chain with INF windows: hot keys are then not spread (``routing``)
FOREVER = """\
forever: T//item[./a->x] FOLLOWED BY {x = y, INF} T//item[./a->y]
         FOLLOWED BY {y = z, INF} U//item[./a->z];
"""
QUERIES = KEYED_QUERIES + UNKEYED + FOREVER


def _documents(rng: random.Random, count: int, values: int = 2) -> list[Document]:
    docs = []
    for n in range(count):
        stream = rng.choice("STU")
        ts = rng.randrange(0, 8 * SECOND, rng.choice([SECOND // 2, SECOND]))
        a = "".join(f"<a>v{rng.randrange(values)}</a>" for _ in range(rng.choice([1, 1, 2])))
        b = f"<b>w{rng.randrange(2)}</b>" if rng.random() < 0.8 else ""
        docs.append(Document(stream, f"{stream}{n}", ts, f"<item>{a}{b}</item>"))
    return docs


@examples(30, suppress=[HealthCheck.function_scoped_fixture])
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
    queries = subscribed(tmp_path, QUERIES)
    subs = queries.subscriptions
    assert subs.placement == {
        "three": KEYED, "outside": KEYED, "wide": KEYED, "four": KEYED, "unkeyed": COMPOSITE,
        "forever": KEYED,
    }  # fmt: skip
    keyed_only = subscribed(tmp_path / "keyed", KEYED_QUERIES)
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


def _in_process(
    work: Path,
    docs: list[Document],
    cuts: list[int],
    hot_threshold: int | None,
    lateness: int | None = None,
    forced: tuple[int, str] | None = None,
    text: str = KEYED_QUERIES,
    join_plans: PlanChoice | None = None,
    memory: GroupMemory[Any] | None = None,
) -> tuple[list[str], list[tuple[frozenset[str], Routed]]]:
    """The keyed queries' result ids, in the order the groups found them, and each
    routed document with the hot set it was routed under: routing and the value groups
    in process, batch by batch at ``cuts``. The hot set grows between batches as the
    driver's commit grows it (``hot_values``), and ``forced`` = (batch, value) makes
    the key of ``value`` hot before that batch besides. ``join_plans``: the groups' plan
    choice (None: every plan probes); ``memory``: a worker's live group states, kept
    between batches (None: each batch starts from the snapshots)."""
    queries = subscribed(work, text)
    subs, table = queries.subscriptions, queries.routing()
    shape = RouteShape(tuple(range(16)), 4, lateness)
    spool, decoded = _Spool(docs), DecodedDocs()
    hot: set[str] = set()
    snapshots: dict[int, bytes | None] = {}
    found: list[str] = []
    routes: list[tuple[frozenset[str], Routed]] = []
    newest: int | None = None
    bounds = sorted({0, len(docs), *(c for c in cuts if 0 < c < len(docs))})
    for number, (start, stop) in enumerate(itertools.pairwise(bounds)):
        if forced is not None and forced[0] == number:
            hot.add(key_label(digest(forced[1])))
        router = Router(shape, subs, table, RecordBuilder(subs.record_plan), frozenset(hot))
        batch: dict[int, list[RoutedDoc]] = defaultdict(list)
        for n in range(start, stop):
            doc = docs[n]
            out = router.route(n, doc.stream, doc.docid, doc.ts_micros, doc.xml, newest)
            newest = doc.ts_micros if newest is None else max(newest, doc.ts_micros)
            routes.append((router.hot, out))
            for row in out.rows:
                batch[row.group].append(
                    RoutedDoc(out.seq, out.newest, row.homes, row.probes, row.data)
                )
        for key in sorted(batch):
            records = RecordBuilder(subs.record_plan, DocumentTrees())
            context = GroupContext(
                subs, spool, records, lateness, hot_threshold, decoded, memory, key, join_plans
            )
            group = ValueGroup(snapshots.get(key), context)
            found.extend(r.result_id for r in group.process(batch[key]))
            snapshots[key] = group.snapshot()
            reported = group.hot_values()
            assert not any(is_spread_label(label) for label in reported)
            hot.update(reported)
    return found, routes


def _spread_rows(routes: list[tuple[frozenset[str], Routed]]) -> int:
    """How many documents were routed with a hot key label; each such label of a
    document is stored under its spread label in several groups and probed in at most
    two (its own salt's and salt 0's)."""
    spread = 0
    for hot, out in routes:
        labels = {label for row in out.rows for label in (*row.homes, *row.probes)}
        for label in labels:
            if not is_key_label(label) or is_spread_label(label):
                continue
            value = key_value(label)
            storing = {row.group for row in out.rows if spread_label(value) in row.homes}
            probing = {
                row.group for row in out.rows if {label, spread_label(value)} & set(row.probes)
            }
            if label in hot:
                spread += 1
                assert len(storing) > 1 and 1 <= len(probing) <= 2
                assert not any(label in row.homes for row in out.rows)
            else:
                assert not storing and len(probing) == 1
    return spread


@pytest.mark.parametrize(
    ("threshold", "forced"), [(1, None), (2, None), (4, None), (7, None), (None, (0, "v"))]
)
def test_a_key_turned_hot_halfway_is_spread(
    tmp_path: Path, threshold: int | None, forced: tuple[int, str] | None
) -> None:
    """A key value the groups find busy turns hot (at a point set by the threshold, or
    before the first document):
    from then on its documents are stored under its spread label in several groups and
    probe at most two, and every result is still found, once: three and four blocks,
    an equality outside the key class, documents of one or two key values and of
    several salts (groups in process, batches of 3)."""
    docs = []
    for n in range(18):
        keys = "<a>v</a><a>u</a>" if n % 3 == 1 else "<a>v</a>"  # one or two key values
        xml = f"<item>{keys}<b>w{n % 2}</b></item>"
        docs.append(Document("STU"[n % 3], f"d{n}", n * SECOND // 4, xml))
    got, routes = _in_process(tmp_path, docs, list(range(0, 18, 3)), threshold, None, forced)
    assert len(got) == len(set(got)), "a result found twice"
    assert set(got) == set(reference_by_id(tmp_path, KEYED_QUERIES, docs)) and got
    assert _spread_rows(routes) > 0
    salts = {salt_of(doc.stream, doc.docid, 4) for doc in docs[9:]}
    assert len(salts) > 1


#: Random documents (``_documents(Random(seed), count)``), batch cuts, lateness and the
#: groups' hot threshold: the keyed workloads of the hot-key and plan-choice tests
HOT_KEY_WORKLOADS = {
    "seed": st.integers(0, 2**32),
    "count": st.integers(3, 22),
    "cuts": st.lists(st.integers(1, 23), max_size=5),
    "lateness": st.sampled_from([None, 0, 2 * SECOND, 10 * SECOND]),
    "threshold": st.sampled_from([None, 1, 2, 4]),
}


@examples(30, suppress=[HealthCheck.function_scoped_fixture])
@given(
    **HOT_KEY_WORKLOADS,
    forced=st.none() | st.tuples(st.integers(0, 5), st.sampled_from(["v0", "v1"])),
)
def test_keys_turning_hot_agree_with_the_reference(
    tmp_path_factory: Any, seed: int, count: int, cuts: list[int], lateness: int | None,
    threshold: int | None, forced: tuple[int, str] | None,
) -> None:  # fmt: skip
    """Random documents, arrival orders, batch cuts and lateness, with key labels turning
    hot between batches (reported by the groups, or ``forced``): the reference's
    results, each once (groups in process)."""
    docs = _documents(random.Random(seed), count)
    work = tmp_path_factory.mktemp("hot-keys")
    got, routes = _in_process(work, docs, cuts, threshold, lateness, forced)
    _spread_rows(routes)
    assert len(got) == len(set(got)), "a result found twice"
    assert set(got) == set(reference_by_id(work, KEYED_QUERIES, docs, lateness))


@pytest.mark.spark
@pytest.mark.parametrize("join_plan", ["adaptive", "cache"])
def test_keyed_chains_on_spark(spark: Any, tmp_path: Path, join_plan: str) -> None:
    """The streaming job on the shared ``local[2]`` session (``xscl run --engine spark``):
    out-of-order arrival, micro-batches of 5 documents, values turning hot after 3
    documents (spread: every keyed window is finite); the reference's results, each
    once, with the default plan choice and with every last block matched through kept
    prefixes (``join_plans``)."""
    text = KEYED_QUERIES + UNKEYED
    docs = _documents(random.Random(5), 40, values=2)
    source = tmp_path / "docs.jsonl"
    with open(source, "w", encoding="utf-8") as handle:
        write_envelopes(docs, handle)
    out = tmp_path / "results.jsonl"
    run_batch(
        parse_queries(text), source, out, allowed_lateness_micros=None,
        max_records_per_batch=5, hot_threshold=3, join_plan=join_plan,
    )  # fmt: skip
    got = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(got) == len({r["result_id"] for r in got}), "a result written twice"
    expected = reference_by_id(tmp_path, text, docs)
    assert {r["result_id"]: r for r in got} == expected and expected


def test_a_hot_key_is_not_spread_when_a_keyed_window_is_inf(tmp_path: Path) -> None:
    """With an INF keyed chain subscribed, salt 0's group would have to look at the
    key's pre-hot documents for ever (``keyed_chains``), so a hot key stays in one
    group: stored and probed under its key label only."""
    queries = subscribed(tmp_path, KEYED_QUERIES + FOREVER)
    subs = queries.subscriptions
    assert not queries.routing().spread_keys
    label = key_label(digest("v"))
    router = Router(
        RouteShape(tuple(range(16)), 4, None), subs, queries.routing(),
        RecordBuilder(subs.record_plan), frozenset({label}),
    )  # fmt: skip
    out = router.route(0, "T", "d0", 0, "<item><a>v</a></item>", None)
    (row,) = out.rows
    assert row.homes == row.probes == (label,)


def test_salt_0_stops_its_extra_pass_once_the_pre_hot_documents_age(tmp_path: Path) -> None:
    """One key value over 60 s, windows of at most 8 s, the key hot from the fourth
    batch on: once every pre-hot document is older than 8 s before a new document,
    salt 0's group skips its pass over the key label (``keyed_chains``); results equal
    the reference, each once, with and without lateness."""
    text = KEYED_QUERIES.replace("30s", "8s")
    docs = [
        Document("STU"[n % 3], f"d{n}", n * SECOND, f"<item><a>v</a><b>w{n % 2}</b></item>")
        for n in range(60)
    ]
    cuts = list(range(0, 60, 4))
    for lateness in (None, 2 * SECOND):
        work = tmp_path / f"late-{lateness}"
        work.mkdir()
        got, routes = _in_process(work, docs, cuts, None, lateness, (3, "v"), text)
        assert len(got) == len(set(got)), "a result found twice"
        assert set(got) == set(reference_by_id(work, text, docs, lateness)) and got
        assert _spread_rows(routes) > 40
