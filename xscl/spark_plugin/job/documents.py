"""Documents' XML read back from the spool by offset: the job's document store.

The join groups store a document's witness rows, not its XML (that would repeat it
in every group the document is routed to: 360 MiB of state for 5,607 feed items,
rewritten every batch). Only a matched document's XML is needed, to build its
result's output; the spool already holds it, immutable and replayable, on storage
every executor reads. A document numbered ``seq`` is spool record
``seq // SEQ_STRIDE``.

Where it runs: executors (join groups), once per matched document; one
``SpoolReader`` per worker and spool, so its segment index is walked once.
"""

from __future__ import annotations

from xscl.connectors.spool import SpoolReader
from xscl.engine.state import DocState
from xscl.errors import SpoolReadError
from xscl.service.live_queries import SEQ_STRIDE

#: Per Python worker: one reader per spool path.
_readers: dict[str, SpoolReader] = {}


def spool_xml(spool: str, offset: int) -> str:
    """The XML of spool record ``offset`` (executor)."""
    reader = _readers.get(spool)
    if reader is None:
        reader = _readers[spool] = SpoolReader(spool)
    for found, doc in reader.iter_range(offset, offset + 1):
        if found == offset:
            return doc.xml
    raise SpoolReadError(f"spool {spool}: record {offset} is missing")


def fill_xml(spool: str, docs: tuple[DocState, ...]) -> None:
    """Give each of ``docs`` read without its XML (``codec``) its XML from the spool."""
    for doc in docs:
        if not doc.xml:
            doc.xml = spool_xml(spool, doc.seq // SEQ_STRIDE)
