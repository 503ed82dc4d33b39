"""What the API accepts: sizes, counts and the per-client subscribe rate.

``Limits`` holds the configurable bounds (``xscl api`` options); ``RateLimiter`` is a
token bucket per client: ``burst`` subscribe requests at once, refilled at ``rate``
per second. It lives in the API's process (one bucket per client per process).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """The bounds a request must keep (the defaults are ``xscl api``'s)."""

    #: bytes of a subscribe request's body (the query text)
    max_query_bytes: int = 64 * 1024
    #: queries in one subscribe request
    max_queries: int = 1000
    #: records in one page of results
    max_page: int = 1000
    #: subscribe requests per second and client, and how many at once
    subscribe_rate: float = 2.0
    subscribe_burst: int = 20


class RateLimiter:
    """A token bucket per key; ``allow(key)`` takes a token if there is one."""

    def __init__(
        self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def allow(self, key: str) -> bool:
        """Whether ``key`` may make one more request now (taking a token when so).

        >>> now = [0.0]
        >>> limiter = RateLimiter(rate=1.0, burst=2, clock=lambda: now[0])
        >>> [limiter.allow("a") for _ in range(3)], limiter.allow("b")
        ([True, True, False], True)
        >>> now[0] = 1.0
        >>> limiter.allow("a"), limiter.allow("a")
        (True, False)
        """
        with self._lock:
            now = self._clock()
            tokens, then = self._buckets.get(key, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - then) * self.rate)
            allowed = tokens >= 1.0
            self._buckets[key] = (tokens - 1.0 if allowed else tokens, now)
            return allowed
