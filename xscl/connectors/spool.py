"""The durable spool: an append-only, crash-safe, deduplicated log of documents.

This is the replayable source of the streaming job (docs/architecture.md, "Connectors
and the durable spool"):
every document gets a global offset (0, 1, 2, ... with no gaps), and any range of
offsets can be read back, from any process, as often as needed, always with the
same content.

Layout of a spool directory::

    LOCK                        fcntl lock held by the single writer
    HEAD                        committed high-water mark: b"XSCLHEAD" next_offset crc32
    <base:020d>.seg             sealed segments (read-only, complete)
    <base:020d>.active          the one segment being appended to

Record format: see ``xscl.connectors.segment`` (length-prefixed, CRC-32 per record,
each record repeating its own offset).

Durability guarantees, precisely:

* ``append`` returns only after the new records are written and ``fsync``-ed, and
  then ``HEAD`` is updated. An offset returned by ``append`` (an *acknowledged*
  record) survives kill -9 of the writer and, on file systems that honour
  ``fsync``, power loss. A record ``append`` did not return may or may not be there
  after a crash, but never partly: recovery keeps it whole or drops it.
* Roll-over: a full segment is ``fsync``-ed, then atomically renamed from
  ``.active`` to ``.seg`` and the directory ``fsync``-ed, before the next segment is
  created (and its creation ``fsync``-ed in the directory too).
* Recovery on open (writer only) verifies the CRC and offset of every record of
  every segment. A bad or incomplete record at the end of the active segment is a
  torn tail from a crash: it is truncated (and reported in ``recovery``). Damage
  anywhere else (a sealed segment, or a bad record with intact records after it)
  is not something a crash produces: opening fails with ``SpoolCorruptError``
  (``XSCL-C031``) instead of silently dropping acknowledged data.
* Deduplication by (stream, docid) (spec section 1: the first delivery wins): the
  index is rebuilt on open from the verified scan, so it is exactly the set of
  keys on disk. ``append`` returns ``None`` for a duplicate, also within one batch.
* One writer: a second ``Spool`` on the same directory fails with
  ``SpoolLockedError`` (``XSCL-C030``). Any number of ``SpoolReader``s (no lock,
  other processes too) see exactly the records up to ``HEAD``, which is written
  only after the data ``fsync``, so a reader never sees a record that a crash could
  still take away, and never a torn one. ``HEAD`` itself is not ``fsync``-ed: after
  power loss it may lag (never lead) until the writer reopens.
* Letting go between appends (``suspend``, ``resume``): a writer that appends now and
  then (the job's commit, to its published spool) releases the lock in between, so
  another instance can take over, and keeps what it verified: ``resume`` takes the
  lock back and reuses its index when the folder is exactly as it left it (the
  segments, their sizes and modification times, ``HEAD`` and the retention mark),
  else recovers from scratch as a new writer would.
* Retention (``Spool.compact``, ``xscl.connectors.retention``): the oldest records can
  be dropped, a prefix of the offsets; every other record keeps its offset. Reading a
  dropped offset raises ``SpoolExpiredError`` (``XSCL-C033``); ``first_offset`` says
  where the retained records start.
"""

from __future__ import annotations

import bisect
import fcntl
import hashlib
import os
import struct
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from xscl.connectors.document import Document, check_stream_name
from xscl.connectors.durable import fsync_dir
from xscl.connectors.retention import (
    Compaction,
    compact,
    dropped_keys,
    finish,
    retained_from,
    retention_cut,
)
from xscl.connectors.segment import (
    FRAME,
    FRAME_SIZE,
    HEADER_SIZE,
    decode_body,
    encode_header,
    encode_record,
    frame_at,
    list_segments,
    scan_segment,
    segment_name,
)
from xscl.errors import SpoolCorruptError, SpoolExpiredError, SpoolLockedError

#: Default size at which the active segment is sealed and a new one started.
DEFAULT_SEGMENT_BYTES = 64 * 1024 * 1024
_HEAD = struct.Struct("<8sqI")
_HEAD_MAGIC = b"XSCLHEAD"
HEAD_NAME = "HEAD"
LOCK_NAME = "LOCK"
_PEEK = FRAME_SIZE + 8  # frame header + the record's own offset
_WALK_BLOCK = 1024 * 1024


