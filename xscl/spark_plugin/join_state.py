"""The streaming job's join state on disk: stored documents and their string-value index.

The join processor (``xscl.engine.LocalEngine``) needs, for each new document, the
earlier documents it can join with: those sharing a string value with it (the
thesis's R_L slices, 6.5), and for templates of K blocks those reached through up
to K-1 such hops. ``JoinStateStore`` keeps every stored document (its witness
relations, thesis 6.3.1 Algorithm 2, and its XML for the result records) in an
SQLite database with an index by string value, so the driver's memory holds what
one micro-batch can reach plus a bounded set of recently used documents (the
pipeline's ``hold_bytes``), and ``INF`` windows grow a file on disk, not the heap
(DESIGN.md invariant 4). Why not Spark's RocksDB state store is recorded in
docs/architecture.md ("Decision: the join state on disk").

Per micro-batch (driver, once per batch and per replay of it):

1. ``begin(batch_id)`` undoes whatever an earlier attempt of this batch (or a later
   one: never happens with Spark's offset log, but cheap) left, and returns the
   watermark state the batch starts from (``BatchStart``); rows are written in one
   transaction, so a kill -9 leaves a batch entirely in or entirely out;
2. ``evict(horizon)`` drops documents no window can reach any more (decided from
   the state *before* the batch, so a replay evicts the same ones);
3. ``reachable(strings, ...)`` finds the stored documents sharing one of
   ``strings``, ``in_window`` those whose timestamp lies in a range (for templates
   that place a block by scanning, e.g. ``A JOIN {TRUE, 1h} B``);
4. ``add(batch_id, docs)`` stores the batch's accepted documents, ``commit``
   records the batch's watermark state and commits the transaction.

Replay after a crash needs nothing else: everything below the batch is on disk,
everything of the batch is undone by ``begin``. Documents are stored with
``marshal`` (plain lists, dicts and tuples of str/int; fast); the file belongs to
the job like Spark's checkpoint and must not be writable by anyone untrusted.
"""

from __future__ import annotations

import marshal
import sqlite3
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xscl.engine.state import DocState
from xscl.spark_plugin.errors import JoinStateError

