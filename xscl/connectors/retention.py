"""Spool retention: which old records a spool drops, and the crash-safe compaction that
drops them (docs/architecture.md, "Connectors and the durable spool").

**The policy.** ``--retention D`` keeps every record that arrived while the spool's
clock (the newest ``ts`` of the records before and including it) was within ``D`` of
the spool's newest ``ts``. The spool's clock only grows with the offset, so the dropped
records are a prefix of the offsets: ``[first, cut)``. Offsets never change: a record
keeps its offset for as long as it is retained, so the job's checkpoints and the
registry's ``since`` offsets stay valid. Only sealed segments are compacted; the
active segment is kept whole.

**The files** (beside the segments)::

    RETAINED        {"first": N}: offsets below N are gone (absent: 0)
    DROPPED.keys    the 16-byte dedup keys of every dropped record (first delivery
                    still wins: a dropped document delivered again is a duplicate)

**Compaction, step by step**, each step durable before the next (temporary file,
fsync, rename, fsync of the folder):

1. ``DROPPED.keys`` rewritten with the keys of ``[first, cut)`` added;
2. ``RETAINED`` rewritten to ``{"first": cut}`` (the commit point);
3. the segment holding ``cut`` copied from ``cut`` on into ``<cut>.seg`` (unless
   ``cut`` is a segment's base already);
4. the segments below ``cut`` removed.

A crash before 2 leaves the old spool (extra keys in ``DROPPED.keys`` name records
still present: harmless). After 2, opening the spool (``finish``) redoes 3 and 4, so
the spool is always either before or after a compaction. A reader never sees half
of one: ``<cut>.seg`` appears only complete (renamed after its fsync), and until the
old segment is removed both hold the same records at the same offsets.

Runs in the spool's writer (``xscl poll --retention``, ``xscl spool compact``), under
its lock; ``retained_from`` also in readers. No Spark import.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from xscl.connectors.durable import fsync_dir, write_atomically
from xscl.connectors.segment import (
    FRAME_SIZE,
    HEADER_SIZE,
    body_key,
    body_ts,
    encode_header,
    list_segments,
    scan_segment,
    segment_name,
)
from xscl.errors import SpoolCorruptError

RETAINED_NAME = "RETAINED"
DROPPED_KEYS_NAME = "DROPPED.keys"
KEY_BYTES = 16


@dataclass(frozen=True)
class Compaction:
    """What one compaction did."""

    #: the first retained offset before and after
    first_before: int
    first: int
    #: records dropped, segments removed, the segment rewritten from ``first`` (if any)
    dropped: int
    removed_segments: int
    rewrote: bool


def retained_from(path: Path) -> int:
    """The first retained offset of the spool at ``path`` (0 when nothing was dropped)."""
    try:
        data = json.loads((path / RETAINED_NAME).read_text(encoding="utf-8"))
        return int(data["first"])
    except FileNotFoundError:
        return 0
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SpoolCorruptError(f"unreadable {RETAINED_NAME}: {exc}", source=str(path)) from exc


def dropped_keys(path: Path) -> set[bytes]:
    """The dedup keys of every record retention dropped."""
    try:
        data = (path / DROPPED_KEYS_NAME).read_bytes()
    except FileNotFoundError:
        return set()
    if len(data) % KEY_BYTES:
        raise SpoolCorruptError(f"{DROPPED_KEYS_NAME} is torn", source=str(path))
    return {data[i : i + KEY_BYTES] for i in range(0, len(data), KEY_BYTES)}


def retention_cut(path: Path, first: int, sealed_end: int, newest: int, retention: int) -> int:
    """The first offset to keep under ``retention`` (microseconds), given the spool's
    ``newest`` ts: the first record, from ``first`` on, whose clock (the newest ts up to
    and including it) is within ``retention`` of ``newest``; at most ``sealed_end``."""
    horizon = newest - retention
    clock: int | None = None
    for base, end in sealed_spans(path, first, sealed_end):
        data = (path / segment_name(base, sealed=True)).read_bytes()
        pos = HEADER_SIZE
        for offset in range(base, end):
            body_len = int.from_bytes(data[pos : pos + 4], "little")
            body = memoryview(data)[pos + FRAME_SIZE : pos + FRAME_SIZE + body_len]
            ts = body_ts(body)
            clock = ts if clock is None else max(clock, ts)
            if offset >= first and clock >= horizon:
                return offset
            pos += FRAME_SIZE + body_len
    return sealed_end


def sealed_spans(path: Path, first: int, sealed_end: int) -> list[tuple[int, int]]:
    """``(base, end)`` of each sealed segment holding offsets in ``[first, sealed_end)``."""
    bases = sorted(b for b, sealed in list_segments(path) if sealed and b < sealed_end)
    spans = list(zip(bases, [*bases[1:], sealed_end], strict=False))
    return [(b, e) for b, e in spans if e > first]


def compact(path: Path, first: int, cut: int, sealed_end: int) -> Compaction:
    """Drop the records ``[first, cut)`` of the spool at ``path`` (steps 1-4 of the module
    docstring). The caller holds the writer's lock; ``cut <= sealed_end``."""
    from xscl.connectors.spool import dedup_key  # the spool imports this module

    if cut <= first:
        return Compaction(first, first, 0, 0, False)
    keys = dropped_keys(path)
    before = len(keys)
    for base, end in sealed_spans(path, first, cut):
        scan = scan_segment(path / segment_name(base, sealed=True), base, want_keys=True)
        for offset, (stream, docid) in enumerate(scan.keys[: end - base], start=base):
            if first <= offset < cut:
                keys.add(dedup_key(stream, docid))
    if len(keys) != before:
        write_atomically(path / DROPPED_KEYS_NAME, b"".join(sorted(keys)))
    write_atomically(path / RETAINED_NAME, json.dumps({"first": cut}).encode())
    removed, rewrote = finish(path, cut)
    return Compaction(first, cut, cut - first, removed, rewrote)