def dedup_key(stream: str, docid: str) -> bytes:
    """16-byte BLAKE2b digest of (stream, docid): the in-memory dedup index key."""
    digest = hashlib.blake2b(digest_size=16)
    encoded = stream.encode("utf-8", "surrogatepass")
    digest.update(len(encoded).to_bytes(4, "little"))
    digest.update(encoded)
    digest.update(docid.encode("utf-8", "surrogatepass"))
    return digest.digest()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]




def read_head(path: Path) -> int:
    """The committed next offset recorded in ``HEAD`` (0 when there is none yet)."""
    for _attempt in range(5):
        try:
            data = (path / HEAD_NAME).read_bytes()
        except FileNotFoundError:
            return 0
        if len(data) >= _HEAD.size:
            magic, next_offset, crc = _HEAD.unpack_from(data, 0)
            if magic == _HEAD_MAGIC and zlib.crc32(data[:16]) == crc:
                return int(next_offset)
    raise SpoolCorruptError("HEAD file is unreadable", source=str(path / HEAD_NAME))


class _SegmentGone(Exception):
    """A segment a reader had indexed was removed (by compaction) before it read it."""


@dataclass
class _SegmentIndex:
    """Reader-side index of one segment: file position of each record it has walked."""

    base: int
    positions: list[int]
    sealed: bool

    @property
    def count(self) -> int:
        return len(self.positions) - 1


