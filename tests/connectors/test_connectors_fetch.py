"""HTTP fetching against a local ``http.server`` on 127.0.0.1 (loopback only)."""

from __future__ import annotations

import gzip
import random
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from xscl.connectors.fetch import FeedStateStore, Fetcher, FetchPolicy, HostRateLimiter
from xscl.connectors.poller import FeedSource, Poller
from xscl.connectors.spool import Spool

FEED = b"""<?xml version="1.0"?><rss version="2.0"><channel><title>T</title><link>http://x/</link>
<item><title>One</title><guid>g1</guid><pubDate>Mon, 01 Jan 2024 00:00:00 GMT</pubDate></item>
<item><title>Two</title><link>rel/two</link></item></channel></rss>"""


class _Handler(BaseHTTPRequestHandler):
    hits: ClassVar[dict[str, int]] = {}

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        count = self.hits[self.path] = self.hits.get(self.path, 0) + 1
        if self.path == "/feed":
            if self.headers.get("If-None-Match") == '"v1"':
                self.send_response(304)
                self.end_headers()
                return
            self._send(FEED, etag='"v1"')
        elif self.path == "/flaky":
            if count <= 2:
                self.send_response(500)
                self.end_headers()
                return
            self._send(FEED)
        elif self.path == "/slow":
            time.sleep(1.5)
            self._send(FEED)
        elif self.path == "/gone":
            self.send_response(404)
            self.end_headers()
        elif self.path == "/gzip":
            self._send(gzip.compress(FEED), encoding="gzip")
        elif self.path == "/to-file":
            self.send_response(302)
            self.send_header("Location", "file:///etc/passwd")
            self.end_headers()

    def _send(self, body: bytes, *, etag: str | None = None, encoding: str | None = None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/rss+xml")
        self.send_header("Content-Length", str(len(body)))
        if etag:
            self.send_header("ETag", etag)
            self.send_header("Last-Modified", "Mon, 01 Jan 2024 00:00:00 GMT")
        if encoding:
            self.send_header("Content-Encoding", encoding)
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture()
def server() -> Iterator[str]:
    _Handler.hits = {}
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _fetcher(tmp_path: Path, *, timeout_s: float = 5.0, retries: int = 3) -> Fetcher:
    policy = FetchPolicy(
        timeout_s=timeout_s, retries=retries, backoff_base_s=0.01, min_host_interval_s=0.0
    )
    return Fetcher(policy, FeedStateStore(tmp_path / "state.json"), rng=random.Random(1))


def test_conditional_get_304_and_state_file(server: str, tmp_path: Path) -> None:
    fetcher = _fetcher(tmp_path)
    first = fetcher.fetch(server + "/feed")
    assert first.status == "ok" and first.data == FEED and first.http_status == 200
    fetcher.state.save()
    again = _fetcher(tmp_path)  # validators come back from the state file
    assert again.state.get(server + "/feed").etag == '"v1"'
    second = again.fetch(server + "/feed")
    assert second.status == "not_modified" and second.http_status == 304 and second.data == b""
    state = again.state.get(server + "/feed")
    assert (state.fetches, state.ok, state.not_modified, state.errors) == (2, 1, 1, 0)


def test_500_then_success_is_retried_with_backoff(server: str, tmp_path: Path) -> None:
    fetcher = _fetcher(tmp_path)
    result = fetcher.fetch(server + "/flaky")
    assert result.status == "ok" and result.attempts == 3
    assert len(result.retry_delays) == 2
    assert 0.005 <= result.retry_delays[0] <= 0.01 and 0.01 <= result.retry_delays[1] <= 0.02
    assert _Handler.hits["/flaky"] == 3


def test_timeout_is_an_error_after_retries(server: str, tmp_path: Path) -> None:
    fetcher = _fetcher(tmp_path, timeout_s=0.3, retries=1)
    result = fetcher.fetch(server + "/slow")
    assert result.status == "error" and result.error_code == "XSCL-C021"
    assert result.attempts == 2
    state = fetcher.state.get(server + "/slow")
    assert (
        state.errors == 1
        and state.consecutive_errors == 1
        and "XSCL-C021" in (state.last_error or "")
    )


def test_404_is_not_retried_and_redirect_to_file_is_refused(server: str, tmp_path: Path) -> None:
    fetcher = _fetcher(tmp_path)
    gone = fetcher.fetch(server + "/gone")
    assert gone.status == "error" and gone.http_status == 404 and gone.attempts == 1
    redirected = fetcher.fetch(server + "/to-file")
    assert redirected.status == "error" and b"root" not in redirected.data
    assert fetcher.fetch("ftp://127.0.0.1/x").error_code == "XSCL-C022"


def test_gzip_body(server: str, tmp_path: Path) -> None:
    assert _fetcher(tmp_path).fetch(server + "/gzip").data == FEED


def test_per_host_rate_limit() -> None:
    now = [0.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    limiter = HostRateLimiter(2.0, clock=lambda: now[0], sleep=sleep)
    limiter.wait("a")
    limiter.wait("b")
    now[0] += 0.5
    limiter.wait("a")
    assert slept == [1.5]


def test_poller_reports_per_feed_errors_without_stopping(server: str, tmp_path: Path) -> None:
    with Spool(tmp_path / "spool") as spool:
        poller = Poller(
            spool, stream="S", fetcher=_fetcher(tmp_path, retries=0), now_micros=lambda: 7
        )
        sources = [
            FeedSource(server + "/gone", "url"),
            FeedSource(server + "/feed", "url"),
            FeedSource(str(tmp_path / "missing.xml"), "file"),
        ]
        summary = poller.poll(sources)
        assert [r.status for r in summary.reports] == ["error", "ok", "error"]
        assert (summary.new, summary.feeds_error, summary.dead_letters) == (2, 2, 2)
        docs = [d for _, d in spool.read(0, 10)]
        # a permalink guid and a link are resolved against the feed URL (feedparser's rule)
        assert [d.docid for d in docs] == [server + "/g1", server + "/rel/two"]
        assert docs[1].ts_micros == 7  # no date: first-seen time
        again = poller.poll([FeedSource(server + "/feed", "url")])
        assert again.feeds_not_modified == 1 and again.new == 0
