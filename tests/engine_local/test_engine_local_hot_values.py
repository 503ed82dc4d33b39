"""Joins with several equalities over hot values: set-equality with the reference.

Most documents share one category (the hot value) and few share the pair or
triple of values a join needs: the case where a probe by the hot value must skip
the documents another equality rules out (``PlanStep.holds``) and a FOLLOWED BY
template skips the documents on the wrong side of the new one in time
(``matcher.block_offsets``), without losing a result (docs/architecture.md,
"Probing by the most selective value"). Arrival order is drawn apart from the
timestamps, so the new document is sometimes the earlier block.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from hypothesis import given
from hypothesis import strategies as st

from tests.profiles import examples
from tests.workloads import reference_records
from xscl.connectors.document import Document
from xscl.engine import LocalEngine
from xscl.lang.parser import parse_queries

QUERIES = """
J2: S/item->x[./cat->a0][./author->a1] JOIN {a0 = b0 AND a1 = b1, 20s}
    T/item->y[./cat->b0][./author->b1];
F2: S/item->x[./cat->a0][./author->a1] FOLLOWED BY {a0 = b0 AND a1 = b1, 30s}
    S/item->y[./cat->b0][./author->b1];
F3: S/item->x[./cat->a0][./author->a1][./tag->a2] FOLLOWED BY
    {a0 = b0 AND a1 = b1 AND a2 = b2, INF} T/item->y[./cat->b0][./author->b1][./tag->b2];
X2: T/item->x[./cat->a0][./tag->a1] JOIN {a0 = b1 AND a1 = b0, 15s}
    S/item->y[./tag->b0][./cat->b1];
C3: S/item[./author->a][./cat->c] FOLLOWED BY {a = a2, 40s} S/item[./author->a2][./cat->c2]
    FOLLOWED BY {c2 = c3, 10s} T/item[./cat->c3][./tag->t3];
W2: S/item->x[./cat->a0][./author->a1][./cat = 'hot'] JOIN {a0 = b0 AND a1 = b1, 10s}
    S/item->y[./cat->b0][./author->b1];
"""

#: the hot category in about four documents of five
CATEGORIES = st.sampled_from(["hot", "hot", "hot", "hot", "cold"])
AUTHORS = st.sampled_from(["ann", "bob", "cy", "dee", "hot"])
TAGS = st.sampled_from(["t1", "t2", "t3", ""])


@st.composite
def hot_documents(draw: st.DrawFn) -> list[Document]:
    """20-40 documents, mostly of the hot category, timestamps apart from arrival."""
    count = draw(st.integers(20, 40))
    docs = []
    for i in range(count):
        tags = "".join(f"<tag>{t}</tag>" for t in draw(st.lists(TAGS, max_size=2)))
        xml = f"<item><cat>{draw(CATEGORIES)}</cat><author>{draw(AUTHORS)}</author>{tags}</item>"
        ts = draw(st.integers(0, 60)) * 1_000_000
        docs.append(Document(draw(st.sampled_from(["S", "S", "T"])), f"d{i}", ts, xml))
    return docs


def canonical(records: Sequence[dict[str, object]]) -> set[str]:
    return {json.dumps(r, sort_keys=True) for r in records}


@examples(60)
@given(docs=hot_documents())
def test_hot_value_joins_equal_reference(docs: list[Document]) -> None:
    engine = LocalEngine(parse_queries(QUERIES))
    got = canonical([r.to_json_dict() for r in engine.process(docs)])
    assert got == canonical(reference_records(QUERIES, docs))


def test_hot_value_joins_find_results() -> None:
    """The queries are not vacuous: each has a result on four hand-made documents."""
    docs = [
        Document("S", "s1", 1_000_000, "<item><cat>hot</cat><author>ann</author>"
                 "<tag>t1</tag></item>"),
        Document("S", "s2", 2_000_000, "<item><cat>hot</cat><author>ann</author>"
                 "<tag>t1</tag></item>"),
        Document("T", "t1", 3_000_000, "<item><cat>hot</cat><author>ann</author>"
                 "<tag>t1</tag></item>"),
        Document("S", "s3", 4_000_000, "<item><cat>hot</cat><author>bob</author></item>"),
    ]  # fmt: skip
    engine = LocalEngine(parse_queries(QUERIES))
    got = {r.query for r in engine.process(docs)}
    assert got == {"J2", "F2", "F3", "X2", "C3", "W2"}
