"""The scans a job owes (``service.history_runs``): the first scan as soon as the event
took effect, the closing scan once the spool's clock passed the history's window, each
result committed once under ``results/NAME/history/<event>``; with the live part, the
reference over each query's history and the new documents."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.history.kit import HOUR, QUERIES, documents, live, spooled
from tests.workloads import reference_records
from xscl.connectors.spool import Spool
from xscl.results.read import read_results
from xscl.service.history import HistorySpan, history_span
from xscl.service.history_runs import HistoryRuns, InProcessScanner, groups
from xscl.service.subscriptions import SubscriptionLog

DAY = 24 * HOUR


def _lines(records: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True) for r in records)


def test_the_first_scan_then_the_closing_one(tmp_path: Path) -> None:
    docs = documents(48)
    reader = spooled(tmp_path / "spool", docs[:40])
    log = SubscriptionLog(tmp_path / "registry")
    event = log.subscribe(QUERIES, source="q.xscl")
    assert [(g.ids, g.history, g.window) for g in groups(event)] == [
        (("coverage",), 3 * DAY, 3 * DAY),
        (("alone",), 7 * DAY, None),  # one block: the default history, never closes
    ]
    log.record_applied(event.version, 30)  # the job applied it at offset 30
    runs = HistoryRuns(
        log,
        str(reader.path),
        tmp_path / "history",
        InProcessScanner(str(reader.path), allowed_lateness=0),
        allowed_lateness=0,
    )
    first = runs.step()
    assert first > 0 and runs.step() == 0  # nothing more until the window closes
    with Spool(reader.path, sync=False) as spool:
        spool.append(docs[40:])  # the clock reaches day 11.75 > day 7.25 + 3 days
    mixed = runs.step()
    assert mixed > 0 and runs.step() == 0
    committed = list(read_results(tmp_path / "history" / "1"))
    assert len(committed) == first + mixed == len({r["result_id"] for r in committed})
    for qid, days in (("coverage", 3), ("alone", 7)):
        text = next(line for line in QUERIES.splitlines() if line.startswith(qid))
        span: HistorySpan = history_span(reader, 30, days * DAY)
        spooled_docs = [doc for _offset, doc in reader.iter_range(span.start, 48)]
        made_live = [r.to_json_dict() for r in live(text, reader, 30, 48)]
        mine = [r for r in committed if r["query"] == qid]
        assert _lines(mine + made_live) == _lines(reference_records(text, spooled_docs))


def test_a_failing_scan_is_one_line_and_nothing_committed(tmp_path: Path) -> None:
    reader = spooled(tmp_path / "spool", documents(40))
    log = SubscriptionLog(tmp_path / "registry")
    log.record_applied(log.subscribe(QUERIES, source="q.xscl").version, 30)

    def broken(event: Any, ids: Any, span: HistorySpan, end: int) -> list[dict[str, Any]]:
        raise OSError("disk gone")

    said: list[str] = []
    runs = HistoryRuns(log, str(reader.path), tmp_path / "history", broken, report=said.append)
    assert runs.step() == 0
    assert said == ["history of registry event 1: disk gone"]
    assert not list(read_results(tmp_path / "history" / "1"))


def test_a_client_s_subscription_gets_its_history_under_its_own_ids(tmp_path: Path) -> None:
    """An API client's queries are ``<client>~<id>`` in the registry and the job
    (``service.namespaces``): their history is scanned and committed under those ids."""
    reader = spooled(tmp_path / "spool", documents(40))
    log = SubscriptionLog(tmp_path / "registry")
    event = log.subscribe(QUERIES, source="api:alice", owner="alice", namespace="alice")
    log.record_applied(event.version, 30)
    runs = HistoryRuns(
        log,
        str(reader.path),
        tmp_path / "history",
        InProcessScanner(str(reader.path), allowed_lateness=0),
        allowed_lateness=0,
    )
    assert runs.step() > 0
    committed = list(read_results(tmp_path / "history" / "1"))
    assert {r["query"] for r in committed} == {"alice~coverage", "alice~alone"}
