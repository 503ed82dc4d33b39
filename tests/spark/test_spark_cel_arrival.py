"""CEL on Spark: results do not change under arrival permutations within the reorder slack.

docs/cel.md 6 and 10.4: the streaming CEL query (``cel.plan``, what ``xscl serve
--cel-queries`` runs) orders events by end time within ``--cel-reorder-slack``.
The same generated events arrive in two orders, each sorted by end plus its own
jitter below the slack, published (``xscl cel publish``) as files cut at other
points, one micro-batch per file. Both runs commit the reference's results over
the events they release, and dead-letter nothing as late.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.spark.cel_events import (
    GENERATED,
    arrival_order,
    dead_letters,
    generated_events,
    publish,
    released,
    split,
)
from tests.workloads import run_seed
from xscl.events.envelope import Event
from xscl.events.results import Result
from xscl.results.read import read_results
from xscl.service.cel_subscriptions import CelSubscriptionLog
from xscl.spark_plugin.cel.batch import result_of
from xscl.spark_plugin.cel.plan import CelPlan, start_cel_job

pytestmark = pytest.mark.spark

#: Seed of the events and both arrivals: another each run; XSCL_CEL_SEED=N repeats run N.
SEED = run_seed("XSCL_CEL_SEED")
SLACK = 3_000_000


def _stream(spark: object, work: Path, files: Sequence[Sequence[Event]]) -> set[Result]:
    """Run the CEL streaming query over ``files`` published one per micro-batch."""
    work.mkdir()
    registry = CelSubscriptionLog(work / "registry", {})
    registry.subscribe(GENERATED, source="generated.cel")
    plan = CelPlan(
        cel_registry=str(registry.folder),
        catalog=registry.catalog_json,
        output=str(work / "results"),
        checkpoint=str(work / "checkpoint"),
        name=f"xscl_cel_arrival_{uuid.uuid4().hex}",
        events=str(work / "events"),
        slack=SLACK,
        trigger_seconds=0.1,
    )
    query = start_cel_job(spark, plan)
    try:
        for events in files:
            publish(work / "events", events)
            query.processAllAvailable()
    finally:
        query.stop()
    assert query.exception() is None, query.exception()
    assert dead_letters(work / "results") == []
    records = list(read_results(work / "results", key="id"))
    got = {result_of(r) for r in records}
    assert len(got) == len(records)
    return got


def test_arrival_permutations_within_the_slack_give_the_reference(
    spark: object, tmp_path: Path
) -> None:
    print(f"XSCL_CEL_SEED={SEED}")
    rng = random.Random(SEED)
    events = generated_events(SEED)
    first = arrival_order(events, SLACK, rng)
    second = arrival_order(events, SLACK, rng)
    expected = released(GENERATED, events, SLACK)
    assert expected, f"XSCL_CEL_SEED={SEED}: the workload finds nothing"
    assert first != second, f"XSCL_CEL_SEED={SEED}: one arrival order twice"
    got_first = _stream(spark, tmp_path / "first", split(first, 2, rng))
    got_second = _stream(spark, tmp_path / "second", split(second, 3, rng))
    assert got_first == expected, f"XSCL_CEL_SEED={SEED}"
    assert got_second == expected, f"XSCL_CEL_SEED={SEED}"
