"""Small spools for the Spark tests (imported by the test modules of this folder)."""

from __future__ import annotations

from pathlib import Path

from xscl.connectors.document import Document
from xscl.connectors.spool import Spool

#: 2006-06-01T10:00:00Z in microseconds.
BASE_TS = 1_149_156_000_000_000


def make_docs(count: int, *, start: int = 0, stream: str = "S") -> list[Document]:
    """``count`` small documents, one second apart, with URL docids on every third."""
    docs = []
    for i in range(start, start + count):
        docid = f"https://example.org/item/{i}" if i % 3 == 0 else f"d{i}"
        xml = f"<item><title>t{i} &amp; é</title><author>a{i % 4}</author></item>"
        docs.append(Document(stream, docid, BASE_TS + i * 1_000_000 + i, xml))
    return docs


def fill_spool(path: Path, docs: list[Document]) -> None:
    """Append ``docs`` to the spool at ``path`` (created when missing)."""
    with Spool(path, sync=False) as spool:
        spool.append(docs)
