"""Filter predicates on the nodes the automaton reaches (spec section 3.1).

Predicates of a canonical definition bind nothing, so each is a boolean test
of its context node: ``[path]`` (some node exists), ``[path op literal]``
(some node's normalised value compares true) and ``[fn(...)]`` (XPath 2.0
effective boolean value, see :mod:`xscl.xpath.functions`).  Relative paths are
evaluated here directly on the lxml tree with the same axis rules as the
automaton (``.//x`` excludes the context element, ``.//@x`` includes its own
attributes; name tests without a namespace match by local name).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal

from lxml import etree

from xscl.errors import FunctionPredicateError
from xscl.lang.ast import (
    CompareOp,
    ComparisonPredicate,
    FunctionPredicate,
    LiteralValue,
    NodeTest,
    NumberLiteral,
    PathPredicate,
    Predicate,
    RelPath,
    Step,
)
from xscl.xpath.filter_order import FilterOrder
from xscl.xpath.functions import CompiledFunction, DocumentFunctions, FunctionTable
from xscl.xpath.nodes import (
    AttributeNode,
    Node,
    TextNode,
    attribute_items,
    raw_string_value,
    split_name,
    text_children,
)
from xscl.xpath.presearch import SourceValues
from xscl.xpath.strings import OPERATORS, XML_WHITESPACE, compare, normalize, parse_number


def name_matches(test: NodeTest, clark: str) -> bool:
    """Whether an element/attribute named ``clark`` passes a named ``test``."""
    uri, local = split_name(clark)
    if test.local != local:
        return False
    return test.prefix is None or test.prefix == "{" + uri + "}"


def _elements(candidates: Iterator[etree._Element], test: NodeTest) -> Iterator[etree._Element]:
    for element in candidates:
        tag = element.tag
        if not isinstance(tag, str):
            continue
        if test.kind == "wildcard" or name_matches(test, tag):
            yield element


def _attributes_of(element: etree._Element, test: NodeTest) -> Iterator[AttributeNode]:
    for key, value in attribute_items(element):
        if name_matches(test, key):
            yield AttributeNode(element, key, value)


def _texts_of(element: etree._Element) -> Iterator[TextNode]:
    for index, text in enumerate(text_children(element), start=1):
        yield TextNode(element, index, text)


def axis_nodes(context: Node, step: Step) -> Iterator[Node]:
    """Nodes one step selects from ``context``, before the step's predicates."""
    if not isinstance(context, etree._Element):
        return  # attributes and text nodes have no children
    kind = step.test.kind
    if step.axis == "/":
        if kind in ("element", "wildcard"):
            yield from _elements(iter(context), step.test)
        elif kind == "attribute":
            yield from _attributes_of(context, step.test)
        else:
            yield from _texts_of(context)
        return
    if kind in ("element", "wildcard"):
        yield from _elements(context.iterdescendants(), step.test)
        return
    for element in context.iter():
        if isinstance(element.tag, str):
            if kind == "attribute":
                yield from _attributes_of(element, step.test)
            else:
                yield from _texts_of(element)


class PathTable:
    """Interns relative paths so that per-document caches key on a small int."""

    def __init__(self) -> None:
        self._ids: dict[RelPath, int] = {}

    def key(self, path: RelPath) -> int:
        return self._ids.setdefault(path, len(self._ids))


@dataclass(frozen=True, slots=True)
class CompiledPredicate:
    """A predicate with its relative path interned (``path_key``) and its number parsed."""

    predicate: Predicate
    path_key: int
    steps: tuple[Step, ...]
    #: the local name when the path is one plain ``/name`` step (fast path), else None
    child_name: str | None = None
    #: a function predicate's compiled form, held by the registration (else None)
    function: CompiledFunction | None = None


def plain_child_name(steps: tuple[Step, ...]) -> str | None:
    """``name`` when ``steps`` is exactly one ``/name`` step without prefix or predicates."""
    if len(steps) != 1:
        return None
    step = steps[0]
    test = step.test
    if step.axis != "/" or test.kind != "element" or test.prefix is not None or step.predicates:
        return None
    return test.local


