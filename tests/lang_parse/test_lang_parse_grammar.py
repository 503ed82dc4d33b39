"""Every feature of the XSCL grammar (spec/XSCL.md section 2) parses to the documented AST."""

from __future__ import annotations

from decimal import Decimal

import pytest

from xscl.lang import XsclSyntaxError, parse_file, parse_queries, parse_query
from xscl.lang.ast import (
    Block,
    CompareOp,
    ComparisonPredicate,
    Equality,
    FunctionPredicate,
    JoinOp,
    NodeTest,
    NumberLiteral,
    PathPredicate,
    Query,
    RelPath,
    Span,
    Step,
    StringLiteral,
    Window,
)

THESIS = """\
Q1: S//book->x1[./author->x2][./title->x3]
    FOLLOWED BY {x2=x5 AND x3=x6, 1h} S//blog->x4[./author->x5][./title->x6];
Q2: S//book->x1[./author->x2][./category->x7]
    FOLLOWED BY {x2=x5 AND x7=x8, 1d} S//blog->x4[./author->x5][./category->x8];
Q3: S//blog->x4[./author->x5][./title->x6]
    FOLLOWED BY {x5=x5' AND x6=x6', 7d} S//blog->x4'[./author->x5'][./title->x6'];
"""


def el(local: str, prefix: str | None = None) -> NodeTest:
    return NodeTest("element", local, prefix)


def child(local: str, var: str | None = None) -> PathPredicate:
    """``[./local->var]``."""
    return PathPredicate(RelPath((Step("/", el(local), var),)))


def pattern(root: str, var: str, a: tuple[str, str], b: tuple[str, str]) -> Block:
    """``S//root->var[./a0->a1][./b0->b1]``."""
    return Block("S", (Step("//", el(root), var, (child(*a), child(*b))),))


def test_thesis_queries_parse_to_expected_ast() -> None:
    q1, q2, q3 = parse_queries(THESIS)
    assert q1 == Query(
        qid="Q1",
        blocks=(
            pattern("book", "x1", ("author", "x2"), ("title", "x3")),
            pattern("blog", "x4", ("author", "x5"), ("title", "x6")),
        ),
        ops=(
            JoinOp(
                "FOLLOWED BY",
                (Equality("x2", "x5"), Equality("x3", "x6")),
                Window(Decimal(1), "h"),
            ),
        ),
    )
    assert q2 == Query(
        qid="Q2",
        blocks=(
            pattern("book", "x1", ("author", "x2"), ("category", "x7")),
            pattern("blog", "x4", ("author", "x5"), ("category", "x8")),
        ),
        ops=(
            JoinOp(
                "FOLLOWED BY",
                (Equality("x2", "x5"), Equality("x7", "x8")),
                Window(Decimal(1), "d"),
            ),
        ),
    )
    assert q3 == Query(
        qid="Q3",
        blocks=(
            pattern("blog", "x4", ("author", "x5"), ("title", "x6")),
            pattern("blog", "x4'", ("author", "x5'"), ("title", "x6'")),
        ),
        ops=(
            JoinOp(
                "FOLLOWED BY",
                (Equality("x5", "x5'"), Equality("x6", "x6'")),
                Window(Decimal(7), "d"),
            ),
        ),
    )
    assert q1.ops[0].window.micros == 3_600_000_000
    assert all(q.explicit_id and q.select is None and q.publish is None for q in (q1, q2, q3))


def test_spans_point_into_the_file() -> None:
    q1, q2, _ = parse_queries(THESIS)
    assert q1.span == Span(1, 1, 0)
    assert q2.span is not None and (q2.span.line, q2.span.column) == (3, 1)
    assert q1.blocks[0].span == Span(1, 5, 4)
    first_step = q1.blocks[0].steps[0]
    assert first_step.span == Span(1, 6, 5)
    inner = first_step.predicates[0]
    assert isinstance(inner, PathPredicate)
    assert inner.path.steps[0].span == Span(1, 18, 17)  # the axis of ./author
    op_span = q1.ops[0].span
    assert op_span is not None and (op_span.line, op_span.column) == (2, 5)
    second = q1.blocks[1].span
    assert second is not None and (second.line, second.column) == (2, 39)


