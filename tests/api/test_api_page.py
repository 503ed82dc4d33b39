"""The subscription page's script run by Node against a real ``xscl api`` server on
loopback, with a stand-in DOM (``page_harness.js``; no browser on this machine): sign
in, a bad query's error at its line and column as it is typed, subscribe, results,
remove. Skipped without ``node``."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.api.server import free_port, start_api
from xscl.service.api.tokens import TokenStore
from xscl.service.subscriptions import SubscriptionLog

HERE = Path(__file__).resolve().parent
SCRIPT = HERE.parents[1] / "xscl" / "service" / "api" / "static" / "page.js"


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_the_page_script_against_a_real_server(tmp_path: Path) -> None:
    token = TokenStore(tmp_path).create("alice")
    port = free_port()
    server = start_api(tmp_path, port)
    try:
        run = subprocess.run(
            ["node", str(HERE / "page_harness.js"), f"http://127.0.0.1:{port}", token, str(SCRIPT)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        server.terminate()
        server.wait()
    assert run.returncode == 0, run.stderr
    shown = json.loads(run.stdout)
    assert shown["signedIn"] == ["signed in", False]
    assert shown["typedBad"][0] == "error"
    assert shown["typedBad"][1].startswith("XSCL-P004 at line 2, column 31: unexpected end")
    assert shown["typedGood"] == ["ok", "ok: would subscribe W1"]
    assert shown["subscribed"] == ["subscribed W1", ["W1"], ""]
    assert shown["results"][0] == "Results of W1 in its window as of now"
    assert shown["results"][1].endswith("/subscriptions/W1/feed.atom")
    assert shown["removed"] == [] and shown["alerts"] == []
    log = SubscriptionLog(tmp_path / "registry" / "xscl")
    assert [event.op for event in log.events()] == ["subscribe", "unsubscribe"]