def finish(path: Path, first: int) -> tuple[int, bool]:
    """Make the segments agree with ``RETAINED`` (steps 3 and 4); idempotent, run on
    every open. The segments removed, and whether one was rewritten."""
    for leftover in path.glob(".*.seg.tmp"):
        leftover.unlink()
    listed = list_segments(path)
    below = [(b, sealed) for b, sealed in listed if b < first]
    if not below:
        return 0, False
    rewrote = False
    if all(b != first for b, _ in listed):
        base, sealed = below[-1]
        if not sealed:
            raise SpoolCorruptError(
                f"{RETAINED_NAME} cuts the active segment {base} at {first}", source=str(path)
            )
        _rewrite_from(path, base, first)
        rewrote = True
    for base, sealed in below:
        (path / segment_name(base, sealed=sealed)).unlink()
    fsync_dir(path)
    return len(below), rewrote


def _rewrite_from(path: Path, base: int, first: int) -> None:
    """Copy the records of sealed segment ``base`` from offset ``first`` on into
    ``<first>.seg``: a temporary file, fsync, rename, fsync of the folder."""
    source = path / segment_name(base, sealed=True)
    scan = scan_segment(source, base, want_keys=False)
    if scan.problem is not None or first >= base + scan.count:
        raise SpoolCorruptError(
            f"cannot compact segment {base} from offset {first}: {scan.problem or 'too short'}",
            source=str(source),
        )
    data = source.read_bytes()
    start = scan.positions[first - base]
    body = memoryview(data)[start + FRAME_SIZE :]
    if body_key(body)[0] != first:
        raise SpoolCorruptError(f"segment {base}: offset {first} misplaced", source=str(source))
    target = path / segment_name(first, sealed=True)
    temporary = path / f".{target.name}.tmp"
    with open(temporary, "wb") as handle:
        handle.write(encode_header(first))
        handle.write(memoryview(data)[start : scan.valid_end])
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, target)
    fsync_dir(path)


