"""Blocks (tree patterns) of the reference evaluator: spec sections 1 and 3.1."""

from __future__ import annotations

import pytest

from xscl.lang.ast import Block, FunctionPredicate, NodeTest, Query, Step
from xscl.lang.parser import parse_query
from xscl.reference import Document, EvalStats, evaluate_query, make_document

ATOM = "http://www.w3.org/2005/Atom"


def _doc(xml: str, docid: str = "d", ts: int = 0, stream: str = "S") -> Document:
    return make_document(stream, docid, ts, xml)


def _select(query: str, xml: str, stats: EvalStats | None = None) -> list[str]:
    """The output XML of a one-block query on one document."""
    records = evaluate_query(parse_query(query), [_doc(xml)], stats=stats)
    return [r.xml for r in records]


def _matches(query: str, xml: str) -> bool:
    return bool(evaluate_query(parse_query(query), [_doc(xml)]))


# -- node ids and string values (spec 1) ---------------------------------------

NODE_DOC = (
    '<r xmlns:x="urn:x" xml:lang="en"><a x:k="1">one<!--c-->two<b>in</b>three</a>'
    "<a>  caf\u0065\u0301 \n</a></r>"
)


def _join_nodes(block: str, var: str) -> list[tuple[str, str]]:
    """(node id, value) of ``var`` across results of ``block JOIN {var=var', INF} block'``."""
    other = block.replace(f"->{var}", f"->{var}'")
    query = parse_query(f"{block} JOIN {{{var}={var}', INF}} {other}")
    docs = [_doc(NODE_DOC, "d1"), _doc(NODE_DOC, "d2")]
    records = evaluate_query(query, docs)
    return sorted({(dict(r.nodes)[var], dict(r.values)[var]) for r in records})


def test_element_ids_are_preorder_and_values_are_normalised() -> None:
    assert _join_nodes("S//a->v", "v") == [("1", "onetwointhree"), ("3", "caf\u00e9")]
    assert _join_nodes("S/r->v", "v") == [("0", "onetwointhree  caf\u00e9")]


def test_attribute_ids_use_the_prefix_as_written() -> None:
    assert _join_nodes("S//@lang->v", "v") == [("0/@xml:lang", "en")]
    assert _join_nodes("S//@k->v", "v") == [("1/@x:k", "1")]


def test_text_nodes_are_split_by_comments_and_elements() -> None:
    assert _join_nodes("S//a/text()->v", "v") == [
        ("1/text()[1]", "one"),
        ("1/text()[2]", "two"),
        ("1/text()[3]", "three"),
        ("3/text()[1]", "caf\u00e9"),
    ]


# -- axes and name tests (spec 3.1) --------------------------------------------


def test_first_step_child_matches_only_the_root() -> None:
    assert _matches("S/item", "<item><item/></item>")
    assert not _matches("S/item", "<rss><item/></rss>")
    assert _matches("S//item", "<item/>")  # // from the document node includes the root


def test_descendant_excludes_context_but_attributes_include_it() -> None:
    assert not _matches("S/a[.//a]", "<a><b/></a>")
    assert _matches("S/a[.//a]", "<a><b><a/></b></a>")
    assert _matches("S/a[.//@k]", '<a k="1"/>')
    assert _matches("S/a[.//@k]", '<a><b k="1"/></a>')
    assert not _matches("S/a[./b//@k]", '<a k="1"><b/></a>')


def test_wildcard_and_text_tests() -> None:
    assert _select("SELECT v FROM S/r/*->v", "<r>x<p>1</p><q>2</q></r>") == [
        '<result query="q1"><var name="v"><p>1</p></var></result>'
    ]
    assert _matches("S/r[text()]", "<r>x<p/></r>")
    assert not _matches("S/r[text()]", "<r><p>x</p></r>")
    assert _matches("S/r[.//text() = 'x']", "<r><p>x</p></r>")


def test_lang_matches_xml_lang_by_local_name() -> None:
    assert _matches("S/e[@lang = 'en']", '<e xml:lang="en"/>')
    assert _matches("S/e[@xml:lang = 'en']", '<e xml:lang="en"/>')
    assert not _matches("S/e[@xml:lang]", '<e lang="en"/>')


ATOM_ENTRY = (
    f'<feed xmlns="{ATOM}"><entry><title>Spark</title>'
    "<author><name>Ann</name></author></entry></feed>"
)


def test_atom_with_unprefixed_tests_matches_by_local_name() -> None:
    assert _matches("S//entry[./author/name = 'Ann'][title]", ATOM_ENTRY)


def test_atom_with_declared_prefix_matches_by_namespace() -> None:
    good = parse_query("S//a:entry[a:title]", namespaces=(("a", ATOM),))
    other = parse_query("S//a:entry", namespaces=(("a", "urn:other"),))
    assert evaluate_query(good, [_doc(ATOM_ENTRY)])
    assert not evaluate_query(other, [_doc(ATOM_ENTRY)])
    assert not evaluate_query(good, [_doc("<entry><title/></entry>")])