#: The store's file name under ``HOME/state/NAME``.
JOIN_STATE_FILE = "join.sqlite"
#: Changes whenever the stored layout changes; an older file is refused, not misread.
FORMAT = 1
#: SQLite page cache per connection (KiB, as SQLite's negative cache_size).
CACHE_KIB = 65_536

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS docs (
    id INTEGER PRIMARY KEY, batch INTEGER NOT NULL, stream TEXT NOT NULL,
    docid TEXT NOT NULL, ts INTEGER NOT NULL, seq INTEGER NOT NULL,
    xml TEXT NOT NULL, state BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS docs_ts ON docs (ts);
CREATE INDEX IF NOT EXISTS docs_batch ON docs (batch);
CREATE TABLE IF NOT EXISTS strings (
    s TEXT NOT NULL, doc INTEGER NOT NULL, PRIMARY KEY (s, doc)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS strings_doc ON strings (doc);
CREATE TABLE IF NOT EXISTS batches (
    batch INTEGER PRIMARY KEY, max_ts INTEGER, next_offset INTEGER NOT NULL,
    docs INTEGER NOT NULL);
"""


@dataclass(frozen=True)
class BatchStart:
    """The state a batch starts from: what the batch before it committed."""

    #: the latest document timestamp seen (None before any document)
    max_ts: int | None
    #: the spool offset the batch must start at (None before the first batch)
    next_offset: int | None
    #: stored documents
    docs: int


class JoinStateStore:
    """``HOME/state/NAME/join.sqlite``: see the module docstring. Driver only."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
        self._db.executescript(_SCHEMA)
        row = self._db.execute("SELECT value FROM meta WHERE key='format'").fetchone()
        if row is None:
            self._db.execute("INSERT INTO meta VALUES ('format', ?)", (FORMAT,))
        elif row[0] != FORMAT:
            raise JoinStateError(
                f"{self.path} holds join state of format {row[0]}, this version reads "
                f"{FORMAT}: start the job under a new --name (or remove its checkpoint "
                "and state together)"
            )
        self._db.execute("CREATE TEMP TABLE IF NOT EXISTS probe (s TEXT PRIMARY KEY)")
        self._db.execute("CREATE TEMP TABLE IF NOT EXISTS want (id INTEGER PRIMARY KEY)")
        self._open: int | None = None
        self._count = 0

    def close(self) -> None:
        if self._open is not None:
            self._db.execute("ROLLBACK")
            self._open = None
        self._db.close()

    # ------------------------------------------------------------ per batch
    def begin(self, batch_id: int) -> BatchStart:
        """Start ``batch_id``'s transaction, undoing any earlier attempt of it."""
        if self._open is not None:
            self._db.execute("ROLLBACK")
        self._db.execute("BEGIN IMMEDIATE")
        self._open = batch_id
        self._delete_docs("batch >= ?", batch_id)
        self._db.execute("DELETE FROM batches WHERE batch >= ?", (batch_id,))
        row = self._db.execute(
            "SELECT max_ts, next_offset, docs FROM batches ORDER BY batch DESC LIMIT 1"
        ).fetchone()
        start = BatchStart(None, None, 0) if row is None else BatchStart(row[0], row[1], row[2])
        self._count = start.docs
        return start

    def evict(self, horizon: int) -> int:
        """Drop the stored documents older than ``horizon``; how many went."""
        self._require_open()
        gone = self._delete_docs("ts < ?", horizon)
        self._count -= gone
        return gone

    def _delete_docs(self, where: str, value: int) -> int:
        """Delete the documents matching ``where`` and their strings; how many."""
        self._db.execute(
            f"DELETE FROM strings WHERE doc IN (SELECT id FROM docs WHERE {where})", (value,)
        )
        rowcount: int = self._db.execute(f"DELETE FROM docs WHERE {where}", (value,)).rowcount
        return rowcount

    def reachable(self, strings: Iterable[str], lo: int | None, hi: int | None) -> list[int]:
        """Ids of the stored documents sharing one of ``strings``, timestamped in [lo, hi]."""
        self._require_open()
        self._db.execute("DELETE FROM probe")
        self._db.executemany("INSERT OR IGNORE INTO probe VALUES (?)", ((s,) for s in strings if s))
        where, bounds = _time_range(lo, hi)
        cursor = self._db.execute(
            "SELECT id FROM docs WHERE id IN "
            f"(SELECT doc FROM strings JOIN probe USING (s)){where} ORDER BY id",
            bounds,
        )
        return [row[0] for row in cursor]

    def in_window(self, lo: int | None, hi: int | None) -> list[int]:
        """Ids of every stored document timestamped in [lo, hi]."""
        self._require_open()
        where, bounds = _time_range(lo, hi)
        cursor = self._db.execute(f"SELECT id FROM docs WHERE 1=1{where} ORDER BY id", bounds)
        return [row[0] for row in cursor]

    def fetch(self, ids: Iterable[int]) -> list[tuple[int, DocState]]:
        """The stored documents with these ids, as (id, document)."""
        self._require_open()
        self._db.execute("DELETE FROM want")
        self._db.executemany("INSERT OR IGNORE INTO want VALUES (?)", ((i,) for i in ids))
        cursor = self._db.execute(
            "SELECT id, stream, docid, ts, seq, xml, state FROM docs JOIN want USING (id) "
            "ORDER BY id"
        )
        return [(row[0], _document(row)) for row in cursor]

    def add(self, batch_id: int, docs: Iterable[DocState]) -> list[int]:
        """Store the batch's documents (their strings indexed); their ids."""
        self._require_open()
        added: list[int] = []
        for doc in docs:
            state = marshal.dumps((doc.values, doc.value_rows, doc.nodes, doc.down))
            cursor = self._db.execute(
                "INSERT INTO docs (batch, stream, docid, ts, seq, xml, state) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (batch_id, doc.stream, doc.docid, doc.ts, doc.seq, doc.xml, state),
            )
            strings = {s for _, _, s in doc.value_rows if s}
            key = cursor.lastrowid
            assert key is not None
            self._db.executemany("INSERT INTO strings VALUES (?, ?)", ((s, key) for s in strings))
            added.append(key)
        self._count += len(added)
        return added

    def commit(self, batch_id: int, max_ts: int | None, next_offset: int) -> None:
        """Record where the batch left the watermark and the spool; commit it durably."""
        if self._open != batch_id:
            raise RuntimeError(f"batch {batch_id} was not begun (open: {self._open})")
        self._db.execute(
            "INSERT INTO batches VALUES (?, ?, ?, ?)", (batch_id, max_ts, next_offset, self._count)
        )
        # only the last few batches are ever asked for (replay of the newest)
        self._db.execute("DELETE FROM batches WHERE batch < ?", (batch_id - 16,))
        self._db.execute("COMMIT")
        self._open = None

    @property
    def documents(self) -> int:
        """Stored documents (as of the open batch, or the last commit)."""
        return self._count

    def bytes_on_disk(self) -> int:
        """The database file and its write-ahead log."""
        return sum(
            p.stat().st_size
            for p in (self.path, self.path.with_name(self.path.name + "-wal"))
            if p.exists()
        )

    def _require_open(self) -> None:
        if self._open is None:
            raise RuntimeError("no batch begun: call begin(batch_id) first")


class ReachableDocuments:
    """Loads, for one batch, the stored documents its documents can join with.

    A template of K blocks joins a new document with stored ones linked to it by
    up to K-1 shared string values (thesis 6.5: R_L slices, chained); ``extend``
    probes the strings not probed yet this batch and follows ``hops`` such links.
    Only documents timestamped in [lo, hi] (the batch's span widened by the widest
    window) can match. A document found is taken from ``resident`` (the ones the
    engine still holds from earlier batches: no read, no decoding) or read and
    handed to ``load``; either way its strings are followed. Driver, once per batch
    plus once per published result whose strings are new.
    """

    def __init__(
        self,
        store: JoinStateStore,
        load: Callable[[int, DocState], None],
        *,
        hops: int,
        lo: int | None,
        hi: int | None,
        resident: Mapping[int, DocState] | None = None,
    ) -> None:
        self.store = store
        self.load = load
        self.hops = hops
        self.lo = lo
        self.hi = hi
        self.resident: Mapping[int, DocState] = resident if resident is not None else {}
        self.probed: set[str] = set()
        #: ids found this batch, and how many of them had to be read from disk
        self.found: set[int] = set()
        self.read = 0

    def load_window(self) -> None:
        """Every stored document in [lo, hi] (templates that place a block by scan)."""
        self._take(self.store.in_window(self.lo, self.hi))

    def extend(self, strings: Iterable[str]) -> None:
        """Load what ``strings`` reach in up to ``hops`` links, unless probed before."""
        frontier = {s for s in strings if s} - self.probed
        for _ in range(self.hops):
            if not frontier:
                return
            self.probed |= frontier
            frontier = self._take(self.store.reachable(frontier, self.lo, self.hi)) - self.probed

    def _take(self, ids: list[int]) -> set[str]:
        """Make the documents present; the strings they hold."""
        docs: list[DocState] = []
        missing: list[int] = []
        for key in ids:
            if key in self.found:
                continue
            self.found.add(key)
            doc = self.resident.get(key)
            if doc is None:
                missing.append(key)
            else:
                docs.append(doc)
        for key, doc in self.store.fetch(missing) if missing else ():
            self.load(key, doc)
            docs.append(doc)
        self.read += len(missing)
        return {s for doc in docs for _, _, s in doc.value_rows if s}


def _time_range(lo: int | None, hi: int | None) -> tuple[str, tuple[int, ...]]:
    where, bounds = "", []
    if lo is not None:
        where += " AND ts >= ?"
        bounds.append(lo)
    if hi is not None:
        where += " AND ts <= ?"
        bounds.append(hi)
    return where, tuple(bounds)


def _document(row: tuple[Any, ...]) -> DocState:
    """A stored row back as the engine's ``DocState`` (R_bin indexed both ways)."""
    _, stream, docid, ts, seq, xml, blob = row
    values, value_rows, nodes, down = marshal.loads(blob)
    up: dict[tuple[int, int], dict[str, list[str]]] = {}
    for pair, index in down.items():
        target = up.setdefault(pair, {})
        for node1, children in index.items():
            for node2 in children:
                target.setdefault(node2, []).append(node1)
    return DocState(stream, docid, ts, xml, seq, values, value_rows, nodes, down, up)