def only_step(text: str) -> Step:
    query = parse_query(text)
    assert len(query.blocks) == 1 and len(query.blocks[0].steps) == 1
    return query.blocks[0].steps[0]


@pytest.mark.parametrize(
    ("text", "test"),
    [
        ("S/item", el("item")),
        ("S//*", NodeTest("wildcard")),
        ("S//@href", NodeTest("attribute", "href")),
        ("S//@xml:lang", NodeTest("attribute", "lang", "xml")),
        ("S//text()", NodeTest("text")),
        ("S//text ( )", NodeTest("text")),
        ("S//text", el("text")),
        ("S//from", el("from")),
        ("S//JOIN", el("JOIN")),
        ("S//dc-x.y_z", el("dc-x.y_z")),
        ("S//élément", el("élément")),
    ],
)
def test_node_tests(text: str, test: NodeTest) -> None:
    assert only_step(text).test == test


def test_axes_and_root_block() -> None:
    query = parse_query("S/rss//item/title")
    assert [(s.axis, s.test.local) for s in query.blocks[0].steps] == [
        ("/", "rss"),
        ("//", "item"),
        ("/", "title"),
    ]
    assert parse_query("S").blocks == (Block("S"),)
    assert parse_query("my.stream-1").blocks == (Block("my.stream-1"),)


def test_prefixed_names_need_a_declaration() -> None:
    result = parse_file('DECLARE NAMESPACE dc = "http://purl.org/dc/elements/1.1/";\nS//dc:creator')
    assert not result.errors
    assert result.namespaces == (("dc", "http://purl.org/dc/elements/1.1/"),)
    (query,) = result.queries
    assert query.namespaces == result.namespaces
    assert query.blocks[0].steps[0].test == el("creator", "dc")
    assert parse_query("S//p:a", namespaces=(("p", "u"),)).blocks[0].steps[0].test == el("a", "p")


def test_namespaces_are_sorted_and_xml_may_be_redeclared_to_its_uri() -> None:
    text = (
        "declare namespace z = 'urn:z';\n"
        'DECLARE NAMESPACE a = "urn:a";\n'
        'Declare Namespace xml = "http://www.w3.org/XML/1998/namespace";\n'
        "S//z:x/@a:y"
    )
    result = parse_file(text)
    assert not result.errors
    assert [p for p, _ in result.namespaces] == ["a", "xml", "z"]


def test_bindings_arrow_and_as() -> None:
    assert only_step("S//a->x").var == "x"
    assert only_step("S//a AS x").var == "x"
    assert only_step("S//a as x").var == "x"
    assert only_step("S//a -> x5'").var == "x5'"
    assert only_step("S//a-b->x").test == el("a-b")
    assert only_step("S//a-b->x").var == "x"
    assert only_step("S//a->_x''").var == "_x''"


def test_relative_path_normalisation() -> None:
    assert only_step("S//a[b]") == only_step("S//a[./b]")
    assert only_step("S//a[@type]").predicates == (
        PathPredicate(RelPath((Step("/", NodeTest("attribute", "type")),))),
    )
    assert only_step("S//a[.]").predicates == (PathPredicate(RelPath()),)
    assert only_step("S//a[.//b/c]").predicates == (
        PathPredicate(RelPath((Step("//", el("b")), Step("/", el("c"))))),
    )
    assert only_step("S//a[ . / b ]") == only_step("S//a[./b]")
    assert only_step("S//a[text()]").predicates == (
        PathPredicate(RelPath((Step("/", NodeTest("text")),))),
    )


def test_nested_predicates_with_bindings() -> None:
    step = only_step("S//item[./author->x2[./name[@lang]]][./c->y = 'x']")
    author = Step(
        "/",
        el("author"),
        "x2",
        (PathPredicate(RelPath((Step("/", el("name"), None, (
            PathPredicate(RelPath((Step("/", NodeTest("attribute", "lang")),))),
        )),))),),
    )  # fmt: skip
    assert step.predicates == (
        PathPredicate(RelPath((author,))),
        ComparisonPredicate(RelPath((Step("/", el("c"), "y"),)), "=", StringLiteral("x")),
    )