# -- comparisons -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("predicate", "expected"),
    [
        ("[p = 'b']", True),
        ("[p = ' b']", False),  # the literal is not stripped, the value is
        ("[p != 'b']", True),  # existential: some p differs from 'b'
        ("[p < 'b']", False),
        ("[p <= 'b']", True),
        ("[p > 'c']", False),
        ("[p >= 'c']", True),
        ("[d > '2006-05-31']", True),  # ISO dates compare as strings
        ("[n = 10]", True),
        ("[n = 10.0]", True),  # numerically
        ("[n = '10.0']", False),  # as strings
        ("[n > 9]", True),
        ("[n < 9]", False),
        ("[n < '9']", True),  # code-point order: '10' < '9'
        ("[p != 1]", False),  # non-numbers make numeric comparisons false, also !=
        ("[e = 1000]", True),  # 1e3
        ("[m = -0.5]", True),
    ],
)
def test_comparisons(predicate: str, expected: bool) -> None:
    xml = "<r><p>b</p><p> c </p><d>2006-06-01</d><n> 10 </n><e>1e3</e><m>-.5</m></r>"
    assert _matches(f"S/r{predicate}", xml) is expected


def test_variable_in_compared_path_binds_only_satisfying_nodes() -> None:
    xml = "<r><c>y</c><c>x</c><c>x</c></r>"
    out = _select("SELECT v FROM S/r[./c->v = 'x']", xml)
    assert out == ['<result query="q1"><var name="v"><c>x</c></var></result>']


def test_comparison_on_context_node() -> None:
    assert _matches("S/r[./p[. = 'b']]", "<r><p>b</p></r>")
    assert not _matches("S/r[./p[. = 'c']]", "<r><p>b</p></r>")


# -- function predicates ----------------------------------------------------------

FN_DOC = (
    f'<feed xmlns="{ATOM}"><entry><title>Apache Spark 4</title>'
    '<link href="https://spark.apache.org"/><author>A</author><author>B</author></entry></feed>'
)


@pytest.mark.parametrize(
    ("fn", "expected"),
    [
        ("contains(./title, 'Spark')", True),
        ("contains(title, 'spark')", False),
        ("starts-with(link/@href, 'https')", True),
        ("ends-with(title, '4')", True),
        ("lower-case(title) = 'apache spark 4'", True),
        ("upper-case(title) = 'APACHE SPARK 4'", True),
        ("matches(title, '^Apache\\s+Spark')", True),
        ("exists(link)", True),
        ("exists(summary)", False),
        ("empty(summary)", True),
        ("count(author) = 2", True),
        ("string-length(title) > 100", False),
        ("not(author = 'C')", True),
        ("count(author)", True),  # 2 is EBV true, not a position test (entry is 1st)
        ("count(author) - 2", False),  # 0 is EBV false
        ("number('NaN')", False),
    ],
)
def test_function_predicates(fn: str, expected: bool) -> None:
    assert _matches(f"S//entry[{fn}]", FN_DOC) is expected


def test_function_errors_are_false_and_counted() -> None:
    stats = EvalStats()
    # XPath 2.0: contains() over two author nodes is a type error.
    assert _select("S//entry[contains(author, 'A')]", FN_DOC, stats) == []
    assert stats.function_errors == 1
    assert "XPTY0004" in stats.error_samples[0]


@pytest.mark.parametrize(("number", "expected"), [("5", True), ("0", False), ("1", True)])
def test_bare_number_predicate_is_ebv_not_position(number: str, expected: bool) -> None:
    # The parser only accepts function calls here; the AST can hold any XPath expression.
    step = Step("//", NodeTest("element", "p"), predicates=(FunctionPredicate(number),))
    query = Query("q1", (Block("S", (step,)),))
    assert bool(evaluate_query(query, [_doc("<r><p/></r>")])) is expected


def test_function_predicate_on_attribute_context() -> None:
    assert _matches("S//link/@href[starts-with(., 'https')]", FN_DOC)


# -- output (spec 3.4) -----------------------------------------------------------


def test_select_attribute_and_text_become_text() -> None:
    query = "SELECT h, t FROM S//entry[./link/@href->h][./title/text()->t]"
    assert _select(query, FN_DOC) == [
        '<result query="q1"><var name="h">https://spark.apache.org</var>'
        '<var name="t">Apache Spark 4</var></result>'
    ]


def test_select_star_without_steps_copies_the_root() -> None:
    assert _select("S", "<a><b/></a>") == ['<result query="q1"><a><b/></a></result>']


def test_select_star_without_join_var_takes_first_match_in_document_order() -> None:
    out = _select("S//p[q]", "<r><p id='1'><q/></p><p id='2'><q/></p></r>")
    assert out == ['<result query="q1"><p id="1"><q/></p></result>']


def test_atom_copy_keeps_its_namespace() -> None:
    out = _select("S//entry/title", ATOM_ENTRY)
    assert out == [
        f'<result query="q1"><entry xmlns="{ATOM}"><title>Spark</title>'
        "<author><name>Ann</name></author></entry></result>"
    ]
