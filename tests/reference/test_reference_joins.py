"""Joins, windows, chains, results and PUBLISH of the reference evaluator (spec 3.2-3.4)."""

from __future__ import annotations

import pytest

from xscl.lang.parser import parse_queries, parse_query
from xscl.reference import Document, evaluate, evaluate_query, make_document

SECOND = 1_000_000
HOUR = 3600 * SECOND


def _doc(docid: str, ts: int, xml: str, stream: str = "S") -> Document:
    return make_document(stream, docid, ts, xml)


def _pairs(query: str, docs: list[Document]) -> list[tuple[str, ...]]:
    return sorted(tuple(d.docid for d in r.docs) for r in evaluate_query(parse_query(query), docs))


def _item(value: str) -> str:
    return f"<item><a>{value}</a></item>"


# -- windows -----------------------------------------------------------------------


def test_followed_by_window_edges() -> None:
    query = "S/item[./a->x] FOLLOWED BY {x=y, 1h} S/item[./a->y]"
    base = [_doc("d1", 0, _item("v"))]
    assert _pairs(query, [*base, _doc("d2", HOUR, _item("v"))]) == [("d1", "d2")]
    assert _pairs(query, [*base, _doc("d2", HOUR + 1, _item("v"))]) == []
    assert _pairs(query, [*base, _doc("d2", 0, _item("v"))]) == []  # equal ts never follow


def test_join_is_symmetric_with_zero_window() -> None:
    query = "S/item[./a->x] JOIN {x=y, 0} S/item[./a->y]"
    same = [_doc("d1", 5, _item("v")), _doc("d2", 5, _item("v"))]
    assert _pairs(query, same) == [("d1", "d2"), ("d2", "d1")]
    apart = [_doc("d1", 5, _item("v")), _doc("d2", 6, _item("v"))]
    assert _pairs(query, apart) == []


def test_join_window_both_directions_and_inf() -> None:
    docs = [_doc("d1", 0, _item("v")), _doc("d2", 10 * SECOND, _item("v"))]
    assert _pairs("S/item[a->x] JOIN {x=y, 10s} S/item[a->y]", docs) == [
        ("d1", "d2"),
        ("d2", "d1"),
    ]
    assert _pairs("S/item[a->x] JOIN {x=y, 9999ms} S/item[a->y]", docs) == []
    assert _pairs("S/item[a->x] FOLLOWED BY {x=y, INF} S/item[a->y]", docs) == [("d1", "d2")]


def test_a_document_never_joins_itself() -> None:
    docs = [_doc("d1", 0, "<item><a>v</a><a>v</a></item>")]
    assert _pairs("S/item[a->x] JOIN {x=y, INF} S/item[a->y]", docs) == []


def test_empty_values_never_join() -> None:
    docs = [_doc("d1", 0, "<item><a> </a></item>"), _doc("d2", 1, "<item><a/></item>")]
    assert _pairs("S/item[a->x] JOIN {x=y, INF} S/item[a->y]", docs) == []
    assert _pairs("S/item[a->x] JOIN {TRUE, INF} S/item[a->y]", docs) == [
        ("d1", "d2"),
        ("d2", "d1"),
    ]


def test_same_side_equality_is_a_filter() -> None:
    query = "S/item[a->x][b->z] FOLLOWED BY {x=z AND x=y, INF} S/item[a->y]"
    good = _doc("d1", 0, "<item><a>v</a><b>v</b></item>")
    bad = _doc("d0", 0, "<item><a>v</a><b>w</b></item>")
    assert _pairs(query, [good, bad, _doc("d2", 1, _item("v"))]) == [("d1", "d2")]


# -- results --------------------------------------------------------------------------


def test_non_join_variables_are_existential() -> None:
    book = "<book><author>A</author><author>B</author><title>T</title></book>"
    blog = "<blog><author>A</author><author>B</author><title>T</title></blog>"
    docs = [_doc("d1", 0, book), _doc("d2", 1, blog)]
    # Only the titles join: the two authors on each side do not multiply results.
    by_title = (
        "S/book[author->a1][title->t1] FOLLOWED BY {t1=t2, INF} S/blog[author->a2][title->t2]"
    )
    assert len(evaluate_query(parse_query(by_title), docs)) == 1
    # When authors join, each matching author pair is its own result.
    by_author = "S/book[author->a1] FOLLOWED BY {a1=a2, INF} S/blog[author->a2]"
    records = evaluate_query(parse_query(by_author), docs)
    assert sorted(tuple(r.nodes) for r in records) == [
        (("a1", "1"), ("a2", "1")),
        (("a1", "2"), ("a2", "2")),
    ]


def test_select_star_takes_nearest_first_step_ancestor_of_join_nodes() -> None:
    xml = "<s><s><a>v</a></s><b>w</b></s>"
    query = "S//s->z[.//a->x] JOIN {x=y, INF} S//s[.//a->y]"
    records = evaluate_query(parse_query(query), [_doc("d1", 0, xml), _doc("d2", 0, xml)])
    assert len(records) == 2  # z is not a join variable: one result per document pair
    assert records[0].xml == '<result query="q1"><s><a>v</a></s><s><a>v</a></s></result>'


