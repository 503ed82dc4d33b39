"""A standby's warm subscriptions serve the epoch it takes over (``live_queries.LiveQueries``).

The warm-up builds the subscriptions with its own applied folder (offsets in its
scratch spool); the new primary's tasks ask for the same registry version with the
epoch's folder and must get that set, rebased: every query's subscription offset
taken from the epoch's records, not the warm-up's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from xscl.connectors.document import Document
from xscl.connectors.spool import Spool
from xscl.service import live_queries as queries
from xscl.service.subscriptions import SubscriptionLog
from xscl.spark_plugin.worker_daemon import first_documents

REPO = Path(__file__).resolve().parents[2]


def test_a_warm_set_is_adopted_and_rebased_to_the_epochs_offsets(tmp_path: Path) -> None:
    registry = tmp_path / "registry"
    text = (REPO / "examples" / "rss" / "queries.xscl").read_text(encoding="utf-8")
    SubscriptionLog(registry).subscribe(text, source="queries.xscl")
    SubscriptionLog(registry).subscribe(
        "late: S/item[./a->x] JOIN {x = y, 1d} T/item[./b->y];", source="late.xscl"
    )
    warm, epoch = tmp_path / "warm-applied", tmp_path / "e2-applied"
    for folder, offsets in ((warm, (0, 0)), (epoch, (0, 7))):
        log = SubscriptionLog(registry, folder)
        for version, offset in enumerate(offsets, start=1):
            log.record_applied(version, offset)
    live = queries.LiveQueries()
    built = live.at(str(registry), 2, str(warm))
    adopted = live.at(str(registry), 2, str(epoch))
    assert adopted is built
    assert live.at(str(registry), 2, str(epoch)) is built  # kept under the epoch's folder
    since = built.subscriptions.since
    assert since["late"] == 7 * queries.SEQ_STRIDE
    assert {since[q] for q in since if q != "late"} == {0}
    # only event 2 moved, so only its query was rewritten; the set now knows the offsets
    assert built.offsets == {1: 0, 2: 7}


def test_a_prebuilt_set_is_adopted_with_its_routing(tmp_path: Path) -> None:
    """The daemon's build (``prebuild``) computes the routing table before workers fork."""
    registry = tmp_path / "registry"
    text = (REPO / "examples" / "rss" / "queries.xscl").read_text(encoding="utf-8")
    SubscriptionLog(registry).subscribe(text, source="queries.xscl")
    SubscriptionLog(registry, tmp_path / "applied").record_applied(1, 0)
    live = queries.LiveQueries()
    built = live.prebuild(str(registry))
    assert built is not None and built._routing is not None
    # its time and hop classes too: a forked worker reads them, never rebuilds them
    assert {"time_classes", "hop_classes"} <= set(vars(built._routing))
    assert live.at(str(registry), 1, str(tmp_path / "applied")) is built
    assert built.routing() is built._routing


def test_the_daemon_settles_what_the_build_and_its_warm_up_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``worker_daemon.prebuild`` freezes the heap (``worker_heap.settled``) after the
    routing table and the warm-up, which come after the build's own settling: a
    collection in a forked worker then walks none of them (it copied the pages they
    lie on: 71 MiB at 100,000 subscriptions, docs/benchmarks.md)."""
    from xscl.spark_plugin import worker_context, worker_daemon

    registry, spool = tmp_path / "registry", tmp_path / "spool"
    text = (REPO / "examples" / "rss" / "queries.xscl").read_text(encoding="utf-8")
    SubscriptionLog(registry).subscribe(text, source="queries.xscl")
    with Spool(spool) as s:
        s.append(
            [Document("S", "d0", 0, "<rss><channel><item><title>x</title></item></channel></rss>")]
        )
    monkeypatch.setattr(worker_context, "_context", None)  # a fresh worker's context
    order: list[str] = []
    real_warm = queries.JobQueries.warm
    monkeypatch.setattr(
        queries.JobQueries,
        "warm",
        lambda self, docs: (order.append("warm"), real_warm(self, docs))[1],
    )
    monkeypatch.setattr("xscl.service.worker_heap.settled", lambda **_: order.append("settled"))
    monkeypatch.setattr("xscl.service.live_queries.settled", lambda **_: order.append("settled"))
    try:
        worker_daemon.prebuild(str(registry), str(spool))
        built = worker_context.worker().queries._built[(str(registry), queries.PREBUILT)]
    finally:
        monkeypatch.setattr(worker_context, "_context", None)
    assert order == ["settled", "warm", "settled"]
    assert built._routing is not None


def test_a_build_warmed_on_the_spool_finds_what_a_cold_one_finds(tmp_path: Path) -> None:
    """``JobQueries.warm`` (the daemon, on the spool's first documents) only builds what
    Stage 1 caches: later documents give the rows a cold build gives, and nothing is
    counted for the warm-up."""
    registry, spool = tmp_path / "registry", tmp_path / "spool"
    SubscriptionLog(registry).subscribe(
        "".join(
            f"k{n}: S//item->x[contains(title, 'w{n % 7}')][./cat = 'c{n % 3}'];\n"
            for n in range(40)
        ),
        source="k.xscl",
    )
    docs = [
        Document(
            "S",
            f"d{i}",
            i,
            f"<feed><item><title>w{i % 9} news</title><cat>c{i % 4}</cat></item></feed>"
            if i % 5
            else "<feed><item><title>broken",
        )
        for i in range(30)
    ]
    with Spool(spool) as s:
        s.append(docs)
    assert first_documents(str(tmp_path / "absent"), 5) == []
    warm = queries.LiveQueries().prebuild(str(registry))
    cold = queries.LiveQueries().prebuild(str(registry))
    assert warm is not None and cold is not None
    warm.warm(first_documents(str(spool), 10))
    assert not warm.subscriptions.stage1.counters

    def rows(built: queries.JobQueries, doc: Document) -> object:
        try:
            return built.subscriptions.stage1.evaluate_rows(
                doc.stream, doc.docid, doc.ts_micros, doc.xml
            )
        except Exception as exc:
            return type(exc).__name__

    assert [rows(warm, d) for d in docs] == [rows(cold, d) for d in docs]
    assert any(isinstance(rows(cold, d), str) for d in docs)  # the broken ones
