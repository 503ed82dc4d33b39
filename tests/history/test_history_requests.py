"""``--history`` as the command line and the API record it: on the subscribe event, in
microseconds (absent: the default); a bad duration is refused and changes nothing. The
API's cursors and invoke read a subscription's history with its live results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.history.kit import QUERIES, documents, live, spooled
from xscl.cli.main import main
from xscl.results.cursor import Cursor, in_window
from xscl.results.read import read_results
from xscl.service.api.app import create_app
from xscl.service.api.tokens import TokenStore
from xscl.service.history_runs import HistoryRuns, InProcessScanner, commit
from xscl.service.subscriptions import SubscriptionLog

JOIN = "S//a->x FOLLOWED BY {x=y, 1h} S//b->y"
DAY = 86_400 * 1_000_000


def test_subscribe_records_the_history(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "q.xscl").write_text(f"A: {JOIN};\nB: {JOIN};\n")
    (tmp_path / "r.xscl").write_text(f"C: {JOIN};\n")
    home = ["--home", str(tmp_path / "home")]
    assert main(["subscribe", str(tmp_path / "q.xscl"), "--history", "7d", *home]) == 0
    assert main(["subscribe", str(tmp_path / "r.xscl"), *home]) == 0
    with pytest.raises(SystemExit):
        main(["subscribe", str(tmp_path / "r.xscl"), "--history", "soon", *home])
    assert "not a duration" in capsys.readouterr().err
    log = SubscriptionLog(tmp_path / "home" / "registry" / "xscl")
    assert [e.history for e in log.events()] == [7 * DAY, None]
    capsys.readouterr()
    assert main(["subscriptions", "--json", *home]) == 0
    listed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [row.get("history_micros") for row in listed] == [7 * DAY, None]


def test_the_api_takes_history_as_a_query_parameter(tmp_path: Path) -> None:
    token = TokenStore(tmp_path).create("alice")
    client = TestClient(create_app(tmp_path, "xscl"))
    auth = {"Authorization": f"Bearer {token}"}
    made = client.post("/subscriptions?history=36h", content=f"A: {JOIN};", headers=auth)
    assert made.status_code == 201, made.text
    refused = client.post("/subscriptions?history=soon", content=f"B: {JOIN};", headers=auth)
    assert refused.status_code == 400 and refused.json()["code"] == "XSCL-A006"
    log = SubscriptionLog(tmp_path / "registry" / "xscl")
    assert [(e.ids, e.history) for e in log.events()] == [(("alice~A",), 36 * 3_600 * 1_000_000)]


def test_an_event_written_before_histories_asks_for_none(tmp_path: Path) -> None:
    log = SubscriptionLog(tmp_path)
    log.subscribe(f"A: {JOIN};", source="a.xscl")  # the default: recorded as such
    assert json.loads((tmp_path / "00000001.json").read_text())["history"] == "window"
    old = {"version": 2, "op": "subscribe", "ids": ["B"], "text": f"B: {JOIN};", "source": ""}
    (tmp_path / "00000002.json").write_text(json.dumps(old))
    assert [e.history for e in SubscriptionLog(tmp_path).events()] == [None, 0]


def test_the_api_reads_a_subscription_s_history_with_its_live_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One cursor pages the history's results and the job's, each once, however the two
    folders' commits interleave; invoke gives both; a plain cursor from before still
    works as the live position."""
    token = TokenStore(tmp_path).create("alice")
    client = TestClient(create_app(tmp_path, "xscl"))
    auth = {"Authorization": f"Bearer {token}"}
    coverage = next(line for line in QUERIES.splitlines() if line.startswith("coverage:"))
    made = client.post("/subscriptions?history=7d", content=coverage, headers=auth)
    assert made.status_code == 201, made.text
    log = SubscriptionLog(tmp_path / "registry" / "xscl")
    reader = spooled(tmp_path / "spool", documents(48))
    log.record_applied(1, 30)
    root = tmp_path / "results" / "xscl"
    runs = HistoryRuns(
        log,
        str(reader.path),
        root / "history",
        InProcessScanner(str(reader.path), allowed_lateness=0),
        allowed_lateness=0,
    )
    made_live = [  # the job's records of alice's query (its registry id)
        {**r.to_json_dict(), "query": "alice~coverage"} for r in live(coverage, reader, 30, 48)
    ]
    pages: list[dict[str, Any]] = []
    cursor = None

    def read_all() -> None:
        nonlocal cursor
        while True:
            query = "limit=3" + (f"&after={cursor}" if cursor else "")
            got = client.get(f"/subscriptions/coverage/results?{query}", headers=auth).json()
            cursor = got["cursor"]
            pages.extend(got["results"])
            if not got["results"]:
                return

    commit(root, made_live[:4])  # the job commits some, then the history's first scan
    read_all()
    assert runs.step() > 0
    commit(root, made_live[4:])
    read_all()
    history = list(read_results(root / "history" / "1"))
    assert history and made_live
    assert sorted(r["result_id"] for r in pages) == sorted(
        r["result_id"] for r in history + made_live
    )
    assert len(pages) == len({r["result_id"] for r in pages})
    plain = Cursor("alice~coverage", 0, "00000000000000000000", 1, 0).encode()
    after_first = client.get(f"/subscriptions/coverage/results?after={plain}", headers=auth)
    assert after_first.status_code == 200, after_first.text
    rest = [r["result_id"] for r in after_first.json()["results"]]
    unread = history + made_live[4:]  # all the history, and the job's after its batch 0
    assert rest == [r["result_id"] for r in unread]
    now = 12 * DAY  # the newest document's day: the window's 3 days before it
    monkeypatch.setattr("time.time", lambda: now / 1e6)
    invoked = client.get("/subscriptions/coverage/invoke", headers=auth).json()["results"]
    expected = [r for r in history + made_live if in_window(r, now, 3 * DAY)]
    assert expected and len(expected) < len(pages)
    assert [r["result_id"] for r in invoked] == [r["result_id"] for r in expected]
