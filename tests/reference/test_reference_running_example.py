"""The thesis running example (thesis 6.1, Table 6.2; spec section 2) on the reference evaluator."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from xscl.lang.parser import parse_queries
from xscl.reference import evaluate, make_document, parse_ts

QUERIES = """
Q1: S//book->x1[./author->x2][./title->x3]
    FOLLOWED BY {x2=x5 AND x3=x6, 1h} S//blog->x4[./author->x5][./title->x6];
Q2: S//book->x1[./author->x2][./category->x7]
    FOLLOWED BY {x2=x5 AND x7=x8, 1d} S//blog->x4[./author->x5][./category->x8];
Q3: S//blog->x4[./author->x5][./title->x6]
    FOLLOWED BY {x5=x5' AND x6=x6', 7d} S//blog->x4'[./author->x5'][./title->x6'];
"""

D1_XML = (
    "<announcements><book>"
    "<author>Danny Ayers</author><author>Andrew Watt</author>"
    "<title>Beginning RSS and Atom Programming</title>"
    "<category>Web Programming</category>"
    "</book></announcements>"
)
D2_XML = (
    "<rss><channel><item><blog>"
    "<author> Danny Ayers </author>"
    "<title>Beginning RSS and Atom Programming</title>"
    "<category>Web Programming</category>"
    "</blog></item></channel></rss>"
)


def _run() -> list[dict[str, Any]]:
    d1 = make_document("S", "d1", parse_ts("2006-06-01T10:00:00Z"), D1_XML)
    d2 = make_document("S", "d2", parse_ts("2006-06-01T10:45:00.5Z"), D2_XML)
    return [record.to_json_dict() for record in evaluate(parse_queries(QUERIES), [d2, d1])]


def test_q1_and_q2_match_once_and_q3_never() -> None:
    records = _run()
    assert [r["query"] for r in records] == ["Q1", "Q2"]


def test_q1_record_carries_docs_nodes_values_and_xml() -> None:
    q1 = _run()[0]
    assert q1["docs"] == [
        {"stream": "S", "docid": "d1", "ts": "2006-06-01T10:00:00Z"},
        {"stream": "S", "docid": "d2", "ts": "2006-06-01T10:45:00.500000Z"},
    ]
    # d1: announcements=0 book=1 author=2 author=3 title=4; d2: rss=0 channel=1 item=2
    # blog=3 author=4 title=5.
    assert q1["nodes"] == {"x2": "2", "x3": "4", "x5": "4", "x6": "5"}
    assert q1["values"] == {
        "x2": "Danny Ayers",
        "x3": "Beginning RSS and Atom Programming",
        "x5": "Danny Ayers",
        "x6": "Beginning RSS and Atom Programming",
    }
    book = D1_XML.removeprefix("<announcements>").removesuffix("</announcements>")
    blog = D2_XML.removeprefix("<rss><channel><item>").removesuffix("</item></channel></rss>")
    assert q1["xml"] == f'<result query="Q1">{book}{blog}</result>'


def test_result_id_is_the_hand_computed_sha256() -> None:
    q1 = _run()[0]
    payload = '["Q1",[["S","d1"],["S","d2"]],[["x2","2"],["x3","4"],["x5","4"],["x6","5"]]]'
    assert q1["result_id"] == hashlib.sha256(payload.encode("utf-8")).hexdigest()[:32]
    assert json.loads(payload)[0] == "Q1"


def test_q2_uses_category_values() -> None:
    q2 = _run()[1]
    assert q2["nodes"] == {"x2": "2", "x5": "4", "x7": "5", "x8": "6"}
    assert q2["values"]["x7"] == q2["values"]["x8"] == "Web Programming"


def test_q1_outside_the_window_gives_nothing() -> None:
    d1 = make_document("S", "d1", parse_ts("2006-06-01T10:00:00Z"), D1_XML)
    d2 = make_document("S", "d2", parse_ts("2006-06-01T11:00:00.000001Z"), D2_XML)
    records = evaluate(parse_queries(QUERIES), [d1, d2])
    assert [r.query for r in records] == ["Q2"]
