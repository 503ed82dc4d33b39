"""A worker's recently decoded group documents, by sequence number.

A value group decodes (``codec.decode``) every stored document a batch probes and every
routed document, and a document is routed to one group per value it is stored under:
without a cache the same bytes became a ``DocState`` again in each group and each batch
(7% of a mixed workload's Python samples). The chain group, handed a snapshot
another worker wrote, rebuilds its join state from the documents this worker decoded
before, decoding only the others. A document's bytes never change once routed
(its sequence number names one spool record of one job), so a decoded document serves
every later group call of the same job in the same worker. Least recently used ones go
first past ``capacity``.

>>> from xscl.engine.groups.codec import encode
>>> from xscl.xpath import DocumentRows
>>> cache = DecodedDocs(capacity=1)
>>> data = encode("S", "d1", 10, "", 5, DocumentRows([("0", "x")], [(1, "0")], [], []))
>>> cache.get(5, data) is cache.get(5, data), cache.misses
(True, 1)
"""

from __future__ import annotations

from collections import OrderedDict

from xscl.engine.groups.codec import decode
from xscl.engine.state import DocState

#: Decoded documents a worker keeps per job by default.
DEFAULT_CAPACITY = 20_000


class DecodedDocs:
    """See the module docstring."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self.capacity = capacity
        self._docs: OrderedDict[int, DocState] = OrderedDict()
        self.misses = 0

    def get(self, seq: int, data: bytes) -> DocState:
        """The decoded document ``seq`` (``data``: its bytes, decoded on a miss)."""
        doc = self._docs.get(seq)
        if doc is None:
            self.misses += 1
            doc = self._docs[seq] = decode(data)
            if len(self._docs) > self.capacity:
                self._docs.popitem(last=False)
        else:
            self._docs.move_to_end(seq)
        return doc