class SpoolReader:
    """Read committed records by exact offset range; usable from any process, no lock.

    Offsets are half-open ranges like Python's: ``read(10, 20)`` returns the records
    with offsets 10..19 that are committed (all of them when ``20 <= next_offset()``).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._segments: dict[int, _SegmentIndex] = {}
        self._bases: list[int] = []

    def next_offset(self) -> int:
        """One past the last committed offset (= number of committed records)."""
        return read_head(self.path)

    def latest_offset(self) -> int:
        """The last committed offset, -1 when the spool is empty."""
        return self.next_offset() - 1

    def first_offset(self) -> int:
        """The first retained offset (0 unless retention dropped records)."""
        return retained_from(self.path)

    def read(self, start: int, end: int) -> list[tuple[int, Document]]:
        """Committed records with ``start <= offset < end``, in offset order."""
        return list(self.iter_range(start, end))

    def iter_range(self, start: int, end: int) -> Iterator[tuple[int, Document]]:
        """Like ``read`` but lazily, one segment span at a time; ``SpoolExpiredError``
        when the range starts below the first retained offset."""
        end = min(end, self.next_offset())
        offset = max(start, 0)
        while offset < end:
            try:
                segment = self._segment_for(offset, end - 1)
            except _SegmentGone:
                self._check_retained(offset)
                self._forget()
                segment = self._segment_for(offset, end - 1)
            last = min(end, segment.base + segment.count)
            first_pos = segment.positions[offset - segment.base]
            end_pos = segment.positions[last - segment.base]
            try:
                data = self._pread(segment.base, first_pos, end_pos - first_pos)
            except _SegmentGone:
                self._check_retained(offset)
                self._forget()
                continue
            pos = 0
            for expected in range(offset, last):
                problem, body_len = frame_at(data, pos, expected)
                if problem is not None:
                    raise SpoolCorruptError(
                        f"{problem} at byte {first_pos + pos} of segment {segment.base}",
                        source=str(self.path),
                    )
                body = memoryview(data)[pos + FRAME_SIZE : pos + FRAME_SIZE + body_len]
                yield decode_body(body)
                pos += FRAME_SIZE + body_len
            offset = last

    def _check_retained(self, offset: int) -> None:
        first = self.first_offset()
        if offset < first:
            raise SpoolExpiredError(
                f"offset {offset} is no longer retained: the spool holds offsets {first} "
                f"to {self.next_offset() - 1} (its --retention dropped older records)",
                source=str(self.path),
            )

    def _forget(self) -> None:
        """Drop the index of every segment (compaction replaced some)."""
        self._segments.clear()
        self._bases = []

    def _open(self, base: int) -> int:
        for sealed in (False, True):
            try:
                return os.open(self.path / segment_name(base, sealed=sealed), os.O_RDONLY)
            except FileNotFoundError:
                continue
        raise _SegmentGone(base)

    def _pread(self, base: int, pos: int, size: int) -> bytes:
        fd = self._open(base)
        try:
            data = os.pread(fd, size, pos)
        finally:
            os.close(fd)
        if len(data) != size:
            raise SpoolCorruptError(
                f"segment {base} is shorter than indexed", source=str(self.path)
            )
        return data

    def _relist(self) -> None:
        listed = list_segments(self.path)
        for base, sealed in listed:
            known = self._segments.get(base)
            if known is None:
                self._segments[base] = _SegmentIndex(base, [HEADER_SIZE], sealed)
            elif sealed:
                known.sealed = True
        self._bases = sorted(self._segments)

    def _segment_for(self, offset: int, until: int) -> _SegmentIndex:
        """The segment holding ``offset``, its index walked up to ``until`` if it has it."""
        for attempt in range(2):
            if attempt or not self._bases:
                self._relist()
            index = bisect.bisect_right(self._bases, offset) - 1
            if index >= 0:
                segment = self._segments[self._bases[index]]
                self._walk(segment, max(offset, until))
                if offset < segment.base + segment.count:
                    return segment
        self._check_retained(offset)
        raise SpoolCorruptError(
            f"committed offset {offset} not found in any segment", source=str(self.path)
        )

    def _walk(self, segment: _SegmentIndex, offset: int) -> None:
        """Extend ``segment.positions`` until it covers ``offset`` or the file ends.

        Only record headers are read (in blocks); checksums are verified on ``read``.
        """
        if offset < segment.base + segment.count:
            return
        fd = self._open(segment.base)
        try:
            size = os.fstat(fd).st_size
            pos = segment.positions[-1]
            expected = segment.base + segment.count
            block, block_pos = b"", pos
            while expected <= offset and pos + _PEEK <= size:
                if pos + _PEEK > block_pos + len(block):
                    block, block_pos = os.pread(fd, _WALK_BLOCK, pos), pos
                body_len, _crc = FRAME.unpack_from(block, pos - block_pos)
                (record_offset,) = struct.unpack_from("<q", block, pos - block_pos + FRAME_SIZE)
                if record_offset != expected or pos + FRAME_SIZE + body_len > size:
                    raise SpoolCorruptError(
                        f"segment {segment.base}: bad record at byte {pos}", source=str(self.path)
                    )
                pos += FRAME_SIZE + body_len
                expected += 1
                segment.positions.append(pos)
        finally:
            os.close(fd)


@dataclass(frozen=True)
class RecoveryReport:
    """What opening the spool found and repaired."""

    segments: int
    records: int
    truncated_bytes: int
    problem: str | None


class Spool:
    """The single writer of a spool directory (see the module docstring)."""

    def __init__(
        self,
        path: str | Path,
        *,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        sync: bool = True,
    ) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.segment_bytes = segment_bytes
        self.sync = sync
        self._lock_fd = -1
        self._lock()
        self._index: dict[bytes, int] = {}
        self._active_fd = -1
        #: the folder as ``suspend`` left it (None: not suspended)
        self._left: tuple[object, ...] | None = None
        try:
            self.recovery = self._recover()
        except BaseException:
            self.close()
            raise
        self.reader = SpoolReader(self.path)

    # -- recovery -------------------------------------------------------------------
    def _recover(self) -> RecoveryReport:
        #: the first retained offset; a compaction a crash interrupted is finished first
        self._first = retained_from(self.path)
        finish(self.path, self._first)
        segments = list_segments(self.path)
        actives = [base for base, sealed in segments if not sealed]
        if len(actives) > 1 or (actives and actives[0] != segments[-1][0]):
            raise SpoolCorruptError(
                "more than one active segment, or one before a sealed one", source=str(self.path)
            )
        next_offset, truncated, problem = self._first, 0, None
        newest: int | None = None
        for base, sealed in segments:
            if base != next_offset:
                raise SpoolCorruptError(
                    f"segment {base} should start at offset {next_offset}", source=str(self.path)
                )
            name = self.path / segment_name(base, sealed=sealed)
            scan = scan_segment(name, base, want_keys=True)
            if scan.problem is not None:
                torn_tail = (
                    not sealed
                    and not scan.followed_by_valid
                    and (scan.header_ok or scan.file_size < HEADER_SIZE)
                )
                if not torn_tail:
                    raise SpoolCorruptError(f"{scan.problem}", source=str(name))
                problem = scan.problem
                keep = scan.valid_end if scan.header_ok else 0
                truncated = scan.file_size - keep
                with open(name, "r+b") as handle:
                    handle.truncate(keep)
                    if not scan.header_ok:
                        handle.write(encode_header(base))
                    handle.flush()
                    os.fsync(handle.fileno())
            for offset, (stream, docid) in enumerate(scan.keys, start=base):
                self._index.setdefault(dedup_key(stream, docid), offset)
            if scan.newest is not None:
                newest = scan.newest if newest is None else max(newest, scan.newest)
            next_offset = base + len(scan.keys)
        for key in dropped_keys(self.path):
            self._index.setdefault(key, -1)  # dropped by retention: still a duplicate
        self._next = next_offset
        #: the newest timestamp of every record: each new record's ``newest_before``
        self._newest = newest
        if actives:
            self._active_base = actives[0]
            self._active_fd = os.open(
                self.path / segment_name(self._active_base, sealed=False), os.O_WRONLY | os.O_APPEND
            )
            self._active_size = os.fstat(self._active_fd).st_size
            self._active_count = next_offset - self._active_base
        else:
            self._start_segment(next_offset)
        self._write_head()
        return RecoveryReport(len(segments), next_offset, truncated, problem)

    # -- writing ----------------------------------------------------------------------
    def _start_segment(self, base: int) -> None:
        self._active_base = base
        name = self.path / segment_name(self._active_base, sealed=False)
        self._active_fd = os.open(name, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o644)
        _write_all(self._active_fd, encode_header(self._active_base))
        if self.sync:
            os.fsync(self._active_fd)
            fsync_dir(self.path)
        self._active_size = HEADER_SIZE
        self._active_count = 0

    def _seal_segment(self, next_base: int) -> None:
        if self.sync:
            os.fsync(self._active_fd)
        os.close(self._active_fd)
        self._active_fd = -1
        os.rename(
            self.path / segment_name(self._active_base, sealed=False),
            self.path / segment_name(self._active_base, sealed=True),
        )
        if self.sync:
            fsync_dir(self.path)
        self._start_segment(next_base)

    def _write_head(self) -> None:
        packed = _HEAD.pack(_HEAD_MAGIC, self._next, 0)[:16]
        data = packed + struct.pack("<I", zlib.crc32(packed))
        fd = os.open(self.path / HEAD_NAME, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.pwrite(fd, data, 0)
        finally:
            os.close(fd)

    def append(self, docs: Iterable[Document]) -> list[int | None]:
        """Append ``docs`` durably; their offsets, ``None`` for each duplicate.

        Every document is validated and encoded before anything is written, so a
        bad document (``ConnectorError``) leaves the spool unchanged.
        """
        if self._active_fd < 0:
            raise ValueError("spool is closed")
        planned: list[int | None] = []
        records: list[tuple[bytes, bytes]] = []
        newest = self._newest
        batch_keys: set[bytes] = set()
        for doc in docs:
            check_stream_name(doc.stream)
            key = dedup_key(doc.stream, doc.docid)
            if key in self._index or key in batch_keys:
                planned.append(None)
                continue
            offset = self._next + len(records)
            records.append((key, encode_record(offset, doc, newest)))
            newest = doc.ts_micros if newest is None else max(newest, doc.ts_micros)
            batch_keys.add(key)
            planned.append(offset)
        if not records:
            return planned
        try:
            self._write_records(records)
        except BaseException:
            # The file may now end in a partial record: stop writing; reopening recovers.
            self.close()
            raise
        for key, _record in records:
            self._index[key] = self._next
            self._next += 1
        self._newest = newest
        self._write_head()
        return planned

    def _write_records(self, records: list[tuple[bytes, bytes]]) -> None:
        pending: list[bytes] = []
        for position, (_key, record) in enumerate(records):
            if self._active_count and self._active_size + len(record) > self.segment_bytes:
                _write_all(self._active_fd, b"".join(pending))
                pending.clear()
                self._seal_segment(self._next + position)
            pending.append(record)
            self._active_size += len(record)
            self._active_count += 1
        _write_all(self._active_fd, b"".join(pending))
        if self.sync:
            os.fsync(self._active_fd)

    def compact(self, retention: int) -> Compaction:
        """Drop the records older than ``retention`` microseconds (``connectors.retention``:
        the policy and the crash-safe steps); the active segment is kept whole."""
        if self._active_fd < 0:
            raise ValueError("spool is closed")
        if self._newest is None:
            return Compaction(self._first, self._first, 0, 0, False)
        sealed_end = self._active_base
        cut = retention_cut(self.path, self._first, sealed_end, self._newest, retention)
        done = compact(self.path, self._first, cut, sealed_end)
        self._first = done.first
        return done

    # -- reading and queries ------------------------------------------------------------
    def next_offset(self) -> int:
        return self._next

    def first_offset(self) -> int:
        """The first retained offset (0 unless retention dropped records)."""
        return self._first

    def latest_offset(self) -> int:
        """The last committed offset, -1 when the spool is empty."""
        return self._next - 1

    def offset_of(self, stream: str, docid: str) -> int | None:
        """The offset of the document with this key (-1: dropped by retention), or None."""
        return self._index.get(dedup_key(stream, docid))

    def __contains__(self, key: tuple[str, str]) -> bool:
        return dedup_key(*key) in self._index

    def __len__(self) -> int:
        return self._next - self._first

    def read(self, start: int, end: int) -> list[tuple[int, Document]]:
        """Committed records with ``start <= offset < end`` (see ``SpoolReader.read``)."""
        return self.reader.read(start, end)

    def suspend(self) -> None:
        """Release the lock and the active segment, keeping the index (``resume``)."""
        if self._active_fd < 0:
            raise ValueError("spool is closed")
        os.close(self._active_fd)
        self._active_fd = -1
        self._left = self._fingerprint()
        self._unlock()

    def resume(self) -> bool:
        """Take the lock back (``SpoolLockedError`` while another writer holds it).
        True: the folder is as ``suspend`` left it, and the index is reused; False:
        something else wrote to it, and it was recovered from scratch."""
        if self._left is None:
            raise ValueError("spool is not suspended")
        self._lock()
        left, self._left = self._left, None
        try:
            if self._fingerprint() == left:
                name = self.path / segment_name(self._active_base, sealed=False)
                self._active_fd = os.open(name, os.O_WRONLY | os.O_APPEND)
                return True
            self._index = {}
            self.recovery = self._recover()
        except BaseException:
            self.close()
            raise
        return False

    def _lock(self) -> None:
        """Take the writer lock (``SpoolLockedError`` while another writer holds it)."""
        fd = os.open(self.path / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise SpoolLockedError(
                "another writer holds the spool lock", source=str(self.path / LOCK_NAME)
            ) from None
        self._lock_fd = fd

    def _unlock(self) -> None:
        """Release the writer lock (idempotent)."""
        if self._lock_fd >= 0:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = -1

    def _fingerprint(self) -> tuple[object, ...]:
        """What the folder holds, as far as a writer's index depends on it."""
        files = []
        for base, sealed in list_segments(self.path):
            stat = os.stat(self.path / segment_name(base, sealed=sealed))
            files.append((base, sealed, stat.st_size, stat.st_mtime_ns))
        try:
            head = (self.path / HEAD_NAME).read_bytes()
        except FileNotFoundError:
            head = b""
        return (tuple(files), head, retained_from(self.path))

    def close(self) -> None:
        """Close the active segment and release the writer lock (idempotent)."""
        if self._active_fd >= 0:
            os.close(self._active_fd)
            self._active_fd = -1
        self._unlock()

    def __enter__(self) -> Spool:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
