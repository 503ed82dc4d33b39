"""``--history`` as the command line and the API record it: on the subscribe event, in
microseconds (absent: the default); a bad duration is refused and changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from xscl.cli.main import main
from xscl.service.api.app import create_app
from xscl.service.api.tokens import TokenStore
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
