"""Embeddings of one block in one document, by plain recursion (spec/XSCL.md section 3.1).

An embedding maps every variable bound in the block to a node so that every
step and predicate holds. ``BlockMatcher.embeddings`` returns each distinct
embedding once, as ``(first_node, bindings)``: the node the block's first step
matched (needed for ``SELECT *`` output, spec 3.4) and the bindings as a tuple
of ``(var, node)`` pairs sorted by variable.

Axes, with the context being the document node (first step of a block), an
element, or an attribute/text node (which has no children):

* ``/`` selects children: for the document node, the root element only.
* ``//`` selects descendants, excluding the context itself: for the document
  node, every element (so ``S//a`` includes the root element); ``//@a`` selects
  the attributes of the context element *and* of its descendants (XPath
  ``descendant-or-self::node()/attribute::a``); ``//text()`` every text node
  below the context.
* Name tests: unprefixed = local name in any namespace (``@lang`` matches
  ``xml:lang``); ``p:name`` = the namespace URI bound to ``p`` by the query's
  ``DECLARE NAMESPACE`` (``xml`` is always bound). ``*`` matches any element.

Predicates are filters on the step's node: a relative path must embed; a
comparison must hold for some node its path selects, and variables bound in a
compared path bind only embeddings whose selected node satisfies it; a
function predicate is evaluated by ``FunctionPredicates``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from xscl.lang.ast import (
    Block,
    ComparisonPredicate,
    FunctionPredicate,
    NodeTest,
    PathPredicate,
    Predicate,
    Step,
)
from xscl.reference.compare import compare_value
from xscl.reference.xmltree import XML_NAMESPACE, DocTree, Node
from xscl.reference.xpathfn import FunctionPredicates

Bindings = tuple[tuple[str, Node], ...]
Embedding = tuple[Node, Bindings]
_Context = Node | None  # None = the document node


def merge(*parts: Bindings) -> Bindings:
    """Union of disjoint binding tuples, sorted by variable."""
    merged: dict[str, Node] = {}
    for part in parts:
        merged.update(part)
    return tuple(sorted(merged.items(), key=lambda item: item[0]))


def _unique(items: Iterable[Bindings]) -> list[Bindings]:
    return list(dict.fromkeys(items))


class BlockMatcher:
    """Evaluates the steps of blocks of one query on documents."""

    def __init__(self, namespaces: dict[str, str], functions: FunctionPredicates) -> None:
        self._namespaces = {**namespaces, "xml": XML_NAMESPACE}
        self._functions = functions

    def embeddings(self, block: Block, doc: DocTree) -> list[Embedding]:
        """Every distinct embedding of ``block`` in ``doc``, in document order of first nodes."""
        if not block.steps:
            return [(doc.root, ())]
        found = self._walk(block.steps, doc, None, None)
        return sorted(found, key=lambda emb: emb[0].order)

    # -- steps ---------------------------------------------------------------

    def _walk(
        self,
        steps: Sequence[Step],
        doc: DocTree,
        context: _Context,
        final: Callable[[Node], bool] | None,
    ) -> list[Embedding]:
        """Embeddings of ``steps`` from ``context``; ``final`` filters the last step's nodes."""
        step, rest = steps[0], steps[1:]
        out: dict[Embedding, None] = {}
        for node in self._candidates(doc, context, step):
            if not rest and final is not None and not final(node):
                continue
            options: list[Bindings] = [((step.var, node),)] if step.var else [()]
            for predicate in step.predicates:
                choices = self._predicate(predicate, doc, node)
                options = _unique(merge(a, b) for a in options for b in choices)
                if not options:
                    break
            if options and rest:
                tails = _unique(b for _, b in self._walk(rest, doc, node, final))
                options = _unique(merge(a, b) for a in options for b in tails)
            for option in options:
                out[(node, option)] = None
        return list(out)

    def _candidates(self, doc: DocTree, context: _Context, step: Step) -> list[Node]:
        test = step.test
        pool: list[Node]
        if context is None:  # the document node
            if step.axis == "/":
                pool = [doc.root] if test.kind in ("element", "wildcard") else []
            elif test.kind == "attribute":
                pool = doc.attribute_nodes
            elif test.kind == "text":
                pool = doc.text_nodes
            else:
                pool = doc.elements
        elif context.kind != "element":
            pool = []
        elif step.axis == "/":
            if test.kind == "attribute":
                pool = context.attributes
            elif test.kind == "text":
                pool = list(doc.child_texts(context))
            else:
                pool = list(doc.child_elements(context))
        elif test.kind == "attribute":
            pool = [a for e in doc.subtree_elements(context) for a in e.attributes]
        elif test.kind == "text":
            pool = [t for e in doc.subtree_elements(context) for t in e.content if t.kind == "text"]
        else:
            pool = doc.descendant_elements(context)
        return [node for node in pool if self._matches(test, node)]

    def _matches(self, test: NodeTest, node: Node) -> bool:
        if test.kind == "text":
            return node.kind == "text"
        if test.kind == "wildcard":
            return node.kind == "element"
        if node.kind != test.kind or node.local != test.local:
            return False
        if test.prefix is None:
            return True
        if test.prefix not in self._namespaces:
            raise ValueError(f"namespace prefix {test.prefix!r} is not declared")
        return node.namespace == self._namespaces[test.prefix]

    # -- predicates ----------------------------------------------------------

    def _predicate(self, predicate: Predicate, doc: DocTree, node: Node) -> list[Bindings]:
        """The distinct binding sets under which ``predicate`` holds at ``node`` (may be [])."""
        if isinstance(predicate, FunctionPredicate):
            return [()] if self._functions.holds(predicate.expression, doc, node) else []
        if isinstance(predicate, PathPredicate):
            if not predicate.path.steps:
                return [()]
            return _unique(b for _, b in self._walk(predicate.path.steps, doc, node, None))
        assert isinstance(predicate, ComparisonPredicate)
        op, literal = predicate.op, predicate.literal

        def satisfies(candidate: Node) -> bool:
            return compare_value(doc.string_value(candidate), op, literal)

        if not predicate.path.steps:
            return [()] if satisfies(node) else []
        return _unique(b for _, b in self._walk(predicate.path.steps, doc, node, satisfies))
