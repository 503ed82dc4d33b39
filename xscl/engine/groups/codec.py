"""Stored documents as bytes: what a join group keeps in Spark's state store.

A document travels from its Stage 1 task to every join group it is routed to, and
stays in the state of the groups that store it, as one ``marshal``-ed tuple: its
key, timestamp, sequence number, XML (output needs the matched elements) and its
witness rows (``DocumentRows``: thesis 6.3.1's R_doc and R_bin for this document).
``marshal`` of plain tuples was chosen because a group decodes only the documents
a batch can join with (``decode`` is ~1 µs per row; pickle adds nothing for these
types). The bytes are the same in every group, so they are encoded once per
document.

The value groups store and join **digests** of the string values, not the values
(``digest_rows``): feed items' values include whole articles, and each document is
stored once per value it is routed by, so the strings were most of the state (277 MiB
for 5,607 feed items; docs/benchmarks.md). A match found on digests is checked on the
real strings before its record is built (``groups``), so a digest collision can
never make a result.

Where it runs: executors (Stage 1 tasks encode, join groups decode); pure functions.

>>> from xscl.xpath import DocumentRows
>>> data = encode("S", "d1", 10, "<a/>", 5, DocumentRows([("0", "x")], [(1, "0")], [], []))
>>> doc = decode(data)
>>> (doc.docid, doc.seq, doc.values, doc.value_rows)
('d1', 5, {'0': 'x'}, [(1, '0', 'x')])
"""

from __future__ import annotations

import hashlib
import marshal

from xscl.engine.state import DocState
from xscl.xpath import DocumentRows


def digest(value: str) -> str:
    """A 96-bit digest of a non-empty string value, as text ("" stays "": empty values
    never join).

    >>> len(digest("Danny Ayers")), digest("")
    (24, '')
    """
    if not value:
        return ""
    return hashlib.blake2b(value.encode("utf-8"), digest_size=12).hexdigest()


def digest_rows(rows: DocumentRows) -> DocumentRows:
    """``rows`` with every string value replaced by its ``digest``."""
    return rows._replace(values=[(node, digest(value)) for node, value in rows.values])


def encode(stream: str, docid: str, ts: int, xml: str, seq: int, rows: DocumentRows) -> bytes:
    """One document and its witness rows as bytes."""
    return marshal.dumps(
        (
            stream,
            docid,
            ts,
            xml,
            seq,
            list(rows.values),
            list(rows.value_nodes),
            list(rows.matches),
            list(rows.bindings),
        )
    )


def decode(data: bytes) -> DocState:
    """The ``DocState`` (the join processor's indexed form) of encoded bytes."""
    stream, docid, ts, xml, seq, values, value_nodes, matches, bindings = marshal.loads(data)
    rows = DocumentRows(values, value_nodes, matches, bindings)
    return DocState.from_rows(stream, docid, ts, xml, seq, rows)


def encode_state(doc: DocState) -> bytes:
    """A ``DocState`` back to bytes (the chain group stores what its own engine made)."""
    bindings = [
        (var1, var2, node1, node2)
        for (var1, var2), down in doc.down.items()
        for node1, children in down.items()
        for node2 in children
    ]
    rows = DocumentRows(
        list(doc.values.items()),
        [(var, node) for var, node, _ in doc.value_rows],
        [(var, node) for var, nodes in doc.nodes.items() for node in nodes],
        bindings,
    )
    return encode(doc.stream, doc.docid, doc.ts, doc.xml, doc.seq, rows)