def test_select_non_join_variable_takes_first_in_document_order() -> None:
    query = "SELECT t, x FROM S/book[title->t][a->x] JOIN {x=y, INF} S/blog[a->y]"
    docs = [
        _doc("d1", 0, "<book><title>one</title><title>two</title><a>v</a></book>"),
        _doc("d2", 0, "<blog><a>v</a></blog>"),
    ]
    records = evaluate_query(parse_query(query), docs)
    assert [r.xml for r in records] == [
        '<result query="q1"><var name="t"><title>one</title></var>'
        '<var name="x"><a>v</a></var></result>'
    ]


# -- chains ---------------------------------------------------------------------------------

CHAIN_DOCS = [
    _doc("a", 0, _item("v")),
    _doc("b", 30 * SECOND, _item("v")),
    _doc("c", 60 * SECOND, _item("v")),
    _doc("d", 90 * SECOND, _item("v")),
]


def test_three_block_followed_by_uses_composite_interval() -> None:
    query = "S/item[a->x] FOLLOWED BY {x=y, 1m} S/item[a->y] FOLLOWED BY {y=z, 1m} S/item[a->z]"
    # (C) FOLLOWED BY {T} B needs C.end < t(B) and t(B) - C.start <= T.
    assert _pairs(query, CHAIN_DOCS) == [("a", "b", "c"), ("b", "c", "d")]


def test_three_block_join_uses_composite_interval() -> None:
    query = "S/item[a->x] JOIN {x=y, 1m} S/item[a->y] JOIN {x=z, 1m} S/item[a->z]"
    got = _pairs(query, CHAIN_DOCS)
    # Every permutation of three distinct documents spanning at most 60 s.
    expected = sorted(
        (p, q, r)
        for p in "abcd"
        for q in "abcd"
        for r in "abcd"
        if len({p, q, r}) == 3 and _span(p, q, r) <= 60
    )
    assert got == expected
    assert ("a", "c", "b") in got and ("a", "b", "d") not in got


def _span(*ids: str) -> int:
    times = {"a": 0, "b": 30, "c": 60, "d": 90}
    return max(times[i] for i in ids) - min(times[i] for i in ids)


def test_chain_predicate_may_use_any_earlier_block() -> None:
    query = "S/item[a->x] FOLLOWED BY {TRUE, INF} S/item[a->y] FOLLOWED BY {x=z, INF} S/item[a->z]"
    docs = [_doc("a", 0, _item("v")), _doc("b", 1, _item("w")), _doc("c", 2, _item("v"))]
    assert _pairs(query, docs) == [("a", "b", "c")]


# -- PUBLISH and documents ------------------------------------------------------------------


def test_publish_feeds_a_later_query() -> None:
    queries = parse_queries(
        """
        R: SELECT x FROM P/result/item/a->x[. = 'v'] ;
        P: S/item[a->x] FOLLOWED BY {x=y, INF} S/item[a->y] PUBLISH P ;
        """
    )
    docs = [_doc("d1", 0, _item("v")), _doc("d2", 7, _item("v"))]
    records = evaluate(queries, docs)
    assert [r.query for r in records] == ["P", "R"]
    published, reader = records
    assert reader.docs[0].stream == "P"
    assert reader.docs[0].docid == published.result_id
    assert reader.docs[0].ts_micros == published.end_micros == 7
    assert reader.xml == '<result query="R"><var name="x"><a>v</a></var></result>'


def test_several_queries_publish_to_one_stream() -> None:
    queries = parse_queries(
        """
        A: S/item[a = 'v'] PUBLISH P ;
        B: S/item[a = 'w'] PUBLISH P ;
        C: P/result ;
        """
    )
    docs = [_doc("d1", 0, _item("v")), _doc("d2", 1, _item("w"))]
    counts = {q: sum(r.query == q for r in evaluate(queries, docs)) for q in "ABC"}
    assert counts == {"A": 1, "B": 1, "C": 2}


def test_redelivered_docid_first_wins() -> None:
    query = "S/item[a->x] JOIN {x=y, INF} S/item[a->y]"
    docs = [_doc("d1", 0, _item("v")), _doc("d1", 0, _item("w")), _doc("d2", 0, _item("v"))]
    assert _pairs(query, docs) == [("d1", "d2"), ("d2", "d1")]
    docs = [_doc("d1", 0, _item("w")), _doc("d1", 0, _item("v")), _doc("d2", 0, _item("v"))]
    assert _pairs(query, docs) == []


def test_streams_are_separate() -> None:
    query = "S/item[a->x] JOIN {x=y, INF} T/item[a->y]"
    docs = [_doc("d1", 0, _item("v")), _doc("d1", 0, _item("v"), stream="T")]
    assert [
        (r.docs[0].stream, r.docs[1].stream) for r in evaluate_query(parse_query(query), docs)
    ] == [("S", "T")]


def test_publish_cycle_is_rejected_even_without_validation() -> None:
    queries = parse_queries("A: P/result PUBLISH Q ; B: Q/result PUBLISH P ;")
    with pytest.raises(ValueError, match="PUBLISH cycle"):
        evaluate(queries, [])


def test_select_star_with_an_attribute_first_step_outputs_text() -> None:
    records = evaluate_query(parse_query("S//@id"), [_doc("d1", 0, '<r id="7"><a id="8"/></r>')])
    assert [r.xml for r in records] == ['<result query="q1">7</result>']
