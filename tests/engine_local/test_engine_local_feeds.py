"""Local engine = reference on real feed items (../shared/data/feeds-stream-youthopp).

Each daily snapshot of the feed is read in order; every ``<item>`` becomes a
document of stream ``feed`` (raw form: the item element as published), docid =
its guid, ts = its pubDate. Items recur from day to day: re-deliveries the
engines must ignore. Queries are written by hand (authors, categories, chains)
plus queries generated as in thesis 6.6.1 (k value joins between leaves).
"""

from __future__ import annotations

import email.utils
import json
import random
from pathlib import Path

import pytest
from lxml import etree

from xscl import reference
from xscl.connectors.document import Document
from xscl.engine import LocalEngine
from xscl.lang.parser import parse_queries

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "feeds-stream-youthopp"

pytestmark = pytest.mark.shared_data

LEAVES = ("title", "link", "creator", "category", "guid")

HAND_WRITTEN = """
same_author: feed/item->i[./creator->a] FOLLOWED BY {a=b, 1d} feed/item->j[./creator->b];
author_and_topic: SELECT a, c FROM feed/item[./creator->a][./category->c]
    JOIN {a=b AND c=d, 12h} feed/item[./creator->b][./category->d];
topic_chain: feed/item[./category->c] FOLLOWED BY {c=d, 2d} feed/item[./category->d]
    FOLLOWED BY {d=e AND c=e, 3d} feed/item[./category->e];
"""


def feed_documents(days: int) -> list[Document]:
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
    docs: list[Document] = []
    for path in sorted(DATA.glob("*.xml"))[:days]:
        root = etree.parse(str(path), parser).getroot()
        for item in root.iter("item"):
            guid = item.findtext("guid") or item.findtext("link") or ""
            stamp = email.utils.parsedate_to_datetime(item.findtext("pubDate") or "")
            ts = int(stamp.timestamp()) * 1_000_000
            docs.append(Document("feed", guid, ts, etree.tostring(item, encoding="unicode")))
    return docs


def generated_queries(seed: int, count: int) -> str:
    """Thesis 6.6.1 style: k in 1..3 leaves per side, joined position by position."""
    rng = random.Random(seed)
    out = []
    for number in range(count):
        k = rng.randint(1, 3)
        left = rng.sample(LEAVES, k)
        right = rng.sample(LEAVES, k)
        lhs = "feed/item" + "".join(f"[./{leaf}->l{i}]" for i, leaf in enumerate(left))
        rhs = "feed/item" + "".join(f"[./{leaf}->r{i}]" for i, leaf in enumerate(right))
        eqs = " AND ".join(f"l{i}=r{i}" for i in range(k))
        kind = rng.choice(("JOIN", "FOLLOWED BY"))
        window = rng.choice(("6h", "1d", "3d", "INF"))
        out.append(f"G{number}: {lhs} {kind} {{{eqs}, {window}}} {rhs}")
    return ";\n".join(out)


def results(records: list[object]) -> set[str]:
    return {json.dumps(r.to_json_dict(), sort_keys=True) for r in records}  # type: ignore[attr-defined]


@pytest.mark.skipif(not DATA.is_dir(), reason=f"shared test data not found at {DATA}")
def test_feed_items_equal_reference() -> None:
    docs = feed_documents(days=4)
    assert len({d.docid for d in docs}) < len(docs)  # the stream re-delivers items
    text = HAND_WRITTEN + generated_queries(seed=7, count=20)
    queries = list(parse_queries(text))
    ref_docs = [reference.make_document(d.stream, d.docid, d.ts_micros, d.xml) for d in docs]
    expected = results(reference.evaluate(queries, ref_docs))  # type: ignore[arg-type]
    engine = LocalEngine(queries)
    got = results(engine.process(docs))  # type: ignore[arg-type]
    assert got == expected
    per_query = {json.loads(r)["query"] for r in got}
    assert {"same_author", "author_and_topic", "topic_chain"} <= per_query
    assert engine.template_count < len(queries)
    # arrival order does not matter
    shuffled = list(docs)
    random.Random(3).shuffle(shuffled)
    assert results(LocalEngine(queries).process(shuffled)) == expected  # type: ignore[arg-type]
