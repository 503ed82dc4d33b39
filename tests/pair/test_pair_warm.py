"""A standby's warm subscriptions serve the epoch it takes over (``live_queries.LiveQueries``).

The warm-up builds the subscriptions with its own applied folder (offsets in its
scratch spool); the new primary's tasks ask for the same registry version with the
epoch's folder and must get that set, rebased: every query's subscription offset
taken from the epoch's records, not the warm-up's.
"""

from __future__ import annotations

from pathlib import Path

from xscl.service import live_queries as queries
from xscl.service.subscriptions import SubscriptionLog

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
    assert live.at(str(registry), 1, str(tmp_path / "applied")) is built
    assert built.routing() is built._routing
