"""XPath 2.0 function predicates through elementpath (spec section 3.1).

A function predicate such as ``contains(./title, 'spark')`` holds when the
effective boolean value of the expression, evaluated with the context node as
context item, is true (a number is *not* a position test).  Unprefixed name
tests inside the expression match by local name in any namespace: before
compiling, every unprefixed name test is rewritten to ``*:name`` using the
token spans of elementpath's own parser, so operators, function names,
variables and string literals are never touched.  If the rewritten text does
not parse (e.g. a sequence type such as ``element(foo)``), the expression is
used as written.  ``Q{uri}local`` names select the XPath 3.0 parser.

Namespaces: the normal form writes prefixed names as canonical ``n0:``,
``n1:`` ... with a leading ``(:xmlns n0="uri":)`` comment per binding
(:func:`xscl.lang.normal_form.function_namespaces` reads them back); those
bindings are given to elementpath's parser, so ``contains(n0:title, 'x')``
tests the Atom ``title``.

Compilation and evaluation errors make the predicate false; they are reported
as :class:`FunctionPredicateError` so that callers can count them.

Regular expressions (``matches``, ``replace``, ``tokenize``,
``analyze-string``) run on Python's backtracking ``re``, which cannot be
interrupted once started, so a time budget cannot stop a pathological match.
:func:`check_function` is therefore run when a definition is registered and
refuses (``XSCL-X012``) a pattern that is not a string literal (a document
could otherwise supply the pattern) or that nests an unbounded quantifier
inside a quantified group (``(a+)+``, ``(\\w*x)*``), the classic exponential
backtracking shape.  Overlapping alternatives (``(a|a)*``) are not detected.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import elementpath
from elementpath import XPath2Parser, XPathContext
from elementpath.xpath30 import XPath30Parser
from elementpath.xpath_nodes import TextNode as ElementPathTextNode
from lxml import etree

from xscl.errors import FunctionPredicateError, Stage1Error
from xscl.lang.normal_form import function_namespaces
from xscl.xpath.nodes import AttributeNode, Node, TextNode

_NAMESPACES = {"xml": "http://www.w3.org/XML/1998/namespace"}
#: functions whose second argument is a regular expression
_REGEX_FUNCTIONS = frozenset({"matches", "replace", "tokenize", "analyze-string"})


def _parser_for(expression: str) -> Any:
    namespaces = {**_NAMESPACES, **function_namespaces(expression)}
    if "Q{" in expression:
        return XPath30Parser(namespaces=namespaces)
    return XPath2Parser(namespaces=namespaces)


def _name_test_spans(token: Any, parent_symbol: str | None, out: list[tuple[int, int]]) -> None:
    if token.symbol == "(name)" and parent_symbol not in (":", "$"):
        out.append(token.span)
        return
    for child in token:
        _name_test_spans(child, token.symbol, out)


def local_name_rewrite(expression: str) -> str:
    """Rewrite unprefixed name tests to ``*:name`` (raises if the text does not parse)."""
    root = _parser_for(expression).parse(expression)
    spans: list[tuple[int, int]] = []
    _name_test_spans(root, None, spans)
    text = expression
    for start, end in sorted(spans, reverse=True):
        text = text[:start] + "*:" + text[start:end] + text[end:]
    return text


@lru_cache(maxsize=4096)
def compile_function(expression: str) -> Any:
    """The compiled root token of ``expression`` (local-name rewritten when possible)."""
    try:
        rewritten = local_name_rewrite(expression)
    except elementpath.ElementPathError as exc:
        raise FunctionPredicateError(f"cannot compile {expression!r}: {exc}") from None
    try:
        return _parser_for(rewritten).parse(rewritten)
    except elementpath.ElementPathError:
        return _parser_for(expression).parse(expression)


_BRACE = re.compile(r"\{(\d*)(,?)(\d*)\}")


def _quantifier_at(pattern: str, i: int) -> tuple[int, bool, bool]:
    """(length, repeats, unbounded) of a quantifier starting at ``pattern[i]`` (0: none)."""
    char = pattern[i]
    if char in "*+":
        return 1, True, True
    if char == "?":
        return 1, False, False
    if char == "{":
        brace = _BRACE.match(pattern, i)
        if brace is not None:
            low, comma, high = brace.groups()
            unbounded = bool(comma) and not high
            repeats = unbounded or int(high or low or "0") > 1
            return brace.end() - i, repeats, unbounded
    return 0, False, False


def nested_quantifier(pattern: str) -> bool:
    """Whether a regex repeats a group that itself contains an unbounded quantifier."""
    stack: list[bool] = []  # per open group: does it contain an unbounded quantifier?
    closed_inner = False  # the group just closed contained one
    i = 0
    while i < len(pattern):
        char = pattern[i]
        after_group, closed_inner = closed_inner, False
        if char == "\\":
            i += 2
            continue
        if char == "[":  # character class: skip to its end (escapes, nested classes)
            depth = 0
            while i < len(pattern):
                if pattern[i] == "\\":
                    i += 1
                elif pattern[i] == "[":
                    depth += 1
                elif pattern[i] == "]":
                    depth -= 1
                    if depth == 0:
                        break
                i += 1
            i += 1
            continue
        if char == "(":
            stack.append(False)
        elif char == ")":
            if stack:
                closed_inner = stack.pop()
                if closed_inner and stack:
                    stack[-1] = True
        else:
            length, repeats, unbounded = _quantifier_at(pattern, i)
            if length:
                if after_group and repeats:
                    return True
                if unbounded and stack:
                    stack[-1] = True
                i += length
                continue
        i += 1
    return False


def _regex_problems(token: Any, out: list[str]) -> None:
    if token.symbol in _REGEX_FUNCTIONS and len(token) >= 2:
        pattern = token[1]
        if pattern.symbol != "(string)":
            out.append(f"the pattern of {token.symbol}() must be a string literal")
        elif nested_quantifier(str(pattern.value)):
            out.append(
                f"the pattern {pattern.value!r} of {token.symbol}() nests quantifiers "
                "(exponential backtracking)"
            )
    for child in token:
        _regex_problems(child, out)


def check_function(expression: str) -> None:
    """Refuse, at registration, function predicates whose regexes could hang a document.

    Raises :class:`Stage1Error` ``XSCL-X012``.  Expressions that do not compile
    are accepted here (they are counted as false when evaluated, as before).
    """
    try:
        token = compile_function(expression)
    except FunctionPredicateError:
        return
    problems: list[str] = []
    _regex_problems(token, problems)
    if problems:
        raise Stage1Error.from_code("XSCL-X012", f"{expression!r}: {problems[0]}")


class DocumentFunctions:
    """Evaluates function predicates on the nodes of one document.

    The elementpath node tree of the document is built lazily, once, on the
    first function predicate that the document needs.
    """

    __slots__ = ("_context", "_root")

    def __init__(self, root: etree._Element) -> None:
        self._root = root
        self._context: XPathContext | None = None

    def _item(self, context: XPathContext, node: Node) -> Any:
        owner = node.owner if isinstance(node, (AttributeNode, TextNode)) else node
        root: Any = context.root
        element_node: Any = root.elements[owner]
        if isinstance(node, AttributeNode):
            for attribute in element_node.attributes:
                if attribute.name == node.key:
                    return attribute
            raise FunctionPredicateError(f"attribute {node.key} not found")
        if isinstance(node, TextNode):
            texts = [c for c in element_node.children if isinstance(c, ElementPathTextNode)]
            return texts[node.index - 1]
        return element_node

    def holds(self, expression: str, node: Node) -> bool:
        """Effective boolean value of ``expression`` at ``node``; errors raise."""
        token = compile_function(expression)
        try:
            if self._context is None:
                # the implicit timezone is UTC, as a ts without an offset (docs/language.md)
                self._context = XPathContext(root=self._root.getroottree(), timezone="Z")
            context = self._context
            context.item = self._item(context, node)
            context.position = 1
            context.size = 1
            context.axis = None
            return bool(token.boolean_value(token.evaluate(context)))
        except FunctionPredicateError:
            raise
        except Exception as exc:  # elementpath raises many types; all mean "false, counted"
            raise FunctionPredicateError(f"{expression!r}: {exc}") from None
