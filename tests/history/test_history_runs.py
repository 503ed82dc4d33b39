"""The scans a job owes (``service.history_runs``): the first scan as soon as the event
took effect, follow-up scans while the spool grows, the last once the spool's clock
passed the history's window (never, for an INF window or a job without allowed
lateness), each result committed once under ``results/NAME/history/<event>``; with the
live part, the reference over each query's history and the new documents."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

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
    assert [(g.ids, g.history, g.reach) for g in groups(event)] == [
        (("coverage",), 3 * DAY, 3 * DAY),
        (("alone",), 7 * DAY, 0),  # one block: the default history, final at once
    ]
    log.record_applied(event.version, 30)  # the job applied it at offset 30
    runs = HistoryRuns(
        log,
        str(reader.path),
        tmp_path / "history",
        InProcessScanner(str(reader.path), allowed_lateness=0),
        allowed_lateness=0,
        follow_seconds=3_600.0,  # no follow-up scan in this test: the closing one only
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

    def broken(event: Any, ids: Any, span: HistorySpan, end: int, *, last: bool, into: Path) -> int:
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


@pytest.mark.parametrize(
    ("window", "lateness"),
    [("INF", 0), ("3d", None)],  # never final: an INF window, or no allowed lateness
)
def test_a_group_that_never_closes_is_followed(
    tmp_path: Path, window: str, lateness: int | None
) -> None:
    """The joins of history documents with documents that arrive after the subscription
    come from the follow-up scans, each once, and the history's results with the live
    job's are the reference's over the history and every later document."""
    text = f"forever: adv/item[./cve->c] FOLLOWED BY {{c = t, {window}}} news/entry[./term->t];"
    docs = documents(60)
    reader = spooled(tmp_path / "spool", docs[:30])
    log = SubscriptionLog(tmp_path / "registry")
    event = log.subscribe(text, source="q.xscl", history=20 * DAY)
    log.record_applied(event.version, 30)
    ticks = iter(range(0, 10**6, 60))
    runs = HistoryRuns(
        log,
        str(reader.path),
        tmp_path / "history",
        InProcessScanner(str(reader.path), allowed_lateness=lateness),
        allowed_lateness=lateness,
        follow_seconds=30.0,
        clock=lambda: float(next(ticks)),  # a minute passes between two looks
    )
    first = runs.step()
    made = [first]
    for upto in (40, 50, 60):
        with Spool(reader.path, sync=False) as spool:
            spool.append(docs[reader.next_offset() : upto])
        made.append(runs.step())
        assert runs.step() == 0  # nothing new in the spool
    assert first > 0 and made[1] > 0, made  # joins across the subscription, followed
    assert 1 not in runs.finished
    committed = list(read_results(tmp_path / "history" / "1"))
    assert len(committed) == sum(made) == len({r["result_id"] for r in committed})
    span = history_span(reader, 30, 20 * DAY)
    assert span.start == 0
    made_live = [r.to_json_dict() for r in live(text, reader, 30, 60)]
    reference = reference_records(text, [doc for _offset, doc in reader.iter_range(0, 60)])
    assert _lines(committed + made_live) == _lines(reference)


def test_follow_up_scans_wait_for_the_interval(tmp_path: Path) -> None:
    text = "forever: adv/item[./cve->c] FOLLOWED BY {c = t, INF} news/entry[./term->t];"
    docs = documents(40)
    reader = spooled(tmp_path / "spool", docs[:30])
    log = SubscriptionLog(tmp_path / "registry")
    log.record_applied(log.subscribe(text, source="q.xscl").version, 30)
    now = [0.0]
    runs = HistoryRuns(
        log,
        str(reader.path),
        tmp_path / "history",
        InProcessScanner(str(reader.path), allowed_lateness=0),
        allowed_lateness=0,
        follow_seconds=30.0,
        clock=lambda: now[0],
    )
    assert runs.step() > 0
    with Spool(reader.path, sync=False) as spool:
        spool.append(docs[30:])
    now[0] = 10.0
    assert runs.step() == 0  # 10 s after the first scan: not yet
    now[0] = 31.0
    assert runs.step() > 0
    scans = json.loads((tmp_path / "history" / "1" / "_scans.json").read_text())
    assert scans == {str(7 * DAY): {"first": True, "closed": False, "to": 40}}


def test_an_event_subscribed_with_no_history_is_owed_nothing_and_not_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--history 0``: the event is finished at the first step, with no scan and no
    query parsed (the driver parsed a whole 100,000-query event for nothing before);
    an event with a history is grouped once, however many steps follow."""
    reader = spooled(tmp_path / "spool", documents(40))
    log = SubscriptionLog(tmp_path / "registry")
    none = log.subscribe(QUERIES, source="q.xscl", history=0)
    log.record_applied(none.version, 30)
    parsed: list[int] = []
    real = groups

    def counted(event: Any) -> Any:
        parsed.append(event.version)
        return real(event)

    monkeypatch.setattr("xscl.service.history_runs.groups", counted)
    scans: list[str] = []

    def scanner(
        event: Any, ids: Any, span: HistorySpan, end: int, *, last: bool, into: Path
    ) -> int:
        scans.append(f"{event.version}:{span.start}-{end}")
        return 0

    runs = HistoryRuns(log, str(reader.path), tmp_path / "history", scanner)
    assert runs.step() == 0
    assert (runs.finished, parsed, scans) == ({none.version}, [], [])
    assert not (tmp_path / "history").exists()
    day = log.subscribe(QUERIES.replace("coverage", "cov2").replace("alone", "alone2"),
                        source="q2.xscl", history=DAY)  # fmt: skip
    log.record_applied(day.version, 35)
    runs.step()
    runs.step()
    assert parsed == [day.version] and scans  # scanned, grouped once
