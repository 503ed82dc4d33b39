"""Keyword predicates decided in Python: one containment test of one string value.

Most function predicates feed users write are a single ``contains``,
``starts-with`` or ``ends-with`` of a child's (or the element's own) string
value against a literal: ``contains(title, 'rust')``, ``starts-with(link,
'https://blog.rust-lang.org/')``.  The presearch index
(:mod:`xscl.xpath.presearch`) admits a definition only when its literal occurs,
and each admitted candidate used to be verified by elementpath, about 65 µs a
call; at 100k keyword subscriptions the verifications were most of Stage 1's
time per item (docs/benchmarks.md, "Subscriptions at scale").

A template whose compiled token tree is exactly ``FN(SOURCE, $xscl_literal_i)``,
with ``FN`` one of the three functions (two arguments: the default collation,
which is the Unicode codepoint collation) and ``SOURCE`` either ``.`` or
``*:name`` (what :func:`xscl.xpath.functions.local_name_rewrite` makes of an
unprefixed child name test), is recognised once, when the template compiles,
as a :class:`DirectTest`.  At an element it is decided without elementpath,
exactly as the verifier decides it (F&O 7.5.1, 7.5.2, 7.5.3), also when the
source goes through ``lower-case``, ``upper-case`` or ``normalize-space``
(computed as elementpath computes them):

* the source's value is the string value of the element itself, or of its one
  child element of that local name (any namespace, as ``*:name`` selects);
  no such child gives the empty string;
* two or more such children make the verifier raise ``XPTY0004`` (a sequence
  where one item is expected): :meth:`DirectTest.decide` returns None and the
  caller asks elementpath, so the error is raised and counted as before; it
  defers the same way for a source that has children (elements, comments,
  processing instructions), whose string value elementpath does not always
  compute as XPath says (a title or a link is a leaf: keyword alerts stay
  direct);
* codepoint comparison is Python's ``in``, ``startswith`` and ``endswith``
  (the empty literal is contained in, starts and ends every string).

A context node that is an attribute or a text node is left to elementpath.
Anything else (other functions, a third argument, ``and``/``or``, ``string()``
or ``data()``, a path of more than one step) has no direct test.

>>> from xscl.xpath.functions import compile_expression
>>> test = direct_test(compile_expression("contains(title, $xscl_literal_0)"))
>>> test
DirectTest(function='contains', child='title', literal=0, transform=None)
>>> item = etree.fromstring("<item><title>Rust 1.80 released</title></item>")
>>> test.decide(item, ("1.80 rel",), {}), test.decide(item, ("Go",), {})
(True, False)
>>> test.decide(etree.fromstring("<item><title>a</title><title>b</title></item>"), ("a",), {})
>>> direct_test(compile_expression("starts-with(lower-case(title), $xscl_literal_0)"))
DirectTest(function='starts-with', child='title', literal=0, transform='lower-case')
>>> direct_test(compile_expression("contains(string(title), $xscl_literal_0)")) is None
True
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lxml import etree

from xscl.xpath.function_template import placeholder_index
from xscl.xpath.nodes import local_name

#: the functions decided here, each as the codepoint comparison F&O defines
_TESTS: dict[str, Callable[[str, str], bool]] = {
    "contains": lambda value, literal: literal in value,
    "starts-with": str.startswith,
    "ends-with": str.endswith,
}


#: the transformations a source may go through, each as elementpath 5.1 computes it
#: (``normalize-space`` splits on Python's whitespace, which is what the verifier does)
_TRANSFORMS: dict[str, Callable[[str], str]] = {
    "lower-case": str.lower,
    "upper-case": str.upper,
    "normalize-space": lambda value: " ".join(value.strip().split()),
}

#: a source value found in one document: (element, child name, transformation)
SourceKey = tuple[etree._Element, "str | None", "str | None"]


@dataclass(frozen=True, slots=True)
class DirectTest:
    """``function(transform?(source), $xscl_literal_<literal>)``; ``child`` is the
    local name of the source's child elements, or None for the element itself
    (``.``); ``transform`` one of ``lower-case``, ``upper-case``,
    ``normalize-space``, or None."""

    function: str
    child: str | None
    literal: int
    transform: str | None = None

    def decide(
        self,
        element: etree._Element,
        literals: tuple[str, ...],
        values: dict[SourceKey, str | None],
    ) -> bool | None:
        """The predicate's value at ``element``; None when only the verifier can say
        (two or more source children: it raises a type error, which is counted; or a
        ``$xscl_literal_`` variable the expression wrote itself, which is unbound).
        ``values``: the source values of this document found so far (one dict per
        document: many definitions test the same title)."""
        if self.literal >= len(literals):
            return None
        key = (element, self.child, self.transform)
        if key in values:
            value = values[key]
        else:
            value = self.source_value(element)
            if value is not None and self.transform is not None:
                value = _TRANSFORMS[self.transform](value)
            values[key] = value
        if value is None:
            return None
        return _TESTS[self.function](value, literals[self.literal])

    def source_value(self, element: etree._Element) -> str | None:
        """The source's string value at ``element``; None for two or more children, or
        a value only elementpath can give (see ``_string_value``)."""
        if self.child is None:
            return _string_value(element)
        found = [
            child
            for child in element
            if child.tag.__class__ is str and local_name(child.tag) == self.child
        ]
        if len(found) > 1:
            return None
        return _string_value(found[0]) if found else ""


def _string_value(element: etree._Element) -> str | None:
    """The string value of an element without children; None for any other: where an
    element holds others, elementpath 5.1's string value can differ from XPath's
    (it drops the text after a comment or a processing instruction, and can put the
    text after an empty child out of order; docs/language.md, known differences), so
    only elementpath can say what it says."""
    if len(element):
        return None
    return element.text or ""


def direct_test(token: Any) -> DirectTest | None:
    """The direct test a compiled template's root token is, or None."""
    if token.symbol not in _TESTS or len(token) != 2:
        return None
    source, literal = token[0], token[1]
    if literal.symbol != "$" or len(literal) != 1:
        return None
    index = placeholder_index(str(literal[0].value))
    if index is None:
        return None
    transform = None
    if source.symbol in _TRANSFORMS and len(source) == 1:
        transform, source = source.symbol, source[0]
    if source.symbol == "." and len(source) == 0:
        return DirectTest(token.symbol, None, index, transform)
    if (
        source.symbol == ":"
        and len(source) == 2
        and source[0].symbol == "*"
        and source[1].symbol == "(name)"
    ):
        return DirectTest(token.symbol, str(source[1].value), index, transform)
    return None
