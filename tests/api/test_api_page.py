"""The subscription page in a real headless browser (Debian's chromium driven by
Selenium, ``browser.py``) against a real ``xscl api`` server on loopback: sign in with
a client token, the client's subscriptions listed, a query's error shown at its line
and column as it is typed, subscribe, remove, the newest results and the feed link
(``page_walk.py``). Skipped only when chromium or chromedriver is absent."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.api.browser import headless_chromium, missing
from tests.api.server import free_port, start_api
from xscl.service.api.tokens import TokenStore
from xscl.service.subscriptions import SubscriptionLog

pytestmark = pytest.mark.skipif(missing() is not None, reason=str(missing()))


def test_the_page_in_a_real_browser(tmp_path: Path) -> None:
    from tests.api.page_walk import walk

    home = tmp_path / "home"
    token = TokenStore(home).create("alice")
    TokenStore(home).create("bob")
    port = free_port()
    server = start_api(home, port)
    driver = headless_chromium(tmp_path / "profile")
    try:
        shown = walk(driver, f"http://127.0.0.1:{port}", ("alice", token), home, lambda _: None)
        logged = driver.get_log("browser")  # network: the 422 of /check, no favicon
        script_errors = [e["message"] for e in logged if e["source"] != "network"]
    finally:
        driver.quit()
        server.terminate()
        server.wait()
    assert shown["title"] == "xscl subscriptions"
    assert shown["listed"] == ["advisories", "stale"]
    css_class, text, color = shown["typed_bad"]
    assert css_class == "error" and text.startswith(shown["expected_bad"])
    assert shown["expected_bad"].startswith("XSCL-P004 at line 2, column ")
    assert color == "rgba(170, 0, 0, 1)"  # page.css: #check.error
    assert shown["typed_good"] == "ok"
    assert shown["subscribed"] == (["W1", "advisories", "stale"], "")
    assert shown["removed"] == ["W1", "advisories"]
    assert shown["results_title"] == "Results of W1 in its window as of now"
    newest_first = [line.split(" ")[0] for line in shown["results"]]
    assert newest_first == ["vendor/adv-2", "vendor/adv-1", "vendor/adv-0"]
    assert "CVE-2026-0003" in shown["results"][0]
    assert shown["feed"].endswith(f"http://127.0.0.1:{port}/subscriptions/W1/feed.atom")
    assert shown["feed_status"] == 200
    assert script_errors == []
    log = SubscriptionLog(home / "registry" / "xscl")
    assert sorted(log.current()) == ["alice~W1", "alice~advisories"]
    assert [event.op for event in log.events()] == ["subscribe", "subscribe", "unsubscribe"]
