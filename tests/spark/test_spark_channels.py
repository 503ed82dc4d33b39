"""Channels through the streaming job: many queries sharing each match.

Every query below is subscribed under 12 ids (two-block value joins for the join
groups, a single-block query for the stateless tasks, ``SELECT *`` and ``SELECT x``),
so each match is one channel line of 12 members. The job runs once with channels and
once without (``JobPlan.channels``, ``--no-channels``); both result sets must equal
``xscl.reference``'s record for record, every query's cursor pages must read its
records in commit order, and each query's Atom feed must hold the same entries.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.results.test_results_channels import paged
from tests.spark.jobkit import committed_by_id, reference_by_id, run_once
from xscl.connectors.document import Document
from xscl.connectors.spool import Spool
from xscl.results.channels import CHANNEL_START
from xscl.results.read import committed_markers, read_results, result_ids
from xscl.service.subscriptions import SubscriptionLog

pytestmark = pytest.mark.spark
COPIES = 12
SHAPES = (
    "S//item->i[./a->x] JOIN {{x = y, INF}} S//item->j[./a->y]",
    "SELECT x FROM S//item->i[./a->x][./b->u] FOLLOWED BY {{x = y AND u = v, INF}} "
    "S//item->j[./a->y][./b->v]",
    "S//item->i[./b->x]",
)


def _queries() -> str:
    return "".join(
        f"q{shape}n{n}: {text.format()};\n"
        for n in range(COPIES)
        for shape, text in enumerate(SHAPES)
    )


def _docs() -> list[Document]:
    return [
        Document(
            "S",
            f"d{n}",
            1_000_000 * (n + 1),
            f"<item><a>v{n % 3}</a><b>w{n % 2}</b><c>{'text ' * 60}{n}</c></item>",
        )
        for n in range(18)
    ]


def _run(spark: Any, tmp_path: Path, name: str, channels: bool) -> Path:
    home = tmp_path / name
    SubscriptionLog(home / "registry" / "xscl").subscribe(_queries(), source="copies.xscl")
    with Spool(home / "spool", sync=False) as spool:
        spool.append(_docs())
    run_once(
        spark,
        home / "results",
        home / "spool",
        home / "registry" / "xscl",
        max_records_per_batch=5,
        channels=channels,
    )
    return home / "results" / "out"


def _feed_ids(out: Path) -> dict[str, list[str]]:
    return {
        feed.name: sorted(re.findall(r"<id>(urn:[^<]*)</id>", feed.read_text(encoding="utf-8")))
        for feed in sorted((out / "feeds").glob("*.atom"))
    }


def test_channels_on_spark_read_as_the_reference(spark: Any, tmp_path: Path) -> None:
    expected = reference_by_id(tmp_path, _queries(), _docs())
    assert len(expected) > 3 * COPIES
    channelled = _run(spark, tmp_path, "channels", True)
    plain = _run(spark, tmp_path, "plain", False)
    assert committed_by_id(channelled) == expected
    assert committed_by_id(plain) == expected
    assert result_ids(channelled) == set(expected)
    assert sum(m["rows"] for m in committed_markers(channelled)) == len(expected)
    files = [channelled / p["file"] for m in committed_markers(channelled) for p in m["parts"]]
    lines = [line for f in files for line in f.read_bytes().splitlines()]
    assert sum(line.startswith(CHANNEL_START) for line in lines) * COPIES == len(expected)
    in_order = list(read_results(channelled))
    for qid in sorted({r["query"] for r in in_order}):
        assert paged(channelled, qid, 2) == [r for r in in_order if r["query"] == qid]
    feeds = _feed_ids(channelled)
    assert len(feeds) == 3 * COPIES and feeds == _feed_ids(plain)
