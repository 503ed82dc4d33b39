"""explain(): what ``xscl explain FILE`` prints."""

from __future__ import annotations

from xscl.lang.explain import explain, format_definition, format_window
from xscl.lang.normal_form import normalize
from xscl.lang.parser import parse_queries

THESIS = """
DECLARE NAMESPACE a = "http://www.w3.org/2005/Atom";
Q1: S//book->x1[./author->x2][./title->x3]
    FOLLOWED BY {x2=x5 AND x3=x6, 1h} S//blog->x4[./author->x5][./title->x6];
Q2: S//book->x1[./author->x2][./category->x7]
    FOLLOWED BY {x2=x5 AND x7=x8, 1d} S//blog->x4[./author->x5][./category->x8];
Q3: SELECT t FROM S//a:entry[./a:author->n][./a:title->t]
    JOIN {n=m, 90m} S//blog[./author->m] PUBLISH P
"""


def test_explain_lists_blocks_variables_joins_and_sharing() -> None:
    text = explain(parse_queries(THESIS))
    lines = text.splitlines()
    assert lines[0] == "query Q1"
    assert "  block 0: stream S, root x1" in lines
    assert "     x2  S//book/author  (under x1)" in lines
    assert "    0 -> 1: FOLLOWED BY within 1h" in lines
    assert "    x2 = x5  (blocks 0, 1)" in lines
    assert "query Q3  SELECT t  PUBLISH P" in lines
    assert "    *_b0_0  S//a:entry" in lines  # generated branching variable, prefix restored
    assert "     t      S//a:entry/a:title  (under _b0_0)" in lines
    assert "    0 -> 1: JOIN within 90m" in lines
    assert "  S//book/author: Q1.x2, Q2.x2" in lines
    assert "  S//blog/author: Q1.x5, Q2.x5, Q3.m" in lines
    assert "  S//book: Q1.x1, Q2.x1" in lines
    assert text.endswith("\n")


def test_definitions_print_as_xscl_paths() -> None:
    (query,) = parse_queries("SELECT y FROM S//b[./a->y/b = 'x'][.//@id]")
    definition = normalize(query).variable("y").definition
    assert format_definition(definition) == "S//b[.//@id]/a[./b = 'x']"
    (atom,) = parse_queries('DECLARE NAMESPACE p = "urn:p"; SELECT e FROM S/p:e->e')
    qualified = normalize(atom).variable("e").definition
    assert format_definition(qualified) == "S/{urn:p}:e"
    assert format_definition(qualified, (("q", "urn:p"),)) == "S/q:e"


def test_format_window() -> None:
    assert [format_window(w) for w in (None, 0, 1_000, 90_000_000, 86_400_000_000, 7)] == [
        "INF", "0s", "1ms", "90s", "1d", "7us",
    ]  # fmt: skip