def compile_predicates(
    predicates: tuple[Predicate, ...], table: PathTable, functions: FunctionTable
) -> tuple[CompiledPredicate, ...]:
    """The predicates of one step, paths interned; function predicates are looked up in
    ``functions`` (which the registration of the definition holds them in)."""
    out = []
    for predicate in predicates:
        if isinstance(predicate, (PathPredicate, ComparisonPredicate)):
            path = predicate.path
            out.append(
                CompiledPredicate(
                    predicate, table.key(path), path.steps, plain_child_name(path.steps)
                )
            )
        else:
            function = functions.get(predicate.expression)
            out.append(CompiledPredicate(predicate, -1, (), function=function))
    return tuple(out)


def _cost_class(compiled: CompiledPredicate) -> int:
    function = compiled.function
    if function is None:
        return 0
    expression = function.expression
    return 2 if "matches(" in expression or "replace(" in expression else 1


def initial_order(predicates: tuple[CompiledPredicate, ...]) -> tuple[int, ...]:
    """A first guess of the cheapest order (A-Greedy's start, ``xscl.xpath.filter_order``):
    path and literal comparisons, then function predicates, those with a regex last.

    >>> from xscl.lang.ast import FunctionPredicate, PathPredicate, RelPath
    >>> table = FunctionTable()
    >>> written = (FunctionPredicate("matches(., 'a')"), FunctionPredicate("contains(., 'b')"),
    ...            PathPredicate(RelPath()))
    >>> initial_order(compile_predicates(written, PathTable(), table))
    (2, 1, 0)
    """
    return tuple(sorted(range(len(predicates)), key=lambda i: _cost_class(predicates[i])))


