"""Documents' XML read back from the spool by sequence number: the job's document store.

The value groups store a document's witness rows as digests, not its XML (that would
repeat it in every group the document is routed to: 360 MiB of state for 5,607 feed
items, rewritten every batch). Only a matched document's XML is needed, to check its
values and build its result's output (``exact``); the spool already holds it,
immutable and replayable, on storage every executor reads. A document numbered
``seq`` is spool record ``routed.spool_offset(seq)``; from ``keys.PUBLISHED_BASE`` on, a
record of the job's published spool (what the join groups PUBLISH).

Where it runs: executors (value groups), once per matched document; one reader per
worker and spool (the worker's context keeps it), so its segment index is walked once.
"""

from __future__ import annotations

from pathlib import Path

from xscl.connectors.spool import SpoolReader
from xscl.engine.groups.keys import PUBLISHED_BASE
from xscl.engine.groups.routed import spool_offset
from xscl.errors import SpoolReadError


class SpoolDocuments:
    """A ``DocumentStore`` over a spool folder, and the job's published spool."""

    def __init__(self, path: str | Path, published: str | Path | None = None) -> None:
        self.path = str(path)
        self.reader = SpoolReader(path)
        self.published = None if published is None else SpoolReader(published)

    def xml(self, seq: int) -> str:
        offset = spool_offset(seq)
        reader = self.reader
        if offset >= PUBLISHED_BASE and self.published is not None:
            offset -= PUBLISHED_BASE
            reader = self.published
        for found, doc in reader.iter_range(offset, offset + 1):
            if found == offset:
                return doc.xml
        raise SpoolReadError(f"spool {reader.path}: record {offset} is missing")
