"""Resident memory of the running benchmark process (Linux ``/proc``), shared by the
benchmark scripts (imported with ``benchmarks/`` on ``sys.path``)."""

from __future__ import annotations

import os
import threading


def current_rss() -> int:
    """Resident set size of this process now, bytes."""
    with open("/proc/self/statm", encoding="ascii") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class PeakRss:
    """Samples this process's RSS every ``period`` seconds in a thread; ``peak`` = the
    largest seen (a ``with`` block)."""

    def __init__(self, period: float = 0.05) -> None:
        self.period = period
        self.peak = current_rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            self.peak = max(self.peak, current_rss())

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, current_rss())
