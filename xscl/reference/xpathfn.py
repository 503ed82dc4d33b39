"""Function predicates: XPath 2.0 expressions evaluated with elementpath (spec 3.1).

``[fn(...)]`` holds when the effective boolean value of the expression, with the
context node as context item, is true. The expression is evaluated as
``fn:boolean((EXPR))``, so a number is converted by the EBV rules (0 and NaN are
false) and is never a position test; ``position()`` and ``last()`` are 1.

Unprefixed name tests inside the expression match by local name in any
namespace, like the rest of XSCL. This is done with elementpath's own parser: a
parser subclass whose ``(name)`` token selects with the wildcard ``{*}name``,
so only real name tests are affected (function names, axes, operators and
variables are recognised by the XPath grammar, not by a hand-written
tokenizer). Prefixed names use the query's ``DECLARE NAMESPACE`` bindings plus
``xml`` (and elementpath's predefined ``fn``, ``xs``...).

Evaluation is strict XPath 2.0: for example ``contains(author, 'x')`` on an
element with two ``author`` children is a type error (XPTY0004). Any error
(static or dynamic) makes the predicate false and is counted in ``EvalStats``. The
implicit timezone is UTC.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import elementpath
from elementpath import XPath2Parser, XPathContext
from elementpath.xpath_tokens import NameToken

from xscl.reference.xmltree import XML_NAMESPACE, DocTree, Node

#: The implicit timezone of a date or time without one: UTC, as a ``ts`` without an
#: offset is (docs/language.md); without it ``current-dateTime()`` has no timezone.
IMPLICIT_TIMEZONE = "Z"

#: How many error messages ``EvalStats`` keeps as samples.
MAX_ERROR_SAMPLES = 20


@dataclass
class EvalStats:
    """Counters of one evaluation: function-predicate errors and PUBLISHed documents."""

    function_errors: int = 0
    error_samples: list[str] = field(default_factory=list)
    published_documents: int = 0
    published_rejected: int = 0

    def record_error(self, message: str) -> None:
        """Count one function-predicate error (evaluated as false)."""
        self.function_errors += 1
        self.add_sample(message)

    def add_sample(self, message: str) -> None:
        if len(self.error_samples) < MAX_ERROR_SAMPLES:
            self.error_samples.append(message)


class _LocalNameToken(NameToken):
    """A name test that matches by local name in any namespace."""

    def select(self, context: Any = None) -> Iterator[Any]:
        if context is None:
            raise self.missing_context()
        name = self.value
        if name and name != "*" and not name.startswith("{") and ":" not in name:
            name = "{*}" + name
        yield from context.iter_matching_nodes(name, self.parser.default_namespace)


class LocalNameXPath2Parser(XPath2Parser):
    """XPath 2.0 parser whose unprefixed name tests match by local name."""


LocalNameXPath2Parser.symbol_table["(name)"] = _LocalNameToken
LocalNameXPath2Parser.build()


class FunctionPredicates:
    """Compiles and evaluates function predicates for one query (namespaces fixed)."""

    def __init__(self, namespaces: dict[str, str], stats: EvalStats) -> None:
        self._namespaces = {**namespaces, "xml": XML_NAMESPACE}
        self._stats = stats
        self._compiled: dict[str, Any] = {}
        self._node_trees: dict[int, Any] = {}

    def _compile(self, expression: str) -> Any:
        """The parsed ``fn:boolean((EXPR))`` token; a static error is cached and re-raised."""
        if expression not in self._compiled:
            parser = LocalNameXPath2Parser(namespaces=dict(self._namespaces))
            try:
                self._compiled[expression] = parser.parse(f"fn:boolean(({expression}\n))")
            except Exception as exc:
                self._compiled[expression] = exc
        compiled = self._compiled[expression]
        if isinstance(compiled, Exception):
            raise compiled
        return compiled

    def _context_item(self, doc: DocTree, node: Node) -> Any:
        key = id(doc)
        if key not in self._node_trees:
            self._node_trees[key] = (doc, elementpath.get_node_tree(doc.tree))
        node_tree = self._node_trees[key][1]
        element_node = node_tree.get_element_node(node.element)
        if node.kind == "element":
            return node_tree, element_node
        if node.kind == "attribute":
            for attribute in element_node.attributes:
                if attribute.name == node.attr_key:
                    return node_tree, attribute
            raise LookupError(f"attribute {node.node_id} not found by elementpath")
        texts = [c for c in element_node.children if isinstance(c, elementpath.TextNode)]
        if node.text_index > len(texts) or texts[node.text_index - 1].value != node.raw_value:
            raise LookupError(f"text node {node.node_id} not found by elementpath")
        return node_tree, texts[node.text_index - 1]

    def holds(self, expression: str, doc: DocTree, node: Node) -> bool:
        """EBV of ``expression`` at ``node``; an error counts and gives False."""
        try:
            token = self._compile(expression)
            root, item = self._context_item(doc, node)
            context = XPathContext(root=root, item=item, timezone=IMPLICIT_TIMEZONE)
            return bool(token.evaluate(context))
        except Exception as exc:  # any XPath/elementpath failure is "false, counted"
            self._stats.record_error(f"{expression!r} at node {node.node_id}: {exc}")
            return False
