"""Hot values: one string value shared by a third of all items, spread over salted groups.

The job's join groups report a value as hot once a group stores more than the
threshold under it; from the next micro-batch on its new documents are stored under
one of several salts and probe all of them (``engine.routing``). The result set must
not change: it is compared with the reference evaluator's, record for record, and the
hot value must really have been spread (recorded in the hot set, stored under several
groups' state).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.spark.jobkit import committed_by_id, reference_by_id, run_once
from xscl.connectors.document import Document
from xscl.connectors.spool import Spool
from xscl.engine.groups.codec import digest
from xscl.reference import load_queries
from xscl.service.subscriptions import SubscriptionLog
from xscl.spark_plugin.batch import registry_text
from xscl.spark_plugin.job.hot_values import read as hot_values

pytestmark = pytest.mark.spark

QUERIES = """\
same_category: S//item->x[./category->c][./author->a]
    JOIN {c = d, 30s} S//item->y[./category->d];
same_author_then_news: S//item->x[./author->a]
    FOLLOWED BY {a = b, INF} S//item->y[./author->b][./category = 'News'];
"""
#: 2006-06-01T10:00:00Z in microseconds.
BASE = 1_149_156_000_000_000


def _items(count: int) -> list[Document]:
    """Every third item is in category "News" (the hot value); others spread over 7."""
    out = []
    for i in range(count):
        category = "News" if i % 3 == 0 else f"c{i % 7}"
        xml = (
            f"<item><title>t{i}</title><author>a{i % 5}</author>"
            f"<category>{category}</category></item>"
        )
        # out of order within a few seconds: arrival order is not time order
        out.append(Document("S", f"d{i}", BASE + (i + (i % 4) * 2) * 1_000_000, xml))
    return out


def test_a_value_shared_by_a_third_of_the_items_is_spread_and_results_are_exact(
    spark: Any, tmp_path: Path
) -> None:
    items = _items(60)
    expected = reference_by_id(tmp_path, QUERIES, items)
    assert len(expected) > 100  # the hot value joins many pairs

    registry = tmp_path / "registry"
    SubscriptionLog(registry).subscribe(
        registry_text(load_queries(QUERIES)), source="hot.xscl"
    )
    with Spool(tmp_path / "spool", sync=False) as spool:
        spool.append(items)
    query = run_once(
        spark,
        tmp_path,
        tmp_path / "spool",
        registry,
        hot_folder=str(tmp_path / "hot"),
        salts=4,
        hot_threshold=3,
        max_records_per_batch=10,
    )
    got = committed_by_id(tmp_path / "out")
    assert got == expected
    assert digest("News") in hot_values(str(tmp_path / "hot"))  # groups see value digests
    rows_per_batch = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    assert len(rows_per_batch) == 6  # 60 items, 10 per micro-batch
