"""A group's stored documents: what its snapshot holds, indexed by the values they are
stored under.

Each entry is a document's sequence number, timestamp, the values it is stored under
in this group (``homes``; empty in the chain group, which keeps every document of its
streams), its bytes (``codec``), decoded only when a batch needs it, and its
**reach**: the widest window within which a document arriving later can still join it
(``partner_reach``), so that a document only ever joined by earlier ones is dropped
as soon as lateness allows. The snapshot
is one ``marshal``-ed list: a group's state is read and written whole once per batch
(one blob per group was faster than one state call per value, docs/benchmarks.md).
Each snapshot starts with a fresh random ``token`` (``TOKEN_BYTES``): a worker that
still holds the documents it wrote under that token reuses them instead of reading the
snapshot again (``GroupMemory``); any other snapshot, a replayed batch's older one
included, is read from its bytes.

>>> docs = StoredDocs.load(None)
>>> docs.add(StoredDoc(5, 10, ("v",), b"x")); docs.add(StoredDoc(9, 30, ("v", "w"), b"y"))
>>> docs.index["v"], docs.hot(1), docs.evict(20), docs.index["v"]
([0, 1], ['v'], 1, [0])
>>> docs.add(StoredDoc(12, 31, ("v",), b"z", 0)); docs.add(StoredDoc(14, 32, ("w",), b"q", 9))
>>> docs.evict_partners(36, 5), [d.seq for d in docs.docs]  # kept: ts >= 36 - its reach
(2, [14])
>>> snapshot = docs.snapshot()
>>> StoredDocs.load(snapshot).docs == docs.docs, token_of(snapshot) == docs.token
(True, True)
"""

from __future__ import annotations

import marshal
import os
from dataclasses import dataclass, field
from typing import Generic, NamedTuple, TypeVar

#: The snapshot's layout version (a snapshot of another layout is refused; layout 3,
#: entries without a reach, is read with the group's reach for each).
SNAPSHOT_VERSION = 4
#: A stored document's reach when it was stored without one: the group's applies.
GROUP_REACH = -1
#: Bytes of the random token a snapshot starts with.
TOKEN_BYTES = 16
Live = TypeVar("Live")


def token_of(snapshot: bytes) -> bytes:
    """The token a snapshot was written under."""
    return snapshot[:TOKEN_BYTES]


class StoredDoc(NamedTuple):
    """One stored document (see the module docstring)."""

    seq: int
    ts: int
    homes: tuple[str, ...]
    data: bytes
    #: ``partner_reach`` (None: INF; ``GROUP_REACH``: the group's)
    reach: int | None = GROUP_REACH


@dataclass
class StoredDocs:
    """A group's stored documents and an index home value -> positions."""

    docs: list[StoredDoc] = field(default_factory=list)
    index: dict[str, list[int]] = field(default_factory=dict)
    #: the token of the snapshot these documents were last written or read as
    token: bytes = b""

    @classmethod
    def load(cls, snapshot: bytes | None) -> StoredDocs:
        if snapshot is None:
            return cls()
        version, entries = marshal.loads(snapshot[TOKEN_BYTES:])
        if version not in (3, SNAPSHOT_VERSION):
            raise ValueError(
                f"join state snapshot of layout {version}, this xscl reads layout "
                f"{SNAPSHOT_VERSION}: start the job under a new --name"
            )
        stored = cls([StoredDoc(e[0], e[1], tuple(e[2]), *e[3:]) for e in entries])
        stored.reindex()
        stored.token = token_of(snapshot)
        return stored

    def snapshot(self) -> bytes | None:
        """The state to keep, under a new token (None: nothing stored)."""
        if not self.docs:
            return None
        self.token = os.urandom(TOKEN_BYTES)
        return self.token + marshal.dumps((SNAPSHOT_VERSION, [tuple(d) for d in self.docs]))

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
        return self._keep([d for d in self.docs if d.ts >= horizon])

    def evict_partners(self, base: int, reach: int | None) -> int:
        """Drop the documents no later document can join any more: older than ``base``
        (the newest timestamp a later document may have, less the allowed lateness)
        by more than their reach (``reach``, the group's, for those stored without one;
        None: INF); how many."""
        kept = []
        for doc in self.docs:
            own = reach if doc.reach == GROUP_REACH else doc.reach
            if own is None or doc.ts >= base - own:
                kept.append(doc)
        return self._keep(kept)

    def _keep(self, kept: list[StoredDoc]) -> int:
        dropped = len(self.docs) - len(kept)
        if dropped:
            self.docs = kept
            self.reindex()
        return dropped


class GroupMemory(Generic[Live]):
    """A worker's live group states, each under the token of the snapshot it wrote.

    Spark hands a group the snapshot its last successful batch wrote. When this worker
    wrote it, the documents (and what was built from them) are still here: ``take``
    returns them and the snapshot's bytes are not read again. A replayed batch gets an
    older snapshot, whose token is not the one kept, and reads its bytes.

    >>> memory: GroupMemory[str] = GroupMemory()
    >>> memory.keep(7, b"t1", "live"); memory.take(7, b"t1"), memory.take(7, b"t1")
    ('live', None)
    """

    def __init__(self) -> None:
        self._live: dict[int, tuple[bytes, Live]] = {}

    def take(self, group: int, token: bytes) -> Live | None:
        """What was kept for ``group`` under ``token`` (then forgotten), else None."""
        kept = self._live.pop(group, None)
        if kept is None or kept[0] != token:
            return None
        return kept[1]

    def keep(self, group: int, token: bytes, live: Live) -> None:
        self._live[group] = (token, live)
