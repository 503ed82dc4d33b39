"""A folder of event files that a running CEL job reads in order (``xscl cel publish``).

Each added file is ``<seq:020d>.jsonl`` (the envelopes as given, docs/cel.md
5.1) and, written after it, ``<seq:020d>.json``: ``{"events": N, "latest":
micros}`` (how many good envelopes, the largest end among them). A file counts
once its index exists; readers take files in sequence order and stop at the
first one without an index, so the order they see never changes. Sequence
numbers are claimed with an exclusive link, so two publishers never share one.

>>> import tempfile
>>> folder = Path(tempfile.mkdtemp())
>>> source = folder / "in.jsonl"
>>> _ = source.write_text('{"stream": "S", "end": 5, "attrs": {}}\\nnot json\\n')
>>> added = add_events(folder / "events", source)
>>> added.seq, added.events, added.latest
(1, 1, 5000000)
>>> ready_files(folder / "events", after=0)
[(1, 5000000)]
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass
from pathlib import Path

from xscl.connectors.dead_letters import DeadLetter
from xscl.connectors.durable import fsync_dir, write_atomically, write_synced
from xscl.events.envelope import read_events

__all__ = ["AddedEvents", "add_events", "events_file", "events_folder", "ready_files"]


def events_folder(home: Path, name: str) -> Path:
    """Where ``xscl cel publish`` adds job ``name``'s plain events and ``xscl serve
    --cel-queries`` reads them: ``HOME/cel-events/NAME``."""
    return home / "cel-events" / name


@dataclass(frozen=True)
class AddedEvents:
    """What ``add_events`` added: its sequence number, good envelopes, largest end."""

    seq: int
    events: int
    bad: int
    latest: int | None


def events_file(folder: str | Path, seq: int) -> Path:
    """The data file of sequence number ``seq``."""
    return Path(folder) / f"{seq:020d}.jsonl"


def _index(folder: Path, seq: int) -> Path:
    return folder / f"{seq:020d}.json"


def add_events(folder: str | Path, source: str | Path) -> AddedEvents:
    """Add a JSON Lines file of envelopes to ``folder`` as its next file (durably)."""
    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    data = Path(source).read_bytes()
    events = bad = 0
    latest: int | None = None
    for _line, item in read_events(data.decode("utf-8").splitlines(), source=str(source)):
        if isinstance(item, DeadLetter):
            bad += 1
        else:
            events += 1
            latest = item.end if latest is None else max(latest, item.end)
    temporary = target / f".{uuid.uuid4().hex}.tmp"
    write_synced(temporary, data)
    seq = max((s for s, _ in _numbered(target)), default=0) + 1
    while True:
        try:
            os.link(temporary, events_file(target, seq))
            break
        except FileExistsError:
            seq += 1
    temporary.unlink()
    index = json.dumps({"events": events, "latest": latest}).encode("utf-8")
    write_atomically(_index(target, seq), index, sync_dir=False)
    fsync_dir(target)
    return AddedEvents(seq, events, bad, latest)


def _numbered(folder: Path) -> list[tuple[int, Path]]:
    if not folder.is_dir():
        return []
    return sorted((int(p.stem), p) for p in folder.glob("*.jsonl") if p.stem.isdigit())


def ready_files(folder: str | Path, after: int) -> list[tuple[int, int | None]]:
    """(seq, largest end) of the indexed files after ``after``, up to the first gap."""
    target = Path(folder)
    ready: list[tuple[int, int | None]] = []
    expected = after + 1
    for seq, _path in _numbered(target):
        if seq <= after:
            continue
        index = _index(target, seq)
        if seq != expected or not index.exists():
            break
        ready.append((seq, json.loads(index.read_text(encoding="utf-8"))["latest"]))
        expected += 1
    return ready
