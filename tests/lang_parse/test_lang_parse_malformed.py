"""Malformed input: stable codes, exact positions, useful ``expected``, and recovery."""

from __future__ import annotations

import pytest

from xscl.lang import (
    ERROR_CODES,
    XsclError,
    XsclSyntaxError,
    XsclValidationError,
    parse_file,
    parse_query,
)

# (source, code, line, column) of the first error parse_file reports.
MALFORMED: list[tuple[str, str, int, int]] = [
    ("S//a JOIN {x=y, 1h}", "XSCL-P004", 1, 20),  # missing block after the operator
    ("S//a JOIN {x=y, 1h} ;", "XSCL-P004", 1, 21),  # missing block before ';'
    ("/a", "XSCL-P003", 1, 1),  # missing stream name
    ("S//a JOIN {x=y, 1 hour} T", "XSCL-P005", 1, 19),  # bad window unit
    ("S//a JOIN {x=y, 1H} T", "XSCL-P005", 1, 18),  # units are lower case
    ("S//a JOIN {x=y, -1h} T", "XSCL-P005", 1, 17),  # negative window
    ("S//a JOIN {x=y, } T", "XSCL-P005", 1, 17),  # missing window
    ("S//a JOIN {x=y, INFINITY} T", "XSCL-P005", 1, 17),
    ("S//a FOLLOWED {x=y, 1h} T", "XSCL-P003", 1, 15),  # FOLLOWED without BY
    ("S//a JOIN {x=y, 1h} T FOLLOWED BY", "XSCL-P004", 1, 34),
    ("S//a[b", "XSCL-P004", 1, 7),  # unclosed '['
    ("S//a[./b->x = 'v'\n  JOIN {x=y, 1h} T", "XSCL-P003", 2, 3),  # unclosed '[' before JOIN
    ("S//a JOIN {x=y, 1h", "XSCL-P004", 1, 19),  # unclosed '{'
    ("S//a JOIN {x=y, 1h T", "XSCL-P003", 1, 20),
    ("S//a JOIN x=y, 1h} T", "XSCL-P003", 1, 11),  # missing '{'
    ("S//a JOIN {x=y 1h} T", "XSCL-P003", 1, 16),  # missing comma before window
    ("S//a JOIN {x=, 1h} T", "XSCL-P003", 1, 14),  # x= without right side
    ("S//a JOIN {x=y AND, 1h} T", "XSCL-P003", 1, 19),
    ("S//a JOIN {TRUE AND x=y, 1h} T", "XSCL-P003", 1, 17),
    ("S//a JOIN {x='y', 1h} T", "XSCL-P003", 1, 14),  # literal in a join predicate
    ("S//a[b='x]", "XSCL-P002", 1, 8),  # unterminated literal
    ("S//a[b=\"x']", "XSCL-P002", 1, 8),  # mismatched quotes
    ("S//a[. == 'x']", "XSCL-P003", 1, 9),
    ("S//a[. = x]", "XSCL-P003", 1, 10),  # literal expected
    ("S//a[. = \u0667]", "XSCL-P003", 1, 10),  # Arabic-Indic 7: numbers are ASCII digits
    ("S//a[. = \uff17]", "XSCL-P003", 1, 10),  # fullwidth 7
    ("S//a JOIN {x=y, \u0665s} T", "XSCL-P005", 1, 17),  # Arabic-Indic 5 as a window
    ("S//p:", "XSCL-P004", 1, 6),  # bad qname: no local part
    ("S//p: a", "XSCL-P003", 1, 6),  # bad qname: space after ':'
    ("S//p:a", "XSCL-V008", 1, 4),  # unknown prefix
    ("S//a->", "XSCL-P004", 1, 7),  # '->' without variable
    ("S//a-> [b]", "XSCL-P003", 1, 8),
    ("S//a AS", "XSCL-P004", 1, 8),
    ("S//a->x->y", "XSCL-P003", 1, 8),  # bound twice in one step
    ("S//a[./b->]", "XSCL-P003", 1, 11),
    ("1Q: S//a", "XSCL-P006", 1, 1),  # bad query id
    ("Q 1: S//a", "XSCL-P003", 1, 3),
    ("FROM JOIN//a", "XSCL-P010", 1, 6),  # keyword as stream name
    ("S//a PUBLISH from", "XSCL-P010", 1, 14),
    ("S//a->select", "XSCL-P010", 1, 7),  # keyword as variable
    ("SELECT FROM S//a", "XSCL-P010", 1, 8),
    ("SELECT x S//a", "XSCL-P003", 1, 10),  # SELECT without FROM
    ("S//a PUBLISH", "XSCL-P004", 1, 13),
    ("S//a b", "XSCL-P003", 1, 6),  # garbage after a query
    ("S//a PUBLISH out extra", "XSCL-P003", 1, 18),
    ("S//a[./b]]", "XSCL-P003", 1, 10),
    ("S/", "XSCL-P004", 1, 3),
    ("S//@", "XSCL-P004", 1, 5),
    ("S//a[@*]", "XSCL-P003", 1, 7),
    ("S//a[]", "XSCL-P003", 1, 6),
    ("S//a[..]", "XSCL-P003", 1, 6),
    ("S//a/ /b", "XSCL-P003", 1, 7),
    ("S[./a]", "XSCL-P003", 1, 2),  # a block without steps takes no predicate
    ("S//a[contains(./t, 'x']", "XSCL-P011", 1, 23),  # unbalanced function call
    ("S//a[contains(./t, 'x')", "XSCL-P011", 1, 24),
    ("S//a[text(]", "XSCL-P011", 1, 11),
    ("Q1: ", "XSCL-P004", 1, 5),
    ("S//a;\nDECLARE NAMESPACE p = 'u';", "XSCL-P007", 2, 1),  # declaration after a query
    ('DECLARE NAMESPACE p "u"; S//a', "XSCL-P003", 1, 21),
    ("DECLARE NAMESPACE xml = 'x'; S//a", "XSCL-P012", 1, 19),
    ("DECLARE NAMESPACE p = ''; S//a", "XSCL-P012", 1, 23),
    ("DECLARE NAMESPACE p = 'a';\nDECLARE NAMESPACE p = 'b'; S//a", "XSCL-P012", 2, 19),
    ("S//a;;S//b", "XSCL-P008", 1, 6),
    ("", "XSCL-P009", 1, 1),
    ("-- nothing but a comment\n", "XSCL-P009", 2, 1),
    ("Q1: S//a;\nQ1: S//b", "XSCL-V007", 2, 1),  # duplicate id
    ("S//a;\n  q1: S//b", "XSCL-V007", 2, 3),  # clashes with the assigned id
]


