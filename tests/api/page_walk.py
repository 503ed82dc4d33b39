"""A walk through the subscription page in a real browser, against a real ``xscl api``
server: sign in with a client token, list the client's subscriptions, type a query and
see its error at its line and column before it is complete, finish it and subscribe,
remove one, and show the newest results of one with its feed link.

``walk`` waits for what each step shows, calls ``shoot(name)`` at the moments worth a
screenshot, and returns what the page showed; the test (``test_api_page.py``) asserts
on it and ``scripts/api_page_screenshots.py`` saves the screenshots.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx
from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from xscl.results.commit import StagedPart, commit_batch, open_epoch
from xscl.service.namespaces import registry_id

#: Subscribed through the API before the page opens.
EARLIER = (
    "advisories: vendor/item[./title->t]\n"
    "  FOLLOWED BY {t = u, 3d} news/entry[./title->u];\n"
    "stale: vendor/item[./category = 'retired'];"
)
#: Typed into the page: incomplete (an error on line 2), then completed.
TYPED = "W1: vendor/item[./title->t]\n  FOLLOWED BY {t = u, 1d} news/entry[./title->"
COMPLETION = "u];"


def _ts(seconds_ago: float) -> str:
    moment = datetime.fromtimestamp(time.time() - seconds_ago, tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def commit_results(home: Path, rid: str, titles: list[str]) -> None:
    """Commit one batch of results of registry id ``rid`` (as the job would: a marker
    over a staged part) and its Atom feed; the last title is the newest."""
    root = home / "results" / "xscl"
    folder = open_epoch(root, 1, -1)
    rows = [
        {
            "query": rid,
            "result_id": f"r{i}",
            "docs": [
                {"stream": "vendor", "docid": f"adv-{i}", "ts": _ts(3600 - 600 * i)},
                {"stream": "news", "docid": f"story-{i}", "ts": _ts(1800 - 300 * i)},
            ],
            "values": {"t": title, "u": title},
        }
        for i, title in enumerate(titles)
    ]
    staged = folder / "staged-0.jsonl"
    staged.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    commit_batch(folder, f"{0:020d}", [StagedPart(0, str(staged), len(rows))])
    feeds = root / "feeds"
    feeds.mkdir(parents=True, exist_ok=True)
    (feeds / f"{rid}.atom").write_text(
        "<feed xmlns='http://www.w3.org/2005/Atom'><title>W1</title></feed>", encoding="utf-8"
    )


_ITEMS = "return [...document.querySelectorAll('#subscriptions > li')]"


def _listed(driver: WebDriver) -> list[str]:
    """The ids of the subscriptions listed (each item starts with its id)."""
    return list(driver.execute_script(_ITEMS + ".map((li) => li.firstChild.data)"))


def _button(driver: WebDriver, qid: str, label: str) -> Any:
    """The button ``label`` of subscription ``qid`` in the list."""
    found = driver.execute_script(
        _ITEMS + ".filter((li) => li.firstChild.data === arguments[0])"
        ".flatMap((li) => [...li.querySelectorAll('button')])"
        ".find((b) => b.textContent === arguments[1])",
        qid,
        label,
    )
    assert found is not None, f"{qid} is not listed with a {label} button"
    return found


def walk(
    driver: WebDriver,
    base: str,
    client: tuple[str, str],
    home: Path,
    shoot: Callable[[str], None],
) -> dict[str, Any]:
    """Walk the page at ``base`` as ``client`` (its name and token); what it showed."""
    name, token = client
    shown: dict[str, Any] = {}
    wait = WebDriverWait(driver, 20, poll_frequency=0.1)
    api = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=10)
    with api:
        assert api.post("/subscriptions", content=EARLIER).status_code == 201
        expected = api.post("/check", content=TYPED).json()

        driver.get(base + "/")
        shown["title"] = driver.title
        driver.find_element(By.ID, "token").send_keys(token)
        driver.find_element(By.CSS_SELECTOR, "#login button").click()
        wait.until(lambda d: d.find_element(By.ID, "who").text == "signed in")
        wait.until(lambda d: len(_listed(d)) == 2)
        shown["listed"] = _listed(driver)
        shoot("list")

        text = driver.find_element(By.ID, "text")
        text.send_keys(TYPED)  # key by key: an input event each
        first = expected["errors"][0]
        at = f"{first['code']} at line {first['line']}, column {first['column']}:"
        wait.until(lambda d: d.find_element(By.ID, "check").text.startswith(at))
        check = driver.find_element(By.ID, "check")
        shown["typed_bad"] = (
            check.get_attribute("class"),
            check.text,
            check.value_of_css_property("color"),
        )
        shown["expected_bad"] = at
        shoot("error-as-you-type")

        text.send_keys(COMPLETION)
        wait.until(lambda d: d.find_element(By.ID, "check").text == "ok: would subscribe W1")
        shown["typed_good"] = driver.find_element(By.ID, "check").get_attribute("class")
        driver.find_element(By.ID, "subscribe").click()
        wait.until(lambda d: d.find_element(By.ID, "check").text == "subscribed W1")
        wait.until(lambda d: "W1" in _listed(d))
        shown["subscribed"] = (_listed(driver), text.get_attribute("value"))

        _button(driver, "stale", "remove").click()
        wait.until(lambda d: "stale" not in _listed(d))
        shown["removed"] = _listed(driver)

        commit_results(
            home, registry_id(name, "W1"), ["CVE-2026-0001", "CVE-2026-0002", "CVE-2026-0003"]
        )
        _button(driver, "W1", "results").click()
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#results > li")) == 3)
        shown["results_title"] = driver.find_element(By.ID, "results-title").text
        shown["results"] = [
            li.text for li in driver.find_elements(By.CSS_SELECTOR, "#results > li")
        ]
        feed_text = driver.find_element(By.ID, "feed").text
        shown["feed"] = feed_text
        feed_url = feed_text.rsplit(" ", 1)[-1]
        shown["feed_status"] = api.get(feed_url).status_code
        shoot("results")
    return shown
