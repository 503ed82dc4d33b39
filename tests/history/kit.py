"""What the history tests share: a spool of advisories and news, the queries over it,
and the live job's part as the in-process engine makes it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from xscl.connectors.document import Document
from xscl.connectors.spool import Spool, SpoolReader
from xscl.engine import LocalEngine
from xscl.engine.output import ResultRecord
from xscl.lang.parser import parse_queries

HOUR = 3_600 * 1_000_000
QUERIES = """
coverage: adv/item[./cve->c] FOLLOWED BY {c = t, 3d} news/entry[./term->t];
alone: adv/item[./cve = 'C1'];
"""


def spooled(folder: Path, docs: Sequence[Document]) -> SpoolReader:
    with Spool(folder, sync=False) as spool:
        spool.append(docs)
    return SpoolReader(folder)


def live(text: str, reader: SpoolReader, since: int, end: int) -> list[ResultRecord]:
    """What the live job makes: the queries subscribed at offset ``since`` of a running
    engine (``add_query(only_new_documents=True)``, the job's ``since``)."""
    engine = LocalEngine([])
    for _offset, doc in reader.iter_range(0, since):
        engine.process([doc])
    for query in parse_queries(text):
        engine.add_query(query, only_new_documents=True)
    out: list[ResultRecord] = []
    for _offset, doc in reader.iter_range(since, end):
        out.extend(engine.process([doc]))
    return out


def doc(stream: str, i: int, cve: str) -> Document:
    xml = (
        f"<item><cve>{cve}</cve></item>"
        if stream == "adv"
        else f"<entry><term>{cve}</term></entry>"
    )
    return Document(stream, f"{stream}{i}", i * 6 * HOUR, xml)


def documents(count: int = 40) -> list[Document]:
    """Every 6 hours an advisory (one in three) or a news entry about C0..C3."""
    return [doc("adv" if i % 3 == 0 else "news", i, f"C{i % 4}") for i in range(count)]