@pytest.mark.parametrize("op", ["=", "!=", "<", "<=", ">", ">="])
def test_comparison_operators(op: CompareOp) -> None:
    (pred,) = only_step(f"S//a[./b {op} 3]").predicates
    path = RelPath((Step("/", el("b")),))
    assert pred == ComparisonPredicate(path, op, NumberLiteral(Decimal(3)))


@pytest.mark.parametrize(
    ("literal", "value"),
    [
        ("'x'", StringLiteral("x")),
        ('"x"', StringLiteral("x")),
        ("'it''s'", StringLiteral("it's")),
        ('"say ""hi"""', StringLiteral('say "hi"')),
        ('"it\'s"', StringLiteral("it's")),
        ("'a -- not a comment; ]'", StringLiteral("a -- not a comment; ]")),
        ("''", StringLiteral("")),
        ("'two\nlines'", StringLiteral("two\nlines")),
        ("42", NumberLiteral(Decimal(42))),
        ("-1.50", NumberLiteral(Decimal("-1.50"))),
        ("0.001", NumberLiteral(Decimal("0.001"))),
    ],
)
def test_literals(literal: str, value: object) -> None:
    (pred,) = only_step(f"S//a[. = {literal}]").predicates
    assert pred == ComparisonPredicate(RelPath(), "=", value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("inside", "expression"),
    [
        ("contains(./title, 'spark')", "contains(./title, 'spark')"),
        ("  starts-with(@href, 'https')  ", "starts-with(@href, 'https')"),
        ("not(./x)", "not(./x)"),
        ("contains(concat(./a, ')]'), \"(\")", "contains(concat(./a, ')]'), \"(\")"),
        ("count(./a[./b]) > 2 and not(empty(.))", "count(./a[./b]) > 2 and not(empty(.))"),
        ("fn:exists(.//p)", "fn:exists(.//p)"),
        ("contains(., 'x') -- why\n or lower-case(.) = 'y'",
         "contains(., 'x') \n or lower-case(.) = 'y'"),
        # XPath comments (issue 36, defect 3): kept, their quotes, brackets, '--' and
        # ';' not scanned, and they nest
        ("true() (: it's :)", "true() (: it's :)"),
        ("true() (: a ] b :)", "true() (: a ] b :)"),
        ("exists(.) (: -- ; (: ) :) \" :) and true()",
         "exists(.) (: -- ; (: ) :) \" :) and true()"),
    ],
)  # fmt: skip
def test_function_predicates_kept_as_text(inside: str, expression: str) -> None:
    (pred,) = only_step(f"S//a[{inside}]").predicates
    assert pred == FunctionPredicate(expression)


def test_select_from_publish() -> None:
    star = parse_query("SELECT * FROM S//a")
    assert star.select is None
    assert parse_query("FROM S//a") == parse_query("S//a") == star
    query = parse_query("select x, y' from S//a->x JOIN {TRUE, INF} T//b->y' publish Out.1")
    assert query.select == ("x", "y'")
    assert query.publish == "Out.1"


def test_joins_windows_and_chains() -> None:
    query = parse_query(
        "S//a->x JOIN {x=y, 1.5 h} T//b->y followed by {y=z AND x=z, 500ms} U//c->z "
        "Followed By {TRUE, inf} V"
    )
    assert [op.kind for op in query.ops] == ["JOIN", "FOLLOWED BY", "FOLLOWED BY"]
    assert [op.window for op in query.ops] == [
        Window(Decimal("1.5"), "h"),
        Window(Decimal(500), "ms"),
        Window(None),
    ]
    assert query.ops[1].equalities == (Equality("y", "z"), Equality("x", "z"))
    assert query.ops[2].equalities == ()
    assert [b.stream for b in query.blocks] == ["S", "T", "U", "V"]


