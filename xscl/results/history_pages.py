"""A subscription's results with its history's: one cursor over two results folders.

A query subscribed with a history (docs/language.md, "History on subscribe") has its
results in two places: the job's results folder (the live job's: every document from
the subscription on) and its subscribe event's history folder
(``results/NAME/history/EVENT``: every result with a document from before). Both are
committed by the same protocol, and both keep growing while the job runs (the history's
follow-up scans commit the joins of history documents with later ones).

``page`` reads both with one cursor: a ``HistoryCursor`` holds a position in each
folder (``results.cursor.Cursor``), so each record of either is read exactly once per
cursor, whatever the interleaving of the two folders' commits. A page gives the
history's records first, then the live job's. A plain cursor (one that
``results.cursor`` gave, from before the history was readable) is the live position.

Cursors stay opaque to clients: urlsafe base64 of a small JSON object holding the two
positions' own texts.

Where it runs: the subscription API (``xscl.service.api``), users' code.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xscl.errors import ResultCursorError
from xscl.results import cursor as one_folder
from xscl.results.cursor import Cursor, decode_cursor


@dataclass(frozen=True)
class HistoryCursor:
    """The next record to read in each folder (None: from its first)."""

    qid: str
    live: Cursor | None = None
    history: Cursor | None = None

    def encode(self) -> str:
        """The opaque text a client passes back.

        >>> live = Cursor("Q1", 0, "00000000000000000003", 1, 0)
        >>> text = HistoryCursor("Q1", live, None).encode()
        >>> decode(text, "Q1") == HistoryCursor("Q1", live, None)
        True
        """
        body = {"v": 2, "q": self.qid}
        if self.live is not None:
            body["l"] = self.live.encode()
        if self.history is not None:
            body["h"] = self.history.encode()
        raw = json.dumps(body, separators=(",", ":"), sort_keys=True).encode("utf-8")
        return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode(text: str, qid: str) -> HistoryCursor:
    """The cursor ``text`` names, which must be one of query ``qid``'s: this module's, or
    a plain ``results.cursor`` one (the live position). ``XSCL-A010`` otherwise."""
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        body = json.loads(raw.decode("utf-8"))
        version = body.get("v") if isinstance(body, dict) else None
    except (binascii.Error, ValueError) as exc:
        raise ResultCursorError(f"the cursor {text[:40]!r} is malformed ({exc})") from exc
    if version != 2:
        return HistoryCursor(qid, decode_cursor(text, qid), None)
    if body.get("q") != qid:
        raise ResultCursorError("the cursor belongs to another subscription")
    live, history = body.get("l"), body.get("h")
    if not isinstance(live, (str, type(None))) or not isinstance(history, (str, type(None))):
        raise ResultCursorError(f"the cursor {text[:40]!r} is malformed")
    return HistoryCursor(
        qid,
        None if live is None else decode_cursor(live, qid),
        None if history is None else decode_cursor(history, qid),
    )


@dataclass(frozen=True)
class Page:
    """Records of one query after a cursor, and the cursor to pass next."""

    records: list[dict[str, Any]]
    cursor: HistoryCursor


def page(
    live_root: str | Path,
    history_root: str | Path | None,
    qid: str,
    after: HistoryCursor | None = None,
    limit: int = 100,
) -> Page:
    """Up to ``limit`` records of query ``qid`` committed after ``after`` in its history's
    folder (None: it has none), then in the job's folder; the cursor after them."""
    if limit < 1:
        raise ValueError(f"limit must be at least 1, not {limit}")
    at = after if after is not None else HistoryCursor(qid)
    records: list[dict[str, Any]] = []
    history = at.history
    if history_root is not None:
        got = one_folder.page(history_root, qid, history, limit)
        records.extend(got.records)
        history = got.cursor if got.cursor is not None else history
    live = at.live
    if len(records) < limit:
        got = one_folder.page(live_root, qid, live, limit - len(records))
        records.extend(got.records)
        live = got.cursor if got.cursor is not None else live
    return Page(records, HistoryCursor(qid, live, history))

