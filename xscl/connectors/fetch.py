"""HTTP(S) feed fetching: conditional GET, timeouts, retries with backoff, politeness.

Standard library only (``urllib``). Per feed URL a small JSON state file keeps the
validators (``ETag``, ``Last-Modified``) sent back as ``If-None-Match`` /
``If-Modified-Since``, and status/error counts. Each request has a timeout;
network errors, timeouts, 408, 429 and 5xx are retried up to ``retries`` times
with exponential backoff and jitter (``Retry-After`` honoured, capped); other 4xx
fail at once. Requests to one host are spaced at least ``min_host_interval_s``
apart. Only ``http``/``https`` URLs are fetched, redirects included. Bodies are
read up to ``max_bytes`` (gzip decoded within the same limit).
"""

from __future__ import annotations

import email.utils
import gzip
import http.client
import json
import os
import random
import time
import urllib.error
import urllib.parse
import urllib.request
import zlib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Literal

from xscl.connectors.document import format_ts
from xscl.connectors.durable import create_temporary
from xscl.connectors.xmlsafe import MAX_DOCUMENT_BYTES

FetchStatus = Literal["ok", "not_modified", "error"]
_RETRY_STATUSES = {408, 429, 500, 502, 503, 504}


@dataclass(frozen=True)
class FetchPolicy:
    """How politely and how persistently to fetch."""

    timeout_s: float = 20.0
    retries: int = 3
    backoff_base_s: float = 0.5
    backoff_max_s: float = 30.0
    min_host_interval_s: float = 1.0
    max_bytes: int = MAX_DOCUMENT_BYTES
    user_agent: str = "xscl-poller/0.1 (continuous XML/RSS query engine)"

    def backoff(self, attempt: int, rng: random.Random) -> float:
        """Delay before retry number ``attempt`` (1-based): equal-jitter exponential."""
        ceiling = float(min(self.backoff_max_s, self.backoff_base_s * 2.0 ** (attempt - 1)))
        return ceiling / 2 + rng.uniform(0, ceiling / 2)


@dataclass
class FeedState:
    """What is remembered about one feed URL between polls."""

    etag: str | None = None
    last_modified: str | None = None
    last_status: str | None = None
    last_http_status: int | None = None
    last_checked: str | None = None
    last_error: str | None = None
    fetches: int = 0
    ok: int = 0
    not_modified: int = 0
    errors: int = 0
    consecutive_errors: int = 0


class FeedStateStore:
    """``{url: FeedState}`` in a JSON file, written atomically (temp file + rename)."""

    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path) if path is not None else None
        self.feeds: dict[str, FeedState] = {}
        if self.path is not None and self.path.exists():
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            known = set(FeedState.__dataclass_fields__)
            for url, values in (raw.get("feeds") or {}).items():
                self.feeds[url] = FeedState(**{k: v for k, v in values.items() if k in known})

    def get(self, url: str) -> FeedState:
        return self.feeds.setdefault(url, FeedState())

    def save(self) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        payload = {"version": 1, "feeds": {url: asdict(s) for url, s in sorted(self.feeds.items())}}
        fd, tmp = create_temporary(self.path)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(payload, handle, indent=1, sort_keys=True)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.path)


class HostRateLimiter:
    """Keeps requests to one host at least ``min_interval_s`` apart."""

    def __init__(
        self,
        min_interval_s: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.min_interval_s = min_interval_s
        self._clock = clock
        self._sleep = sleep
        self._last: dict[str, float] = {}

    def wait(self, host: str) -> float:
        """Sleep as needed before a request to ``host``; return the time slept."""
        now = self._clock()
        last = self._last.get(host)
        delay = 0.0 if last is None else max(0.0, last + self.min_interval_s - now)
        if delay > 0:
            self._sleep(delay)
        self._last[host] = self._clock()
        return delay


@dataclass
class FetchResult:
    """Outcome of fetching one URL (after all retries)."""

    url: str
    status: FetchStatus
    http_status: int | None = None
    data: bytes = b""
    content_type: str | None = None
    final_url: str | None = None
    attempts: int = 0
    error_code: str | None = None
    error: str | None = None
    retry_delays: list[float] = field(default_factory=list)


class _HttpOnlyRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: http.client.HTTPMessage,
        newurl: str,
    ) -> urllib.request.Request | None:
        if urllib.parse.urlsplit(newurl).scheme not in ("http", "https"):
            raise urllib.error.HTTPError(
                newurl, code, f"redirect to non-HTTP URL {newurl}", headers, fp
            )
        return super().redirect_request(req, fp, code, msg, headers, newurl)


class _Attempt(Exception):
    """One failed attempt: retryable or not, with its code and a message."""

    def __init__(
        self, message: str, *, code: str, retryable: bool, retry_after: float | None = None
    ):
        super().__init__(message)
        self.code = code
        self.retryable = retryable
        self.retry_after = retry_after
        self.http_status: int | None = None


