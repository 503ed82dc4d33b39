"""A document that can only be the newest of its matches is dropped once the allowed
lateness has passed it (``engine.partner_reach``; Babu ch. 6, k-Mon), however wide
the window, and no result is lost: through the job's executor functions without Spark
(``test_spark_job_groups.run_job``) against ``xscl.reference``, and in a value group in
process, where the state is looked at.

``S FOLLOWED BY {x = y, 20s} T`` keeps a ``T`` document only while a later ``S``
document may still arrive before it (the lateness); an ``S`` document for the window.
The workloads mix in a JOIN (both sides kept for the window), a keyed chain of
FOLLOWED BY (its last block dropped early too) and a FOLLOWED BY within one stream
(a document that can fill the first block is kept for the window).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from tests.profiles import examples
from tests.spark.jobkit import reference_by_id
from tests.spark.test_spark_job_groups import run_job
from tests.spark.test_spark_job_time_joins import _Spool
from xscl.connectors.document import Document
from xscl.engine.groups.decoded import DecodedDocs
from xscl.engine.groups.routed import GroupContext, RoutedDoc
from xscl.engine.groups.value_group import ValueGroup
from xscl.engine.output import DocumentTrees
from xscl.engine.records import RecordBuilder
from xscl.engine.routing import Router, RouteShape
from xscl.service.live_queries import LiveQueries
from xscl.service.subscriptions import SubscriptionLog

SECOND = 1_000_000
QUERIES = """\
later: S//item[./a->x] FOLLOWED BY {x = y, 20s} T//item[./a->y];
both: S//item[./a->x] JOIN {x = y, 4s} U//item[./a->y];
chain: S//item[./a->x] FOLLOWED BY {x = y, 8s} U//item[./a->y]
       FOLLOWED BY {y = z, 8s} T//item[./a->z];
same: U//item[./a->x] FOLLOWED BY {x = y, 6s} U//item[./a->y];
"""
LATER = "later: S//item[./a->x] FOLLOWED BY {x = y, 20s} T//item[./a->y];"


def _documents(rng: random.Random, count: int) -> list[Document]:
    """Documents mostly in time order, some late by up to 3 s."""
    docs = []
    for n in range(count):
        stream = rng.choice("STU")
        ts = n * SECOND // 2 - rng.choice([0, 0, 0, SECOND, 3 * SECOND])
        docs.append(Document(stream, f"{stream}{n}", max(ts, 0), f"<item><a>v{n % 2}</a></item>"))
    return docs


@examples(35, suppress=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 2**32),
    count=st.integers(4, 40),
    cuts=st.lists(st.integers(1, 41), max_size=5),
    lateness=st.sampled_from([0, SECOND, 2 * SECOND, 4 * SECOND]),
)
def test_early_eviction_loses_no_result(
    tmp_path_factory: Any, seed: int, count: int, cuts: list[int], lateness: int
) -> None:
    docs = _documents(random.Random(seed), count)
    work = tmp_path_factory.mktemp("early")
    got, _dead = run_job(work, QUERIES, docs, cuts, lateness)
    assert got == reference_by_id(work, QUERIES, docs, lateness)


def test_the_newest_of_every_match_is_kept_for_the_lateness_only(tmp_path: Path) -> None:
    """One group, one value, documents one second apart, lateness 2 s: after 30
    documents a T document (only ever the newest of its matches) is kept for 2 s, an
    S document (the older side of a 20 s window) for 22 s."""
    log = SubscriptionLog(tmp_path / "registry")
    log.subscribe(LATER, source="q.xscl")
    log.record_applied(1, 0)
    queries = LiveQueries().at(str(tmp_path / "registry"), 1)
    subs = queries.subscriptions
    docs = [
        Document("ST"[n % 2], f"d{n}", n * SECOND, "<item><a>v</a></item>") for n in range(30)
    ]
    router = Router(
        RouteShape((0,), 1, 2 * SECOND), subs, queries.routing(), RecordBuilder(subs.record_plan)
    )
    rows = []
    for n, doc in enumerate(docs):
        out = router.route(n, doc.stream, doc.docid, doc.ts_micros, doc.xml, None)
        rows.extend(RoutedDoc(out.seq, out.newest, r.homes, r.probes, r.data) for r in out.rows)
    records = RecordBuilder(subs.record_plan, DocumentTrees())
    context = GroupContext(subs, _Spool(docs), records, 2 * SECOND, None, DecodedDocs(), None, 0)
    group = ValueGroup(None, context)
    got = {r.result_id for r in group.process(rows)}
    assert got == set(reference_by_id(tmp_path, LATER, docs, 2 * SECOND)) and got
    kept = {docs[d.seq >> 20].docid for d in group.stored.docs}
    newest = 29 * SECOND
    expected = {
        doc.docid
        for doc in docs
        if doc.ts_micros >= newest - 2 * SECOND - (20 * SECOND if doc.stream == "S" else 0)
    }
    assert kept == expected  # T: d27 and d29; S: from d8 on
