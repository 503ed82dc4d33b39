"""PSoup's Results Structure (§4.3) for one query: its committed results kept in memory
from a cursor on, so that an invocation reads only what was committed since the last
one and applies the query's window as of now.

``ResultsWindow.invoke(now)`` returns what ``results.cursor.invoke`` returns (the
query's committed results whose documents lie within its window before ``now``, in
commit order), but reads each committed part once over all invocations: it follows a
cursor (``results.cursor.page``), and it drops the results that have left the window,
which never come back since ``now`` only grows (an earlier ``now`` than the last one is
answered as of the last one). With an INF window it keeps every result of the query.

Where it runs: the subscription API, one per subscription invoked, in its process.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from xscl.results.cursor import Cursor, in_window, oldest_document, page

#: Records read per step while catching up.
_STEP = 1000


class ResultsWindow:
    """The results of query ``qid`` under ``root`` within ``window`` microseconds
    (None: INF) of the time of each invocation."""

    def __init__(self, root: str | Path, qid: str, window: int | None) -> None:
        self.root = Path(root)
        self.qid = qid
        self.window = window
        self._cursor: Cursor | None = None
        self._kept: list[tuple[int | None, dict[str, Any]]] = []
        self._now: int | None = None
        self._lock = threading.Lock()

    def invoke(self, now: int) -> list[dict[str, Any]]:
        """The query's results in its window as of ``now`` (UTC microseconds)."""
        with self._lock:
            now = now if self._now is None else max(now, self._now)
            self._now = now
            while True:
                got = page(self.root, self.qid, self._cursor, _STEP)
                if got.cursor is not None:
                    self._cursor = got.cursor
                for record in got.records:
                    if in_window(record, now, self.window):
                        self._kept.append((oldest_document(record), record))
                if not got.records:
                    break
            if self.window is not None:
                start = now - self.window
                self._kept = [(t, r) for t, r in self._kept if t is not None and t >= start]
            return [record for _oldest, record in self._kept]
