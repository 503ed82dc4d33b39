"""Keyword predicates decided in Python: one containment test or regex of one string value.

Most function predicates feed users write are a single ``contains``,
``starts-with``, ``ends-with`` or ``matches`` of a child's (or the element's own)
string value against a literal: ``contains(title, 'rust')``, ``starts-with(link,
'https://blog.rust-lang.org/')``, ``matches(title, 'rust|kotlin', 'i')``.  The presearch index
(:mod:`xscl.xpath.presearch`) admits a definition only when its literal occurs,
and each admitted candidate used to be verified by elementpath; at 100k keyword
subscriptions those verifications, nearly all true, were most of Stage 1's time
per item (docs/benchmarks.md, "Subscriptions at scale").

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
  (the empty literal is contained in, starts and ends every string);
* ``matches(SOURCE, $xscl_literal_i[, $xscl_literal_j])`` (XPath 2.0, no
  transformation) runs the regex as elementpath's ``matches`` does: the flags
  ``s``, ``m``, ``i``, ``x`` as ``re``'s, the pattern translated by elementpath's
  own ``translate_pattern`` and searched with ``re``. It is translated and
  compiled once per definition and held while the definition is registered
  (elementpath translates it on every call and asks ``re``'s 512-entry cache,
  which thrashes past 512 distinct regexes). A pattern or flag elementpath
  refuses is left to elementpath, which raises and counts it.

A context node that is an attribute or a text node is left to elementpath.
Anything else (other functions, a third argument, ``and``/``or``, ``string()``
or ``data()``, a path of more than one step) has no direct test.

>>> from xscl.xpath.functions import compile_expression
>>> test = direct_test(compile_expression("contains(title, $xscl_literal_0)"))
>>> test.function, test.child, test.literal, test.transform
('contains', 'title', 0, None)
>>> item = etree.fromstring("<item><title>Rust 1.80 released</title></item>")
>>> class Definition:
...     def __init__(self, *literals):
...         self.literals, self.regex = literals, None
>>> test.decide(item, Definition("1.80 rel"), {}), test.decide(item, Definition("Go"), {})
(True, False)
>>> two = etree.fromstring("<item><title>a</title><title>b</title></item>")
>>> test.decide(two, Definition("a"), {})
>>> regex = direct_test(compile_expression("matches(title, $xscl_literal_0, $xscl_literal_1)"))
>>> regex.decide(item, Definition("^rust\\s\\d", "i"), {})
True
>>> direct_test(compile_expression("starts-with(lower-case(title), $xscl_literal_0)")).transform
'lower-case'
>>> direct_test(compile_expression("contains(string(title), $xscl_literal_0)")) is None
True
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from elementpath.regex import RegexError, translate_pattern
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

#: ``matches`` flags and the ``re`` flags elementpath gives them (F&O 7.6.1.1)
_REGEX_FLAGS = {"s": re.S, "m": re.M, "i": re.I, "x": re.X}


class Definition(Protocol):
    """What a direct test reads of one registered definition: its literals, and the
    regex its ``matches`` compiled to (None: not yet; False: only elementpath can
    say), kept for as long as the definition is registered."""

    literals: tuple[str, ...]
    regex: re.Pattern[str] | bool | None


@dataclass(frozen=True, slots=True)
class DirectTest:
    """``function(transform?(source), $xscl_literal_<literal>)``, or ``matches(source,
    $xscl_literal_<literal>[, $xscl_literal_<flags>])``; ``child`` is the local name
    of the source's child elements, or None for the element itself (``.``);
    ``transform`` one of ``lower-case``, ``upper-case``, ``normalize-space``, or
    None; ``xsd_version`` the parser's, which the regex translation follows."""

    function: str
    child: str | None
    literal: int
    transform: str | None = None
    flags: int | None = None
    xsd_version: str = "1.0"

    def decide(
        self,
        element: etree._Element,
        definition: Definition,
        values: dict[SourceKey, str | None],
    ) -> bool | None:
        """The predicate's value at ``element``; None when only the verifier can say
        (two or more source children: it raises a type error, which is counted; a
        ``$xscl_literal_`` variable the expression wrote itself, which is unbound; a
        regex or flags elementpath refuses). ``values``: the source values of this
        document found so far (one dict per document: many definitions test the
        same title)."""
        literals = definition.literals
        if max(self.literal, self.flags or 0) >= len(literals):
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
        if self.function == "matches":
            regex = self._regex(definition)
            return None if regex is None else regex.search(value) is not None
        return _TESTS[self.function](value, literals[self.literal])

    def _regex(self, definition: Definition) -> re.Pattern[str] | None:
        """The definition's regex as elementpath's ``matches`` runs it (translated
        once, then held by the definition), or None where elementpath would raise."""
        regex = definition.regex
        if regex is None:
            regex = definition.regex = self._compile(definition.literals)
        return regex if isinstance(regex, re.Pattern) else None

    def _compile(self, literals: tuple[str, ...]) -> re.Pattern[str] | bool:
        flags = 0
        for flag in literals[self.flags] if self.flags is not None else "":
            if flag not in _REGEX_FLAGS:  # ``q`` is XPath 3.0's; others FORX0001
                return False
            flags |= _REGEX_FLAGS[flag]
        try:
            return re.compile(
                translate_pattern(literals[self.literal], flags, self.xsd_version), flags
            )
        except (re.error, RegexError, OverflowError):
            return False

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
    if token.symbol == "matches" and len(token) in (2, 3):
        pattern = _placeholder(token[1])
        flags = _placeholder(token[2]) if len(token) == 3 else None
        source = _source(token[0])
        if (
            pattern is None
            or (len(token) == 3 and flags is None)
            or token.parser.version != "2.0"
            or source is None
            or source[1] is not None
        ):
            return None
        xsd = str(token.parser.xsd_version)
        return DirectTest("matches", source[0], pattern, None, flags, xsd)
    if token.symbol not in _TESTS or len(token) != 2:
        return None
    index = _placeholder(token[1])
    source = _source(token[0])
    if index is None or source is None:
        return None
    return DirectTest(token.symbol, source[0], index, source[1])


def _placeholder(token: Any) -> int | None:
    """The literal index of a ``$xscl_literal_N`` reference, else None."""
    if token.symbol != "$" or len(token) != 1:
        return None
    return placeholder_index(str(token[0].value))


def _source(token: Any) -> tuple[str | None, str | None] | None:
    """``(child name or None for ., transformation or None)`` of a source, else None."""
    transform = None
    if token.symbol in _TRANSFORMS and len(token) == 1:
        transform, token = token.symbol, token[0]
    if token.symbol == "." and len(token) == 0:
        return None, transform
    if (
        token.symbol == ":"
        and len(token) == 2
        and token[0].symbol == "*"
        and token[1].symbol == "(name)"
    ):
        return str(token[1].value), transform
    return None