@pytest.mark.parametrize(
    ("window", "expected", "micros"),
    [
        ("10", Window(Decimal(10), "s"), 10_000_000),
        ("10 s", Window(Decimal(10), "s"), 10_000_000),
        ("250ms", Window(Decimal(250), "ms"), 250_000),
        ("2m", Window(Decimal(2), "m"), 120_000_000),
        ("0.5d", Window(Decimal("0.5"), "d"), 43_200_000_000),
        ("0", Window(Decimal(0), "s"), 0),
        ("INF", Window(None), None),
        ("Inf", Window(None), None),
    ],
)
def test_windows(window: str, expected: Window, micros: int | None) -> None:
    op = parse_query(f"S JOIN {{TRUE, {window}}} T").ops[0]
    assert op.window == expected
    assert op.window.micros == micros


def test_comments_whitespace_and_keyword_case() -> None:
    noisy = """
    -- a file comment
    q1 :   -- label
      sElEcT x1 ,x5 FrOm S // book -> x1 [ ./author->x2 ]  -- trailing
      fOlLoWeD   bY { x2 = x5 aNd x1=x5 ,1 h } S//blog [ author AS x5 ] -- end
    ;
    """
    plain = "q1: SELECT x1, x5 FROM S//book->x1[./author->x2] FOLLOWED BY {x2=x5 AND x1=x5, 1h} "
    plain += "S//blog[./author->x5]"
    assert parse_queries(noisy) == (parse_query(plain),)


def test_ids_labels_and_positions() -> None:
    result = parse_file("S//a; Mine.v-2: S//b; S//c;")
    assert [(q.qid, q.explicit_id) for q in result.queries] == [
        ("q1", False),
        ("Mine.v-2", True),
        ("q3", False),
    ]


def test_trailing_semicolon_is_optional() -> None:
    assert parse_queries("S//a; S//b") == parse_queries("S//a; S//b;")


def test_parse_query_ids_and_trailing_semicolon() -> None:
    assert parse_query("S//a;").qid == "q1"
    named = parse_query("S//a", qid="given")
    assert (named.qid, named.explicit_id) == ("given", False)
    labelled = parse_query("L: S//a", qid="given")
    assert (labelled.qid, labelled.explicit_id) == ("L", True)
    with pytest.raises(XsclSyntaxError) as info:
        parse_query("S//a; S//b", qid="Z")
    assert (info.value.qid, info.value.code, info.value.column) == ("Z", "XSCL-P003", 7)


def test_parse_queries_raises_first_error() -> None:
    with pytest.raises(XsclSyntaxError) as info:
        parse_queries("S//a; S//b JOIN; T//c ]")
    assert (info.value.qid, info.value.code) == ("q2", "XSCL-P004")


def test_large_file_parses_and_restores_gc_state() -> None:
    import gc

    text = ";\n".join(
        f"S//a->x{i}[./b = 'v{i}'] JOIN {{x{i}=y, {i}ms}} T//c->y" for i in range(3000)
    )
    assert len(text) > 100_000  # large enough for the GC pause path
    assert gc.isenabled()
    result = parse_file(text)
    assert gc.isenabled()
    assert not result.errors
    assert [q.qid for q in result.queries[:2]] == ["q1", "q2"]
    assert result.queries[-1].ops[0].window == Window(Decimal(2999), "ms")
    gc.disable()
    try:
        parse_file(text)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_an_unclosed_xpath_comment_is_p011() -> None:
    with pytest.raises(XsclSyntaxError) as caught:
        parse_query("S//a[true() (: (: :) ]")
    assert caught.value.code == "XSCL-P011"
    assert caught.value.column == 13
    assert "XPath comment" in caught.value.message


def test_a_bad_query_is_skipped_past_xpath_comments() -> None:
    """Recovery resumes after the next ';' outside strings and comments, XPath's too."""
    result = parse_file("Q1: S//a[1 (: ; :)];\nQ2: S//a[true() (: ; it's :)];\nQ3: S//b;\n")
    assert [e.qid for e in result.errors] == ["Q1"]
    assert [q.qid for q in result.queries] == ["Q2", "Q3"]
