"""PUBLISHed results are documents of their stream, routed like any other document:
publishers and readers are placed by their own templates (value, time, keyed,
stateless, chain), never moved to the chain group (``placements.place_queries``).
Through the job's executor functions without Spark (``test_spark_job_groups.run_job``)
against ``xscl.reference``, and on the shared ``local[2]`` session.

A one-block query's result is made where Stage 1 runs: it is numbered right after its
cause (``seq`` + 1, + 2, ...), takes the cause's newest timestamp, is never late, and
carries its XML to the value groups. What a join group publishes is appended to the
job's published spool by the batch's commit and read by the next micro-batch
(``routed_source``), numbered from ``keys.PUBLISHED_BASE``: chains of such publishers
take a batch per hop, and an ``availableNow`` run goes on until none is new.
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
from xscl.connectors.document import Document, write_envelopes
from xscl.connectors.spool import Spool
from xscl.engine.placements import CHAIN, COMPOSITE, KEYED, STATELESS, TIME, VALUE
from xscl.lang.parser import parse_queries
from xscl.service.live_queries import LiveQueries
from xscl.service.subscriptions import SubscriptionLog
from xscl.spark_plugin.batch import run_batch
from xscl.spark_plugin.job.routed_source import RoutedStreamReader, RouteTask
from xscl.spark_plugin.job.sink import append_published
from xscl.spark_plugin.spool_source import SpoolOptions, committed_end, read_records

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
reads_r: R/result/item[./a->u] FOLLOWED BY {u = v, 8s} T//item[./a->v] PUBLISH Z;
reads_z: Z/result/item[./b->k] JOIN {k = l, 3s} S//item[./b->l];
fans: S//item[./a->x][./b->p] FOLLOWED BY {x = y, 6s} T//item[./a->y]
      FOLLOWED BY {p = q, 6s} S//item[./b->q] PUBLISH C;
loose: S//item[./a->x] FOLLOWED BY {x = y, 6s} T//item[./a->y]
       FOLLOWED BY {TRUE, INF} S//item[./b = 'w1'] PUBLISH C;
reads_c: C/result/item[./b->m] JOIN {m = n, 5s} T//item[./b->n];
one_of_r: R/result/item[./b = 'w1'];
"""
PLACED = {
    "alert": STATELESS, "other": STATELESS, "again": STATELESS, "pair": VALUE,
    "near": TIME, "keyed": KEYED, "plain": STATELESS, "twice": VALUE, "reads_r": VALUE,
    "reads_z": VALUE, "fans": COMPOSITE, "loose": CHAIN, "reads_c": VALUE,
    "one_of_r": STATELESS,
}  # fmt: skip


def _documents(rng: random.Random, count: int) -> list[Document]:
    docs = []
    for n in range(count):
        stream = rng.choice("ST")
        ts = rng.randrange(0, 12 * SECOND, SECOND // 2)
        xml = f"<item><a>v{rng.randrange(2)}</a><b>w{rng.randrange(2)}</b></item>"
        docs.append(Document(stream, f"{stream}{n}", ts, xml))
    return docs


def test_publishers_and_readers_are_placed_by_their_templates(
    tmp_path: Path,
) -> None:
    log = SubscriptionLog(tmp_path / "registry")
    log.subscribe(QUERIES, source="q.xscl")
    log.record_applied(1, 0)
    subs = LiveQueries().at(str(tmp_path / "registry"), 1).subscriptions
    assert subs.placement == PLACED


@examples(30, suppress=[HealthCheck.function_scoped_fixture])
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
    assert {r["query"] for r in got} >= {
        "pair", "near", "keyed", "plain", "reads_r", "reads_z", "reads_c", "one_of_r"
    }  # fmt: skip


def test_a_replayed_commit_publishes_nothing_twice(tmp_path: Path) -> None:
    """The published spool keeps the first (stream, result id): a batch replayed after
    a crash between its appends and its marker appends nothing new."""
    path = str(tmp_path / "published")
    docs = [Document("R", f"r{n}", n * SECOND, f"<result n='{n}'/>") for n in range(3)]
    append_published(path, docs[:2])
    append_published(path, list(reversed(docs)))  # the replay, and one new result
    assert committed_end(path) == 3
    assert [(o, d.docid) for o, d in read_records(path, 0, 3)] == [(0, "r0"), (1, "r1"), (2, "r2")]


def test_the_source_reads_every_published_record_with_the_input(tmp_path: Path) -> None:
    """Offsets ``{"offset", "published"}``: the input's end is limited, the published
    spool's is not; its ranges take the version the input's first offset sets; an
    offset from a job started before (no ``published``) reads as 0."""
    with Spool(tmp_path / "spool", sync=False) as spool:
        spool.append(_documents(random.Random(1), 10))
    published = str(tmp_path / "published")
    append_published(published, [Document("R", f"r{n}", n, "<result/>") for n in range(4)])
    log = SubscriptionLog(tmp_path / "registry")
    log.subscribe(QUERIES, source="q.xscl")
    options = SpoolOptions.parse(
        {"path": str(tmp_path / "spool"), "maxRecordsPerBatch": "6", "registry": str(log.folder)}
    )
    route = RouteTask(str(log.folder), (0,), 1, None, str(tmp_path / "out"), "jsonl", 2)
    reader = RoutedStreamReader(options, route, published)
    start = reader.initialOffset()
    assert start == {"offset": 0, "published": 0}
    end = reader.latestOffset(start, reader.getDefaultReadLimit())
    assert end == {"offset": 6, "published": 4}
    ranges = reader.partitions(start, end)
    assert [r.published for r in ranges] == [False, True]
    assert {r.version for r in ranges} == {1}
    assert {(r.newest_before, r.earliest) for r in ranges} == {(None, 0)}  # nothing before
    assert reader.latestOffset({"offset": 6}, reader.getDefaultReadLimit()) == {
        "offset": 10, "published": 4,
    }  # fmt: skip
    late = reader.partitions({"offset": 10, "published": 2}, {"offset": 10, "published": 4})
    newest = max(d.ts_micros for d in _documents(random.Random(1), 10))
    got = [(r.published, r.start, r.end, r.version, r.newest_before, r.earliest) for r in late]
    assert got == [(True, 2, 4, 1, newest, 0)]
