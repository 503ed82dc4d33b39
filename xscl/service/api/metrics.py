"""The API's counters and their Prometheus text (``GET /metrics``).

Counters only, per process: requests by route template and status, and what
subscribe, unsubscribe and the result reads did. Rendered in the Prometheus text
exposition format 0.0.4.
"""

from __future__ import annotations

import threading
from collections import Counter

#: name -> help text, in the order they are exported
_HELP = {
    "xscl_api_requests_total": "HTTP requests answered, by route and status",
    "xscl_api_subscribed_queries_total": "queries subscribed through the API",
    "xscl_api_unsubscribed_queries_total": "queries unsubscribed through the API",
    "xscl_api_results_served_total": "result records returned by results and invoke",
    "xscl_api_rate_limited_total": "subscribe requests refused by the rate limit",
}


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class Metrics:
    """Thread-safe counters keyed by (name, labels)."""

    def __init__(self) -> None:
        self._counts: Counter[tuple[str, tuple[tuple[str, str], ...]]] = Counter()
        self._lock = threading.Lock()

    def add(self, name: str, amount: int = 1, **labels: str) -> None:
        if name not in _HELP:
            raise KeyError(f"unknown metric {name}")
        with self._lock:
            self._counts[(name, tuple(sorted(labels.items())))] += amount

    def value(self, name: str, **labels: str) -> int:
        with self._lock:
            return self._counts[(name, tuple(sorted(labels.items())))]

    def render(self) -> str:
        """The exposition text.

        >>> metrics = Metrics()
        >>> metrics.add("xscl_api_requests_total", route="/health", status="200")
        >>> print(metrics.render().splitlines()[2])
        xscl_api_requests_total{route="/health",status="200"} 1
        """
        with self._lock:
            counts = dict(self._counts)
        lines: list[str] = []
        for name, text in _HELP.items():
            lines += [f"# HELP {name} {text}", f"# TYPE {name} counter"]
            series = sorted((k, v) for k, v in counts.items() if k[0] == name)
            if not series:
                lines.append(f"{name} 0")
            for (_name, labels), value in series:
                inner = ",".join(f'{key}="{_escape(val)}"' for key, val in labels)
                lines.append(f"{name}{{{inner}}} {value}" if inner else f"{name} {value}")
        return "\n".join(lines) + "\n"
