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

Compilation and evaluation errors make the predicate false; they are reported
as :class:`FunctionPredicateError` so that callers can count them.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import elementpath
from elementpath import XPath2Parser, XPathContext
from elementpath.xpath30 import XPath30Parser
from elementpath.xpath_nodes import TextNode as ElementPathTextNode
from lxml import etree

from xscl.xpath.errors import FUNCTION_ERROR, Stage1Error
from xscl.xpath.nodes import AttributeNode, Node, TextNode

_NAMESPACES = {"xml": "http://www.w3.org/XML/1998/namespace"}


class FunctionPredicateError(Stage1Error):
    """A function predicate that could not be compiled or evaluated (counted, false)."""

    def __init__(self, message: str) -> None:
        super().__init__(FUNCTION_ERROR, message)


def _parser_for(expression: str) -> Any:
    if "Q{" in expression:
        return XPath30Parser(namespaces=_NAMESPACES)
    return XPath2Parser(namespaces=_NAMESPACES)


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
                self._context = XPathContext(root=self._root.getroottree())
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
