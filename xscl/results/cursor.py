"""Reading one query's committed results by cursor, and as of now (PSoup §3.3, §4.3).

A **cursor** names a position in the committed results of a job: the marker of a
batch (its epoch and batch), the part of that batch (its index in the marker) and the
row of that part, of the next record to read. ``page(root, qid, after, limit)`` yields
the query's records committed after the cursor, in commit order (the order of
``results.read.visible_markers``), and the cursor after the last one it yields. Paging
from ``None`` (the beginning) with each page's cursor reads every committed record of
the query exactly once.

Why these positions: a marker, its parts and their rows never change once written
(``results.commit``), and batch numbers go on across epochs (a new epoch continues
after batch C of the one before, and replays batch C+1 on with the same offsets). So
a cursor survives restarts and take-overs. One case needs care: a cursor taken inside
batch N of epoch E, which the next epoch cut off and replayed (the old primary had
written N's marker before Spark logged its commit). The replayed batch N of the new
epoch holds the same results in possibly other parts and rows, so the reader reads
which result ids the cursor had passed in E's batch N (its parts stay in E's folder)
and skips exactly those in the replay.

Cursors are opaque to clients: urlsafe base64 of a small JSON object that carries the
query id, so a cursor of another subscription is refused (``XSCL-A010``).

``invoke(root, query, now)`` is PSoup's invocation: the query's results whose
documents lie within its window as of ``now`` (``query_window``), read from the
committed results, never from the spool.

Where it runs: the subscription API (``xscl.service.api``), users' code.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xscl.connectors.document import parse_ts
from xscl.errors import ResultCursorError, TimestampError
from xscl.lang.ast import Query
from xscl.results.part_index import query_rows
from xscl.results.read import part_records, visible_markers

_EPOCH_FOLDER = re.compile(r"e(\d{8})")
#: A marker's batch name (``results.commit``): digits, or ``w-<ns>-<uuid>``; never a path.
_BATCH = re.compile(r"[A-Za-z0-9_-]{1,100}")


@dataclass(frozen=True, order=True)
class Cursor:
    """The position of the next record to read: (epoch, batch, part, row).

    ``epoch`` is 0 in a results folder without epochs; ``batch`` is the marker's
    batch name (20 digits for the streaming job's batches).
    """

    qid: str
    epoch: int
    batch: str
    part: int
    row: int
    #: inside a batch that later epochs replayed: (epoch, part, row) of where the cursor
    #: was in each cut-off copy of the batch, whose records it had passed
    passed: tuple[tuple[int, int, int], ...] = ()

    def encode(self) -> str:
        """The opaque text a client passes back (urlsafe base64, no padding).

        >>> text = Cursor("Q1", 2, "00000000000000000007", 0, 3).encode()
        >>> decode_cursor(text, "Q1")
        Cursor(qid='Q1', epoch=2, batch='00000000000000000007', part=0, row=3, passed=())
        """
        body = {"v": 1, "q": self.qid, "e": self.epoch, "b": self.batch}
        body.update({"p": self.part, "r": self.row})
        if self.passed:
            body["o"] = [list(origin) for origin in self.passed]
        raw = json.dumps(body, separators=(",", ":"), sort_keys=True).encode("utf-8")
        return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(text: str, qid: str) -> Cursor:
    """The cursor ``text`` names, which must be one of query ``qid``'s.

    Raises ``ResultCursorError`` (``XSCL-A010``) for anything else: not base64, not
    the JSON of a cursor, or a cursor of another query.
    """
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        body = json.loads(raw.decode("utf-8"))
        passed = tuple((int(e), int(p), int(r)) for e, p, r in body.get("o", []))
        cursor = Cursor(
            str(body["q"]),
            int(body["e"]),
            str(body["b"]),
            int(body["p"]),
            int(body["r"]),
            passed,
        )
        numbers = [cursor.epoch, cursor.part, cursor.row, *(n for o in passed for n in o)]
        if body.get("v") != 1 or min(numbers) < 0 or not _BATCH.fullmatch(cursor.batch):
            raise ValueError("not a cursor of this version")
    except (binascii.Error, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ResultCursorError(f"the cursor {text[:40]!r} is malformed ({exc})") from exc
    if cursor.qid != qid:
        raise ResultCursorError("the cursor belongs to another subscription")
    return cursor


@dataclass(frozen=True)
class Page:
    """Records of one query after a cursor, and the cursor to pass next."""

    records: list[dict[str, Any]]
    cursor: Cursor | None  # None: nothing committed yet (pass None again)


def _epoch_of(folder: Path) -> int:
    match = _EPOCH_FOLDER.fullmatch(folder.name)
    return int(match.group(1)) if match else 0


def _batch_key(batch: str) -> tuple[int, int | str]:
    """Batches in commit order: the streaming job's numbered ones, then named writes."""
    return (0, int(batch)) if batch.isdigit() else (1, batch)


def _passed_ids(root: Path, batch: str, origins: tuple[tuple[int, int, int], ...]) -> set[str]:
    """The result ids a cursor passed in the cut-off copies ``origins`` of ``batch``."""
    passed: set[str] = set()
    for origin in origins:
        passed |= _passed_in(root, batch, origin)
    return passed


def _passed_in(root: Path, batch: str, origin: tuple[int, int, int]) -> set[str]:
    """The result ids of ``batch`` before position ``origin`` (epoch, part, row) in that
    epoch's folder, whose batch a later epoch replayed (its parts stay where they are)."""
    epoch, last_part, last_row = origin
    folder = root if epoch == 0 else root / f"e{epoch:08d}"
    marker = folder / "_commits" / f"{batch}.json"
    if not marker.is_file():
        return set()
    body = json.loads(marker.read_text(encoding="utf-8"))
    passed: set[str] = set()
    for index, part in enumerate(body["parts"][: last_part + 1]):
        for row, record in enumerate(part_records(folder / part["file"])):
            if index == last_part and row >= last_row:
                break
            passed.add(str(record["result_id"]))
    return passed


def page(root: str | Path, qid: str, after: Cursor | None = None, limit: int = 100) -> Page:
    """Up to ``limit`` records of query ``qid`` committed after ``after`` (None: from the
    first), in commit order, and the cursor after them (``Cursor.encode`` for clients).
    """
    if limit < 1:
        raise ValueError(f"limit must be at least 1, not {limit}")
    records: list[dict[str, Any]] = []
    last = after
    for record, position in _records_after(Path(root), qid, after):
        last = position
        if record is not None:
            records.append(record)
            if len(records) >= limit:
                break
    return Page(records, last)


def _records_after(
    root: Path, qid: str, after: Cursor | None
) -> Iterator[tuple[dict[str, Any] | None, Cursor]]:
    """Each record of ``qid`` after ``after`` with the cursor just past it; None with a
    cursor for a record already yielded and the end of each batch, so that a reader
    that stops there resumes without reading them again. A part's rows of other
    queries are never read (``results.part_index``: each part indexed once).

    A result id already yielded is not yielded again (as ``read_results``: first
    committed wins; the job commits each result once, so this only matters for a
    replayed batch, see the module docstring).
    """
    if after is not None and after.qid != qid:
        raise ResultCursorError("the cursor belongs to another subscription")
    seen: set[str] = set()
    for folder, marker in visible_markers(root):
        epoch, batch = _epoch_of(folder), str(marker["batch"])
        start_part, start_row = 0, 0
        origins: tuple[tuple[int, int, int], ...] = ()
        if after is not None:
            if _batch_key(batch) < _batch_key(after.batch):
                continue
            if batch == after.batch:
                if epoch == after.epoch:
                    start_part, start_row, origins = after.part, after.row, after.passed
                else:  # replayed by this epoch: skip what the cursor passed in the copies
                    origins = (*after.passed, (after.epoch, after.part, after.row))
        skip = _passed_ids(root, batch, origins) if origins else set()
        for index, part in enumerate(marker["parts"]):
            if index < start_part:
                continue
            for row, record in query_rows(folder / part["file"], qid):  # its rows only
                if index == start_part and row < start_row:
                    continue
                here = Cursor(qid, epoch, batch, index, row + 1, origins)
                rid = str(record.get("result_id"))
                if rid in skip or rid in seen:
                    yield None, here
                    continue
                seen.add(rid)
                yield record, here
        yield None, Cursor(qid, epoch, batch, len(marker["parts"]), 0)


def query_window(query: Query) -> int | None:
    """The span a result of ``query`` covers at most, in microseconds: the sum of its
    operators' windows; None (INF) when one is INF or the query has a single block."""
    if not query.ops:
        return None
    total = 0
    for op in query.ops:
        micros = op.window.micros
        if micros is None:
            return None
        total += micros
    return total


def oldest_document(record: dict[str, Any]) -> int | None:
    """The ts of a result record's oldest document (UTC microseconds); None when the
    record names no document with a readable ts."""
    try:
        return min(parse_ts(doc["ts"]) for doc in record.get("docs", []))
    except (TimestampError, KeyError, TypeError, ValueError):
        return None


def in_window(record: dict[str, Any], now: int, window: int | None) -> bool:
    """Whether every document of a result record lies within ``window`` before ``now``
    (microseconds; None: INF, every result)."""
    if window is None:
        return True
    oldest = oldest_document(record)
    return oldest is not None and oldest >= now - window


def invoke(root: str | Path, qid: str, now: int, window: int | None) -> Iterator[dict[str, Any]]:
    """The committed results of ``qid`` whose documents lie in ``window`` as of ``now``
    (UTC microseconds), in commit order, each once."""
    for record, _position in _records_after(Path(root), qid, None):
        if record is not None and in_window(record, now, window):
            yield record