@pytest.mark.parametrize(("text", "code", "line", "column"), MALFORMED)
def test_malformed_query(text: str, code: str, line: int, column: int) -> None:
    result = parse_file(text)
    assert result.errors, f"no error for {text!r}"
    err = result.errors[0]
    assert (err.code, err.line, err.column) == (code, line, column), str(err)
    assert code in ERROR_CODES
    assert isinstance(err, XsclValidationError if code.startswith("XSCL-V") else XsclSyntaxError)
    source_line = text.split("\n")[line - 1] if text else ""
    assert err.excerpt == source_line + "\n" + " " * (column - 1) + "^"


def test_there_are_enough_malformed_cases() -> None:
    assert len(MALFORMED) >= 30


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("S//a JOIN {x=, 1h} T", ("a variable",)),
        ("S//a FOLLOWED {x=y, 1h} T", ("BY",)),
        ("S//a JOIN {x=y 1h} T", ("AND", "','")),
        ("S//a JOIN {x=y, } T", ("a window such as 1h or INF",)),
        ("S//a->", ("a variable",)),
        ("S//a PUBLISH out extra", ("';'", "end of input")),
    ],
)
def test_expected_tokens(text: str, expected: tuple[str, ...]) -> None:
    (err,) = parse_file(text).errors
    assert err.expected == expected


def test_garbage_after_query_lists_what_could_follow() -> None:
    (err,) = parse_file("S//a b").errors
    assert err.message == "unexpected 'b'"
    for token in ("'['", "'/'", "'//'", "'->'", "AS", "JOIN", "FOLLOWED BY", "PUBLISH", "';'"):
        assert token in err.expected


def test_error_message_names_query_line_column_and_expected() -> None:
    (err,) = parse_file("Q7: S//a\n  JOIN {x=y, 1h}").errors
    assert str(err) == (
        "Q7:2:17: XSCL-P004 unexpected end of input (expected: a stream name)\n"
        "    JOIN {x=y, 1h}\n"
        "                  ^"
    )


def test_source_name_is_carried() -> None:
    (err,) = parse_file("S//a b", source="feeds.xscl").errors
    assert err.source == "feeds.xscl"
    assert str(err).startswith("feeds.xscl:q1:1:6: ")


def test_two_bad_three_good_queries() -> None:
    text = """\
-- five queries; the 2nd and 4th are broken
Good1: S//book->x1[./author->x2]
    FOLLOWED BY {x2=y, 1h} S//blog[./author->y];
S//item[./title = 'unclosed;
S//item[./title->t] JOIN {t=u, 5m} T//entry/title->u;   -- third query, ids by position
Bad4: S//a JOIN {x=y 2d} T//b;
S//c PUBLISH Out
"""
    result = parse_file(text)
    assert [q.qid for q in result.queries] == ["Good1", "q3", "q5"]
    assert [(e.qid, e.code, e.line, e.column) for e in result.errors] == [
        ("q2", "XSCL-P002", 4, 19),
        ("Bad4", "XSCL-P003", 6, 22),
    ]
    assert result.queries[2].publish == "Out"
    assert not result.ok


def test_unclosed_bracket_does_not_hide_later_queries() -> None:
    result = parse_file("A: S//a[b; B: S//c; C: S//d[contains(., 'x'; D: S//e")
    assert [q.qid for q in result.queries] == ["B", "D"]
    assert [(e.qid, e.code) for e in result.errors] == [("A", "XSCL-P004"), ("C", "XSCL-P011")]


def test_semicolon_inside_strings_and_comments_is_not_a_separator() -> None:
    result = parse_file("S//a[. = 'x;y'] -- not; a separator\n JOIN {TRUE, 1s} T; U")
    assert not result.errors
    assert len(result.queries) == 2


def test_recovery_after_bad_declaration() -> None:
    result = parse_file("DECLARE NAMESPACE = 'u';\nDECLARE NAMESPACE p = 'v';\nS//p:a")
    assert [e.code for e in result.errors] == ["XSCL-P003"]
    assert result.namespaces == (("p", "v"),)
    assert len(result.queries) == 1


def test_parse_query_raises_located_errors() -> None:
    with pytest.raises(XsclError) as info:
        parse_query("S//a\n   JOIN {x=y, 3 weeks} T", qid="mine")
    err = info.value
    assert (err.qid, err.code, err.line, err.column) == ("mine", "XSCL-P005", 2, 17)
    with pytest.raises(XsclValidationError):
        parse_query("S//q:a", namespaces=(("p", "urn:p"),))
