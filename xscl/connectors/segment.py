"""Spool segment files: the on-disk record format, encoding, decoding and scanning.

A segment is one file holding consecutive spool offsets::

    file   := header record*
    header := b"XSCLSEG1" base_offset:int64-le                       (16 bytes)
    record := body_len:uint32-le crc32(body):uint32-le body
    body   := offset:int64 ts_micros:int64 stream_len:uint16 docid_len:uint32
              xml_len:uint32 stream docid xml meta_json                (little-endian)

``stream``, ``docid`` and ``xml`` are UTF-8; ``meta_json`` (the rest of the body,
possibly empty) is ``{"source": ..., "meta": {...}, "newest_before": N}``:
``newest_before`` is the newest ``ts_micros`` of every record before this one (absent
for the first record and in spools written before it existed). It makes lateness a
property of the record, decidable wherever the record is read (the streaming job's
executors), whatever the batching (``xscl.spark_plugin.job``). The CRC-32 covers the whole
body, and every body repeats its own offset, so a scan can tell a complete,
intact record from a torn or corrupt one without any other file.
Active segments are named ``<base:020d>.active``; sealed ones ``<base:020d>.seg``.
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from xscl.connectors.document import Document
from xscl.errors import SpoolEncodeError

MAGIC = b"XSCLSEG1"
HEADER = struct.Struct("<8sq")
FRAME = struct.Struct("<II")
BODY = struct.Struct("<qqHII")
HEADER_SIZE = HEADER.size
FRAME_SIZE = FRAME.size
#: Largest body a record may have (larger documents are rejected before writing).
MAX_BODY = 256 * 1024 * 1024
ACTIVE_SUFFIX = ".active"
SEALED_SUFFIX = ".seg"


def segment_name(base: int, *, sealed: bool) -> str:
    return f"{base:020d}{SEALED_SUFFIX if sealed else ACTIVE_SUFFIX}"


def parse_segment_name(name: str) -> tuple[int, bool] | None:
    """``(base, sealed)`` of a segment file name, or None for other files."""
    for suffix, sealed in ((SEALED_SUFFIX, True), (ACTIVE_SUFFIX, False)):
        if name.endswith(suffix):
            stem = name[: -len(suffix)]
            if len(stem) == 20 and stem.isdigit():
                return int(stem), sealed
    return None


def list_segments(path: Path) -> list[tuple[int, bool]]:
    """``(base, sealed)`` of every segment file in spool folder ``path``, by base."""
    found = []
    for name in os.listdir(path):
        parsed = parse_segment_name(name)
        if parsed is not None:
            found.append(parsed)
    return sorted(found)


def encode_header(base: int) -> bytes:
    return HEADER.pack(MAGIC, base)


def encode_record(offset: int, doc: Document, newest_before: int | None = None) -> bytes:
    """The framed bytes of one record; raise ``SpoolEncodeError`` if it cannot be stored.

    ``newest_before``: the newest timestamp of the records before it (module docstring).
    """
    try:
        stream = doc.stream.encode("utf-8")
        docid = doc.docid.encode("utf-8")
        xml = doc.xml.encode("utf-8")
        extra: dict[str, object] = {}
        if doc.source is not None:
            extra["source"] = doc.source
        if doc.meta:
            extra["meta"] = dict(doc.meta)
        if newest_before is not None:
            extra["newest_before"] = newest_before
        meta = json.dumps(extra, ensure_ascii=False).encode("utf-8") if extra else b""
    except UnicodeEncodeError as exc:
        raise SpoolEncodeError(f"document {doc.docid!r} is not valid Unicode: {exc}") from exc
    if len(stream) > 0xFFFF or len(docid) > 0xFFFFFFFF:
        raise SpoolEncodeError(f"stream or docid of {doc.docid!r} too long")
    body = b"".join(
        (
            BODY.pack(offset, doc.ts_micros, len(stream), len(docid), len(xml)),
            stream,
            docid,
            xml,
            meta,
        )
    )
    if len(body) > MAX_BODY:
        raise SpoolEncodeError(f"document {doc.docid!r} is {len(body)} bytes, above {MAX_BODY}")
    return FRAME.pack(len(body), zlib.crc32(body)) + body


def decode_body(body: bytes | memoryview) -> tuple[int, Document]:
    """``(offset, Document)`` of an intact body (its CRC already checked)."""
    offset, ts_micros, stream_len, docid_len, xml_len = BODY.unpack_from(body, 0)
    pos = BODY.size
    raw = bytes(body)
    stream = raw[pos : pos + stream_len].decode("utf-8")
    pos += stream_len
    docid = raw[pos : pos + docid_len].decode("utf-8")
    pos += docid_len
    xml = raw[pos : pos + xml_len].decode("utf-8")
    pos += xml_len
    source: str | None = None
    meta: dict[str, str] = {}
    newest_before: int | None = None
    if pos < len(raw):
        extra = json.loads(raw[pos:].decode("utf-8"))
        source = extra.get("source")
        meta = extra.get("meta") or {}
        newest_before = extra.get("newest_before")
    return offset, Document(stream, docid, ts_micros, xml, source, meta, newest_before)


def body_ts(body: bytes | memoryview) -> int:
    """``ts_micros`` of a body, without decoding anything else."""
    return int(BODY.unpack_from(body, 0)[1])


def body_key(body: bytes | memoryview) -> tuple[int, str, str]:
    """``(offset, stream, docid)`` of a body without decoding the XML."""
    offset, _ts, stream_len, docid_len, _xml = BODY.unpack_from(body, 0)
    pos = BODY.size
    raw = bytes(body[pos : pos + stream_len + docid_len])
    return offset, raw[:stream_len].decode("utf-8"), raw[stream_len:].decode("utf-8")


@dataclass
class SegmentScan:
    """What a full, checksum-verifying scan of one segment found."""

    base: int
    #: file position of each intact record, in offset order, plus the end of the last one
    positions: list[int] = field(default_factory=list)
    keys: list[tuple[str, str]] = field(default_factory=list)
    #: the newest ``ts_micros`` of the intact records (with ``want_keys``; None: no record)
    newest: int | None = None
    #: bytes of the file (0 if the header itself is missing or torn)
    file_size: int = 0
    #: why the scan stopped before the end of the file (None: clean end)
    problem: str | None = None
    #: True when an intact record with a later offset follows the problem
    #: (so the problem is corruption inside the segment, not a torn tail)
    followed_by_valid: bool = False
    header_ok: bool = True

    @property
    def count(self) -> int:
        return max(0, len(self.positions) - 1)

    @property
    def valid_end(self) -> int:
        return self.positions[-1] if self.positions else 0


def frame_at(data: bytes, pos: int, expected_offset: int) -> tuple[str | None, int]:
    """Check the record at ``pos``: ``(problem or None, body length)``."""
    if len(data) - pos < FRAME_SIZE:
        return "incomplete record header", 0
    body_len, crc = FRAME.unpack_from(data, pos)
    if body_len < BODY.size or body_len > MAX_BODY:
        return f"impossible record length {body_len}", 0
    if pos + FRAME_SIZE + body_len > len(data):
        return "incomplete record body", body_len
    body = memoryview(data)[pos + FRAME_SIZE : pos + FRAME_SIZE + body_len]
    if zlib.crc32(body) != crc:
        return "checksum mismatch", body_len
    (offset,) = struct.unpack_from("<q", body, 0)
    if offset != expected_offset:
        return f"record offset {offset} where {expected_offset} was expected", body_len
    return None, body_len


def scan_segment(path: Path, base: int, *, want_keys: bool) -> SegmentScan:
    """Verify every record of a segment file (CRC and offsets) and index it."""
    data = path.read_bytes()
    scan = SegmentScan(base, file_size=len(data))
    if len(data) < HEADER_SIZE or HEADER.unpack_from(data, 0) != (MAGIC, base):
        scan.header_ok = False
        scan.problem = "missing or torn segment header"
        return scan
    pos, expected = HEADER_SIZE, base
    scan.positions.append(pos)
    while pos < len(data):
        problem, body_len = frame_at(data, pos, expected)
        if problem is not None:
            scan.problem = f"{problem} at byte {pos}"
            scan.followed_by_valid = _later_record_exists(data, pos, expected)
            break
        if want_keys:
            body = memoryview(data)[pos + FRAME_SIZE :]
            _off, stream, docid = body_key(body)
            scan.keys.append((stream, docid))
            ts = body_ts(body)
            scan.newest = ts if scan.newest is None else max(scan.newest, ts)
        pos += FRAME_SIZE + body_len
        expected += 1
        scan.positions.append(pos)
    return scan


def _later_record_exists(data: bytes, pos: int, expected: int) -> bool:
    """Is there an intact record with offset ``expected`` or ``expected + 1`` after ``pos``?"""
    for wanted in (expected, expected + 1):
        needle = struct.pack("<q", wanted)
        start = pos + 1
        while True:
            hit = data.find(needle, start)
            if hit < 0:
                break
            frame_pos = hit - FRAME_SIZE
            if frame_pos > pos and frame_at(data, frame_pos, wanted)[0] is None:
                return True
            start = hit + 1
    return False