class Fetcher:
    """Fetches feed URLs under a ``FetchPolicy`` and records their state."""

    def __init__(
        self,
        policy: FetchPolicy | None = None,
        state: FeedStateStore | None = None,
        *,
        rng: random.Random | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        now_micros: Callable[[], int] = lambda: time.time_ns() // 1000,
    ) -> None:
        self.policy = policy or FetchPolicy()
        self.state = state or FeedStateStore(None)
        self.rng = rng or random.Random()
        self._sleep = sleep
        self._now_micros = now_micros
        self.limiter = HostRateLimiter(self.policy.min_host_interval_s, clock=clock, sleep=sleep)
        self._opener = urllib.request.build_opener(_HttpOnlyRedirects())

    def fetch(self, url: str) -> FetchResult:
        """GET ``url`` conditionally; never raises for network or HTTP failures."""
        result = FetchResult(url, "error")
        feed = self.state.get(url)
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            result.error_code, result.error = "XSCL-C022", f"not an http(s) URL: {url!r}"
            self._record(feed, result)
            return result
        for attempt in range(1, self.policy.retries + 2):
            result.attempts = attempt
            self.limiter.wait(parts.hostname.lower())
            try:
                self._attempt(url, feed, result)
                break
            except _Attempt as failed:
                result.status, result.error_code, result.error = "error", failed.code, str(failed)
                result.http_status = failed.http_status
                if not failed.retryable or attempt > self.policy.retries:
                    break
                delay = self.policy.backoff(attempt, self.rng)
                if failed.retry_after is not None:
                    delay = max(delay, min(failed.retry_after, self.policy.backoff_max_s))
                result.retry_delays.append(delay)
                self._sleep(delay)
        self._record(feed, result)
        return result

    def _attempt(self, url: str, feed: FeedState, result: FetchResult) -> None:
        headers = {"User-Agent": self.policy.user_agent, "Accept-Encoding": "gzip"}
        if feed.etag:
            headers["If-None-Match"] = feed.etag
        if feed.last_modified:
            headers["If-Modified-Since"] = feed.last_modified
        request = urllib.request.Request(url, headers=headers)
        try:
            with self._opener.open(request, timeout=self.policy.timeout_s) as response:
                body = response.read(self.policy.max_bytes + 1)
                if response.headers.get("Content-Encoding", "").lower() in ("gzip", "x-gzip"):
                    body = self._gunzip(body)
                if len(body) > self.policy.max_bytes:
                    raise _Attempt(
                        f"body larger than {self.policy.max_bytes} bytes",
                        code="XSCL-C005",
                        retryable=False,
                    )
                result.status, result.http_status, result.data = "ok", response.status, body
                result.content_type = response.headers.get("Content-Type")
                result.final_url = response.geturl()
                feed.etag = response.headers.get("ETag") or feed.etag
                feed.last_modified = response.headers.get("Last-Modified") or feed.last_modified
                result.error_code = result.error = None
        except urllib.error.HTTPError as exc:
            if exc.code == 304:
                result.status, result.http_status = "not_modified", 304
                result.error_code = result.error = None
                return
            retry_after = _retry_after(exc.headers.get("Retry-After") if exc.headers else None)
            failed = _Attempt(
                f"HTTP {exc.code} {exc.reason}",
                code="XSCL-C020",
                retryable=exc.code in _RETRY_STATUSES,
                retry_after=retry_after,
            )
            failed.http_status = exc.code
            raise failed from exc
        except TimeoutError as exc:
            raise _Attempt(
                f"timed out after {self.policy.timeout_s} s", code="XSCL-C021", retryable=True
            ) from exc
        except urllib.error.URLError as exc:
            timed_out = isinstance(exc.reason, TimeoutError)
            raise _Attempt(
                f"timed out after {self.policy.timeout_s} s"
                if timed_out
                else f"network error: {exc.reason}",
                code="XSCL-C021" if timed_out else "XSCL-C020",
                retryable=True,
            ) from exc
        except (OSError, ValueError, zlib.error, EOFError) as exc:
            raise _Attempt(f"fetch failed: {exc!r}", code="XSCL-C020", retryable=True) from exc

    def _gunzip(self, body: bytes) -> bytes:
        decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            return decoder.decompress(body, self.policy.max_bytes + 1)
        except zlib.error as exc:
            raise gzip.BadGzipFile(str(exc)) from exc

    def _record(self, feed: FeedState, result: FetchResult) -> None:
        feed.fetches += 1
        feed.last_status = result.status
        feed.last_http_status = result.http_status
        feed.last_checked = format_ts(self._now_micros())
        if result.status == "ok":
            feed.ok += 1
            feed.consecutive_errors = 0
        elif result.status == "not_modified":
            feed.not_modified += 1
            feed.consecutive_errors = 0
        else:
            feed.errors += 1
            feed.consecutive_errors += 1
            feed.last_error = f"{result.error_code} {result.error}"


def _retry_after(value: str | None) -> float | None:
    """Seconds of a ``Retry-After`` header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, moment.timestamp() - time.time())
