"""Keyword predicates decided in Python agree with elementpath (``xpath/direct_tests``).

A ``contains``/``starts-with``/``ends-with`` of ``.`` or of a child name (also
through ``lower-case``, ``upper-case``, ``normalize-space``) against a literal, and a
``matches`` of one, are decided without elementpath (docs/architecture.md, Stage 1).  Hypothesis
writes elements whose source children are absent, one or several, namespaced or
not, with nested elements, comments, processing instructions, CDATA and tails,
and literals that are empty, substrings, case (Unicode's special cases among them),
whitespace (Unicode's too) or NFC/NFD variants; the direct
decision must equal elementpath's on the same template, and where elementpath
raises (several children) the direct test must defer to it.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lxml import etree

from tests.profiles import examples
from tests.xpath.test_xpath_presearch import FLAGS, regexes
from xscl.errors import FunctionPredicateError
from xscl.xpath.functions import (
    CompiledFunction,
    DocumentFunctions,
    FunctionTable,
    FunctionTemplate,
)

PIECES = [
    "rust",
    "Rust",
    "RUST",
    "café",
    "cafe\u0301",
    "a b",
    " ",
    "  ",
    "\t",
    "\n",
    "\u00a0",
    "\u2003",
    "",
    "ß",
    "SS",
    "İ",
    "ı",
    "ΣΑΣ",
    "σας",
    "it's",
    "x",
]
text = st.lists(st.sampled_from(PIECES), max_size=3).map("".join)


def escaped(value: str) -> str:
    return value.replace("&", "&amp;").replace("<", "&lt;")


@st.composite
def children(draw: Any) -> str:
    """A ``title`` child in one of the forms a feed may hold, or another element."""
    inner = escaped(draw(text))
    form = draw(st.sampled_from(["plain", "nested", "comment", "pi", "cdata", "ns", "other"]))
    tail = escaped(draw(text))
    if form == "nested":
        body = f"<title>{inner}<b>{escaped(draw(text))}</b>{escaped(draw(text))}</title>"
    elif form == "comment":
        body = f"<title>{inner}<!--{draw(st.sampled_from(['rust', 'x']))}-->{inner}</title>"
    elif form == "pi":
        body = f"<title><?p rust?>{inner}</title>"
    elif form == "cdata":
        body = f"<title><![CDATA[{draw(text)}]]>{inner}</title>"
    elif form == "ns":
        body = f'<a:title xmlns:a="urn:a">{inner}</a:title>'
    elif form == "other":
        body = f"<name>{inner}</name>"
    else:
        body = f"<title>{inner}</title>"
    return body + tail


@st.composite
def elements(draw: Any) -> etree._Element:
    body = "".join(draw(st.lists(children(), max_size=3)))
    return etree.fromstring(f"<item>{escaped(draw(text))}{body}</item>")


EXPRESSIONS = [
    f"{function}({transform}({source}), {{literal}})"
    if transform
    else f"{function}({source}, {{literal}})"
    for function in ("contains", "starts-with", "ends-with")
    for source in ("title", ".")
    for transform in ("", "lower-case", "upper-case", "normalize-space")
]


def quoted(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def elementpath_only(compiled: CompiledFunction) -> CompiledFunction:
    """The same definition with its template's direct test taken away."""
    template = FunctionTemplate(compiled.template.text)
    template.direct = None
    return CompiledFunction(compiled.expression, template, compiled.literals)


def verdict(functions: DocumentFunctions, compiled: CompiledFunction, node: Any) -> bool | str:
    try:
        return functions.holds(compiled, node)
    except FunctionPredicateError:
        return "error"


@examples(300)
@given(
    element=elements(),
    pattern=st.sampled_from(EXPRESSIONS),
    literal=st.one_of(text, st.sampled_from(["rust", "ust", "Rust x", "é", "a b", "ss", "i̇"])),
)
def test_direct_tests_decide_as_elementpath_does(
    element: etree._Element, pattern: str, literal: str
) -> None:
    compiled = FunctionTable().acquire(pattern.format(literal=quoted(literal)))
    assert compiled.template.direct is not None
    direct = verdict(DocumentFunctions(element), compiled, element)
    expected = verdict(DocumentFunctions(element), elementpath_only(compiled), element)
    assert direct == expected


@examples(300)
@given(
    element=elements(),
    source=st.sampled_from(["title", "."]),
    pattern=st.one_of(regexes(), st.sampled_from(["\\bx", "(?i)x", "[", "a{2,1}", ""])),
    flags=st.sampled_from([*FLAGS, "q", "mq", "z"]),
)
def test_direct_regexes_decide_as_elementpath_does(
    element: etree._Element, source: str, pattern: str, flags: str
) -> None:
    """Valid and refused patterns and flags alike (a refused one is left to
    elementpath, which raises: registration refuses those, so only a predicate
    used on its own can hold one)."""
    expression = f"matches({source}, {quoted(pattern)}, {quoted(flags)})"
    table = FunctionTable()
    compiled = table.get(expression)
    assert compiled.template.direct is not None
    direct = verdict(DocumentFunctions(element), compiled, element)
    expected = verdict(DocumentFunctions(element), elementpath_only(compiled), element)
    assert direct == expected


@pytest.mark.parametrize(
    "expression",
    [
        "contains(string(title), 'x')",
        "contains(lower-case(lower-case(title)), 'x')",
        "contains(./title, 'x')",
        "contains(title, 'x', 'http://www.w3.org/2005/xpath-functions/collation/codepoint')",
        "contains(@lang, 'x')",
        "contains(title, description)",
        "matches(lower-case(title), 'x')",
        "replace(title, 'x', 'y') = 'y'",
        "contains(title, 'x') and contains(., 'y')",
        "contains(n0:title, 'x') (:xmlns n0=\"urn:a\":)",
    ],
)
def test_other_shapes_are_left_to_elementpath(expression: str) -> None:
    assert FunctionTable().acquire(expression).template.direct is None


def test_several_source_children_are_counted_errors_as_before() -> None:
    element = etree.fromstring("<item><title>rust</title><title>go</title></item>")
    compiled = FunctionTable().acquire("contains(title, 'rust')")
    with pytest.raises(FunctionPredicateError, match="XPTY0004"):
        DocumentFunctions(element).holds(compiled, element)
