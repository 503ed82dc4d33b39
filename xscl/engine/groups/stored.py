"""A group's stored documents: what its snapshot holds, indexed by the values they are
stored under.

Each entry is a document's sequence number, timestamp, the values it is stored under
in this group (``homes``; empty in the chain group, which keeps every document of its
streams) and its bytes (``codec``), decoded only when a batch needs it. The snapshot
is one ``marshal``-ed list: a group's state is read and written whole once per batch
(one blob per group was faster than one state call per value, docs/benchmarks.md).

>>> docs = StoredDocs.load(None)
>>> docs.add(StoredDoc(5, 10, ("v",), b"x")); docs.add(StoredDoc(9, 30, ("v", "w"), b"y"))
>>> docs.index["v"], docs.hot(1), docs.evict(20), docs.index["v"]
([0, 1], ['v'], 1, [0])
>>> StoredDocs.load(docs.snapshot()).docs == docs.docs
True
"""

from __future__ import annotations

import marshal
from dataclasses import dataclass, field
from typing import NamedTuple

#: The snapshot's layout version (a snapshot of another layout is refused).
SNAPSHOT_VERSION = 2


class StoredDoc(NamedTuple):
    """One stored document (see the module docstring)."""

    seq: int
    ts: int
    homes: tuple[str, ...]
    data: bytes


@dataclass
class StoredDocs:
    """A group's stored documents and an index home value -> positions."""

    docs: list[StoredDoc] = field(default_factory=list)
    index: dict[str, list[int]] = field(default_factory=dict)

    @classmethod
    def load(cls, snapshot: bytes | None) -> StoredDocs:
        if snapshot is None:
            return cls()
        version, entries = marshal.loads(snapshot)
        if version != SNAPSHOT_VERSION:
            raise ValueError(
                f"join state snapshot of layout {version}, this xscl reads layout "
                f"{SNAPSHOT_VERSION}: start the job under a new --name"
            )
        stored = cls([StoredDoc(seq, ts, tuple(homes), data) for seq, ts, homes, data in entries])
        stored.reindex()
        return stored

    def snapshot(self) -> bytes | None:
        """The state to keep (None: nothing stored)."""
        if not self.docs:
            return None
        return marshal.dumps((SNAPSHOT_VERSION, [tuple(d) for d in self.docs]))

    def reindex(self) -> None:
        self.index = {}
        for position, doc in enumerate(self.docs):
            for value in doc.homes:
                self.index.setdefault(value, []).append(position)

    def add(self, doc: StoredDoc) -> None:
        position = len(self.docs)
        self.docs.append(doc)
        for value in doc.homes:
            self.index.setdefault(value, []).append(position)

    def hot(self, threshold: int) -> list[str]:
        """Values with more than ``threshold`` documents stored under them here."""
        return sorted(v for v, positions in self.index.items() if len(positions) > threshold)

    def evict(self, horizon: int) -> int:
        """Drop documents older than ``horizon``; how many."""
        kept = [d for d in self.docs if d.ts >= horizon]
        dropped = len(self.docs) - len(kept)
        if dropped:
            self.docs = kept
            self.reindex()
        return dropped
