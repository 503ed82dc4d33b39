"""History on subscribe, in process (``xscl.service.history``): the history's results and
the live job's are disjoint, and together they are ``xscl.reference``'s results over the
history and the new documents, as if the query had been subscribed at the history's
start; a join of a history document with a live one is the history's, made once."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hypothesis import assume, given
from hypothesis import strategies as st

from tests.history.kit import HOUR, QUERIES, doc, documents, live, spooled
from tests.profiles import examples
from tests.workloads import Workload, reference_records, workloads
from xscl.connectors.document import Document
from xscl.connectors.spool import Spool, SpoolReader
from xscl.lang.parser import parse_queries
from xscl.results.cursor import query_window
from xscl.service.history import (
    DEFAULT_INF_HISTORY,
    HistorySpan,
    closes_at,
    default_history,
    history_span,
    scan,
)


def _canonical(records: Sequence[Mapping[str, Any]]) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True) for r in records)


def _check_contract(text: str, reader: SpoolReader, span: HistorySpan, end: int) -> int:
    """History ∪ live = the reference over the spool's ``[span.start, end)``; no result
    on both paths; the number of history results."""
    history = scan(parse_queries(text), reader, span, end)
    made_live = live(text, reader, span.since, end)
    both = {r.result_id for r in history} & {r.result_id for r in made_live}
    assert not both, f"made twice: {sorted(both)}"
    assert len({r.result_id for r in history}) == len(history)
    spooled = [doc for _offset, doc in reader.iter_range(span.start, end)]
    expected = reference_records(text, spooled)
    got = [r.to_json_dict() for r in [*history, *made_live]]
    assert _canonical(got) == _canonical(expected)
    return len(history)


def test_history_with_a_join_across_the_subscription(tmp_path: Path) -> None:
    # every 6 hours an advisory or a news entry about C0..C3: 40 documents, 10 days
    reader = spooled(tmp_path / "spool", documents())
    since = 30
    coverage = parse_queries(QUERIES)[0]
    assert default_history(query_window(coverage)) == 3 * 24 * HOUR
    span = history_span(reader, since, 3 * 24 * HOUR)
    assert (span.start, span.since) == (17, 30)  # day 7.25 - 3 days: offset 17 (day 4.25)
    history = scan(parse_queries(QUERIES), reader, span, 40)
    offsets = {doc.docid: o for o, doc in reader.iter_range(0, 40)}
    mixed = [r for r in history if max(offsets[d] for _s, d, _t in r.docs) >= since]
    assert mixed, "the workload has joins of a history advisory with live news"
    assert _check_contract(QUERIES, reader, span, 40) == len(history)
    # the first scan (up to `since`) is a subset: a later one adds only the mixed results
    first = {r.result_id for r in scan(parse_queries(QUERIES), reader, span, since)}
    assert first == {r.result_id for r in history} - {r.result_id for r in mixed}


def test_the_span_follows_the_spools_clock_and_its_retention(tmp_path: Path) -> None:
    docs = [doc("adv", i, "C0") for i in range(20)]
    docs.insert(10, Document("news", "late", 0, "<entry><term>C0</term></entry>"))
    reader = spooled(tmp_path / "spool", docs)
    # offset 14 holds day 13*6h: four steps back is offset 9; the late document at offset
    # 10 (ts 0) is inside the span, as it arrived within it, and does not move the clock
    assert history_span(reader, 15, 4 * 6 * HOUR) == HistorySpan(9, 15, 13 * 6 * HOUR)
    assert history_span(reader, 15, 0).empty and history_span(reader, 0, HOUR).empty
    assert history_span(reader, 15, DEFAULT_INF_HISTORY).start == 0
    with Spool(tmp_path / "spool", sync=False, segment_bytes=200) as spool:
        spool.append([doc("adv", i, "C0") for i in range(20, 60)])
        spool.compact(20 * 6 * HOUR)
        first = spool.first_offset()
    assert first > 0
    assert history_span(SpoolReader(tmp_path / "spool"), 55, DEFAULT_INF_HISTORY).start == first


def test_when_the_history_is_final() -> None:
    span = HistorySpan(3, 9, 1_000)
    assert closes_at(span, 0, None) == 1_000  # one block: no join across the subscription
    assert closes_at(span, 50, 7) == 1_057
    assert closes_at(span, 50, None) is None and closes_at(span, None, 7) is None
    assert closes_at(HistorySpan(9, 9, None), 50, 7) is None


@given(workloads(documents=(2, 14)), st.data())
@examples(60)
def test_history_and_live_are_the_reference_from_the_start(
    tmp_path_factory: Any, workload: Workload, data: st.DataObject
) -> None:
    assume("PUBLISH" not in workload.text)
    folder = tmp_path_factory.mktemp("spool")
    reader = spooled(folder, workload.docs)
    end = reader.next_offset()
    since = data.draw(st.integers(0, end), label="since")
    duration = data.draw(st.sampled_from([0, 1_000_000, 2_500_000, 10**12]), label="history")
    span = history_span(reader, since, duration)
    _check_contract(workload.text, reader, span, end)