class PredicateEvaluator:
    """Evaluates filter predicates on the nodes of one document.

    Per document it memoises, for elements: the result of a whole predicate
    tuple (key chosen by the caller), the normalised values a relative path
    selects (so thousands of comparisons on ``./title`` read the titles once),
    and element string values.  ``function_errors`` counts function
    predicates that failed (and were false).  Function predicates come
    compiled from ``functions``, the table the registrations hold (a fresh
    table, compiling on first use, when none is given).
    """

    __slots__ = (
        "_cache",
        "_functions",
        "_path_numbers_cache",
        "_path_values",
        "function_errors",
        "function_table",
        "nfc_text",
        "root",
        "source_values",
        "strings",
    )

    def __init__(self, root: etree._Element, functions: FunctionTable | None = None) -> None:
        self.root = root
        self.function_table = functions if functions is not None else FunctionTable()
        self._functions: DocumentFunctions | None = None
        self._cache: dict[tuple[int, etree._Element], bool] = {}
        self._path_values: dict[tuple[int, etree._Element], list[str]] = {}
        self._path_numbers_cache: dict[tuple[int, etree._Element], list[Decimal]] = {}
        self.strings: dict[etree._Element, str] = {}
        #: folded source values for the presearch (``xscl.xpath.presearch``)
        self.source_values = SourceValues()
        #: the document's text is NFC (see ``element_value``)
        self.nfc_text = False
        self.function_errors = 0

    def select(self, context: Node, steps: tuple[Step, ...]) -> Iterator[Node]:
        """Nodes a relative path selects from ``context`` (duplicates possible)."""
        if not steps:
            yield context
            return
        first, rest = steps[0], steps[1:]
        for node in axis_nodes(context, first):
            if self.all_hold(first.predicates, node):
                yield from self.select(node, rest)

    def holds(self, predicate: Predicate, node: Node) -> bool:
        if isinstance(predicate, PathPredicate):
            return any(True for _ in self.select(node, predicate.path.steps))
        if isinstance(predicate, ComparisonPredicate):
            return any(
                compare(self.value(found), predicate.op, predicate.literal)
                for found in self.select(node, predicate.path.steps)
            )
        return self._function(predicate, node)

    def all_hold(self, predicates: tuple[Predicate, ...], node: Node) -> bool:
        return all(self.holds(predicate, node) for predicate in predicates)

    def children_by_name(self, element: etree._Element) -> dict[str, list[etree._Element]]:
        """The element's child elements grouped by local name, in document order."""
        groups: dict[str, list[etree._Element]] = {}
        for child in element:
            tag = child.tag
            if tag.__class__ is str:
                local = split_name(tag)[1]
                found = groups.get(local)
                if found is None:
                    groups[local] = [child]
                else:
                    found.append(child)
        return groups

    def path_values(self, compiled: CompiledPredicate, element: etree._Element) -> list[str]:
        """Normalised values of the nodes the predicate's path selects (memoised)."""
        memo = (compiled.path_key, element)
        values = self._path_values.get(memo)
        if values is None:
            name = compiled.child_name
            if name is not None:
                value = self.element_value
                values = [
                    value(child)
                    for child in element
                    if child.tag.__class__ is str and split_name(child.tag)[1] == name
                ]
            elif not compiled.steps:
                values = [self.element_value(element)]
            else:
                values = [self.value(found) for found in self.select(element, compiled.steps)]
            self._path_values[memo] = values
        return values

    def path_numbers(self, compiled: CompiledPredicate, element: etree._Element) -> list[Decimal]:
        memo = (compiled.path_key, element)
        numbers = self._path_numbers_cache.get(memo)
        if numbers is None:
            parsed = (parse_number(v) for v in self.path_values(compiled, element))
            numbers = [n for n in parsed if n is not None]
            self._path_numbers_cache[memo] = numbers
        return numbers

    def compare_any(
        self,
        compiled: CompiledPredicate,
        element: etree._Element,
        op: CompareOp,
        literal: LiteralValue,
    ) -> bool:
        """Whether some value the path selects compares true (spec 3.1, existential)."""
        if isinstance(literal, NumberLiteral):
            function = OPERATORS[op]
            number = literal.value
            return any(function(n, number) for n in self.path_numbers(compiled, element))
        return any(compare(v, op, literal) for v in self.path_values(compiled, element))

    def _compiled_holds(self, compiled: CompiledPredicate, element: etree._Element) -> bool:
        predicate = compiled.predicate
        if isinstance(predicate, ComparisonPredicate):
            return self.compare_any(compiled, element, predicate.op, predicate.literal)
        if isinstance(predicate, PathPredicate):
            return bool(self.path_values(compiled, element))
        function = compiled.function
        if function is None:
            return self._function(predicate, element)
        return self.function_holds(function, element)

    def check(
        self, key: int, predicates: tuple[CompiledPredicate, ...], element: etree._Element
    ) -> bool:
        """Memoised test of compiled predicates on an element; ``key`` identifies the tuple."""
        memo = (key, element)
        result = self._cache.get(memo)
        if result is None:
            result = all(self._compiled_holds(c, element) for c in predicates)
            self._cache[memo] = result
        return result

    def check_in_order(
        self,
        key: int,
        predicates: tuple[CompiledPredicate, ...],
        element: etree._Element,
        order: FilterOrder,
    ) -> bool:
        """``check`` with the predicates evaluated in ``order`` (``xscl.xpath.filter_order``)."""
        memo = (key, element)
        result = self._cache.get(memo)
        if result is None:
            holds = self._compiled_holds
            result = order.run(lambda i: holds(predicates[i], element))
            self._cache[memo] = result
        return result

    def value(self, node: Node) -> str:
        """Normalised string value (memoised for elements)."""
        if isinstance(node, (AttributeNode, TextNode)):
            return normalize(node.raw)
        return self.element_value(node)

    def element_value(self, element: etree._Element) -> str:
        """Normalised string value of an element, computed at most once per document.

        When the root's raw string value (all the document's text) passes
        Python's NFC quick check, which ``unicodedata.normalize`` reports by
        returning its argument itself, so does every substring of it (the
        check is per character and per adjacent pair): ``nfc_text`` is set and
        the values of the other elements skip NFC.
        """
        value = self.strings.get(element)
        if value is None:
            # a leaf's string value is its text (CDATA is merged by the parser)
            value = (element.text or "") if not len(element) else raw_string_value(element)
            if not value.isascii() and not self.nfc_text:
                normalized = unicodedata.normalize("NFC", value)
                if normalized is value and element is self.root:
                    self.nfc_text = True
                value = normalized
            value = value.strip(XML_WHITESPACE)  # as strings.normalize, inlined: hot
            self.strings[element] = value
        return value

    def _function(self, predicate: FunctionPredicate, node: Node) -> bool:
        return self.function_holds(self.function_table.get(predicate.expression), node)

    def function_holds(self, function: CompiledFunction, node: Node) -> bool:
        """A function predicate at ``node``; an error counts and makes it false."""
        if self._functions is None:
            self._functions = DocumentFunctions(self.root)
        try:
            return self._functions.holds(function, node)
        except FunctionPredicateError:
            self.function_errors += 1
            return False
