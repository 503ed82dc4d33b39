"""Stage 1: one shared pass per document from registered definitions to witnesses.

``Stage1`` is the thesis's XPath Evaluator (thesis 6.3).  Consumers (the
templates, the join layer) register canonical variable definitions
(:class:`~xscl.lang.normal_form.model.VarDef`), say what they need of each
(``require_value``, ``require_nodes``, ``require_pair``), and call
``evaluate`` / ``evaluate_many`` on documents.  Each document is parsed
safely once and walked once, whatever the number of definitions; see
:mod:`xscl.xpath.automaton` for the automaton and :mod:`xscl.xpath.witness`
for the output relations.

Variable ids are stable for the lifetime of a ``Stage1``: a definition keeps
its id even after it is unregistered and registered again.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from lxml import etree

from xscl.lang.ast import NodeTest, Predicate, Step
from xscl.lang.normal_form.model import VarDef
from xscl.xpath.automaton import Automaton, State, TrieNode
from xscl.xpath.errors import BAD_DEFINITION, BAD_EDGE, TOO_DEEP, Stage1Error
from xscl.xpath.nodes import (
    AttributeNode,
    TextNode,
    attribute_id,
    attribute_items,
    text_children,
)
from xscl.xpath.predicates import PredicateEvaluator
from xscl.xpath.safe_parse import ParseLimits, entity_error, parse_document
from xscl.xpath.strings import normalize
from xscl.xpath.witness import DocumentError, WitnessBatch, WitnessBuilder

#: A document to evaluate: (stream, docid, ts in microseconds UTC, XML text or bytes).
Document = tuple[str, str, int, "bytes | str"]

#: The step a definition without steps (the root element) is evaluated as.
_ROOT_ELEMENT_STEPS: tuple[Step, ...] = (Step("/", NodeTest("wildcard")),)


@dataclass(frozen=True)
class _PairSpec:
    parent_var: int
    child_var: int
    #: trie nodes from the parent's last node to the child's last node (both included)
    chain: tuple[TrieNode, ...]
    #: the parent is the root element (a definition without steps)
    root_parent: bool


@dataclass
class _Registration:
    definition: VarDef
    var_id: int
    node: TrieNode
    refcount: int


@dataclass(frozen=True)
class _Emission:
    values: tuple[int, ...]
    nodes: tuple[int, ...]
    pairs: tuple[_PairSpec, ...]


def _check_filter_only(steps: tuple[Step, ...]) -> None:
    for step in steps:
        if step.var is not None:
            raise Stage1Error(BAD_DEFINITION, f"definition binds variable {step.var!r}")
        _check_predicates(step.predicates)


def _check_predicates(predicates: tuple[Predicate, ...]) -> None:
    for predicate in predicates:
        path = getattr(predicate, "path", None)
        if path is not None:
            _check_filter_only(path.steps)


class Stage1:
    """Shared evaluation of all registered definitions (thesis 6.3, spec 3.1)."""

    def __init__(self, limits: ParseLimits | None = None) -> None:
        self.limits = limits if limits is not None else ParseLimits()
        self._automata: dict[str, Automaton] = {}
        self._ids: dict[VarDef, int] = {}
        self._definitions: dict[int, VarDef] = {}
        self._registered: dict[int, _Registration] = {}
        self._values: set[int] = set()
        self._nodes: set[int] = set()
        self._pairs: dict[tuple[int, int], _PairSpec] = {}
        self._emission: dict[int, _Emission] = {}
        #: documents evaluated, documents rejected per error code, function errors
        self.counters: Counter[str] = Counter()

    # ------------------------------------------------------------ registry
    def register(self, definition: VarDef) -> int:
        """Register one more use of ``definition``; returns its stable var id."""
        var_id = self._ids.get(definition)
        registration = self._registered.get(var_id) if var_id is not None else None
        if registration is not None:
            registration.refcount += 1
            return registration.var_id
        steps = definition.path.steps
        _check_filter_only(steps)
        if var_id is None:
            var_id = len(self._ids) + 1
            self._ids[definition] = var_id
            self._definitions[var_id] = definition
        automaton = self._automata.get(definition.stream)
        if automaton is None:
            automaton = Automaton(self._is_needed)
            self._automata[definition.stream] = automaton
        node = automaton.add_path(steps or _ROOT_ELEMENT_STEPS)
        node.var_ids.add(var_id)
        self._registered[var_id] = _Registration(definition, var_id, node, 1)
        self._changed(definition.stream)
        return var_id

    def unregister(self, definition: VarDef) -> None:
        """Drop one use of ``definition``; at zero its requirements go too."""
        var_id = self._ids.get(definition)
        registration = self._registered.get(var_id) if var_id is not None else None
        if registration is None or var_id is None:
            raise KeyError(definition)
        registration.refcount -= 1
        if registration.refcount:
            return
        del self._registered[var_id]
        self._values.discard(var_id)
        self._nodes.discard(var_id)
        for key in [k for k in self._pairs if var_id in k]:
            del self._pairs[key]
        registration.node.var_ids.discard(var_id)
        automaton = self._automata[definition.stream]
        automaton.remove_path(registration.node)
        if automaton.root.refcount == 0:
            del self._automata[definition.stream]
        self._changed(definition.stream)

    def var_id(self, definition: VarDef) -> int | None:
        """The id of a registered definition, or None."""
        var_id = self._ids.get(definition)
        return var_id if var_id in self._registered else None

    def definition(self, var_id: int) -> VarDef:
        return self._definitions[var_id]

    @property
    def registered(self) -> dict[int, VarDef]:
        """Currently registered definitions by var id."""
        return {v: r.definition for v, r in self._registered.items()}

    def _registration(self, var_id: int) -> _Registration:
        registration = self._registered.get(var_id)
        if registration is None:
            raise KeyError(f"var id {var_id} is not registered")
        return registration

    def require_value(self, var_id: int) -> None:
        """Emit ``values`` rows (node, string value) for every node of ``var_id``."""
        registration = self._registration(var_id)
        self._values.add(var_id)
        self._changed(registration.definition.stream)

    def release_value(self, var_id: int) -> None:
        self._values.discard(var_id)
        self._changed_var(var_id)

    def require_nodes(self, var_id: int) -> None:
        """Emit ``matches`` rows (node) for every node of ``var_id``."""
        registration = self._registration(var_id)
        self._nodes.add(var_id)
        self._changed(registration.definition.stream)

    def release_nodes(self, var_id: int) -> None:
        self._nodes.discard(var_id)
        self._changed_var(var_id)

    def require_pair(self, parent_id: int, child_id: int) -> None:
        """Emit ``bindings`` rows for the pattern edge (parent, child)."""
        parent = self._registration(parent_id)
        child = self._registration(child_id)
        p_steps = parent.definition.path.steps
        c_steps = child.definition.path.steps
        if (
            parent.definition.stream != child.definition.stream
            or c_steps[: len(p_steps)] != p_steps
            or len(c_steps) <= len(p_steps)
        ):
            raise Stage1Error(BAD_EDGE, f"({parent_id}, {child_id}) is not a pattern edge")
        chain = tuple(child.node.chain_from(parent.node)) if p_steps else (child.node,)
        self._pairs[(parent_id, child_id)] = _PairSpec(
            parent_id, child_id, chain, root_parent=not p_steps
        )
        self._changed(parent.definition.stream)

    def release_pair(self, parent_id: int, child_id: int) -> None:
        self._pairs.pop((parent_id, child_id), None)
        self._changed_var(parent_id)

    def _changed_var(self, var_id: int) -> None:
        registration = self._registered.get(var_id)
        if registration is not None:
            self._changed(registration.definition.stream)

    def _changed(self, stream: str) -> None:
        self._emission.clear()
        automaton = self._automata.get(stream)
        if automaton is not None:
            automaton.invalidate()

    def _emission_of(self, node: TrieNode) -> _Emission:
        emission = self._emission.get(node.id)
        if emission is None:
            ids = sorted(node.var_ids)
            emission = _Emission(
                values=tuple(v for v in ids if v in self._values),
                nodes=tuple(v for v in ids if v in self._nodes),
                pairs=tuple(
                    spec
                    for (_, child), spec in sorted(self._pairs.items())
                    if child in node.var_ids
                ),
            )
            self._emission[node.id] = emission
        return emission

    def _is_needed(self, node: TrieNode) -> bool:
        emission = self._emission_of(node)
        return bool(emission.values or emission.nodes or emission.pairs)

    # ----------------------------------------------------------- evaluation
    def evaluate(self, stream: str, docid: str, ts_micros: int, xml: bytes | str) -> WitnessBatch:
        """Witnesses of one document; raises :class:`Stage1Error` if it is rejected."""
        builder = WitnessBuilder()
        self._evaluate_into(builder, stream, docid, ts_micros, xml)
        return builder.build()

    def evaluate_many(self, documents: Iterable[Document]) -> WitnessBatch:
        """Witnesses of many documents; rejected ones become ``errors``, never exceptions."""
        builder = WitnessBuilder()
        for stream, docid, ts, xml in documents:
            mark = builder.mark()
            try:
                self._evaluate_into(builder, stream, docid, ts, xml)
            except Stage1Error as exc:
                builder.rollback(mark)
                builder.errors.append(DocumentError(stream, docid, ts, exc.code, exc.message))
                self.counters[exc.code] += 1
            except RecursionError as exc:  # pragma: no cover - defensive: deep predicates
                builder.rollback(mark)
                builder.errors.append(DocumentError(stream, docid, ts, TOO_DEEP, str(exc)))
                self.counters[TOO_DEEP] += 1
        return builder.build()

    def _evaluate_into(
        self, builder: WitnessBuilder, stream: str, docid: str, ts: int, xml: bytes | str
    ) -> None:
        root = parse_document(xml, self.limits)
        automaton = self._automata.get(stream)
        evaluator = PredicateEvaluator(root)
        if automaton is None:
            _walk_checks_only(root, self.limits.max_depth)
            builder.add_document(stream, docid, ts)
        else:
            run = _DocumentRun(self, automaton, evaluator, builder)
            run.walk(root, self.limits.max_depth)
            run.doc = builder.add_document(stream, docid, ts)
            run.flush()
        builder.function_errors += evaluator.function_errors
        self.counters["function_errors"] += evaluator.function_errors
        self.counters["documents"] += 1


def _walk_checks_only(root: etree._Element, max_depth: int) -> None:
    stack: list[tuple[etree._Element, int]] = [(root, 1)]
    while stack:
        element, depth = stack.pop()
        if depth > max_depth:
            raise Stage1Error(TOO_DEEP, f"nesting deeper than {max_depth}")
        for child in element:
            if isinstance(child, etree._Entity):
                raise entity_error(child)
            if isinstance(child.tag, str):
                stack.append((child, depth + 1))


class _DocumentRun:
    """The single walk over one document and the rows it produces."""

    __slots__ = (
        "automaton",
        "builder",
        "doc",
        "elements",
        "evaluator",
        "hits",
        "parents",
        "stage",
        "states",
    )

    def __init__(
        self,
        stage: Stage1,
        automaton: Automaton,
        evaluator: PredicateEvaluator,
        builder: WitnessBuilder,
    ) -> None:
        self.stage = stage
        self.automaton = automaton
        self.evaluator = evaluator
        self.builder = builder
        self.doc = -1
        self.states: list[State] = []
        self.parents: list[int] = []
        self.elements: list[etree._Element] = []
        #: (trie node, node id, owner element index, is element, raw value or element)
        self.hits: list[tuple[TrieNode, str, int, bool, object]] = []

    def walk(self, root: etree._Element, max_depth: int) -> None:
        automaton = self.automaton
        step = automaton.step
        evaluator = self.evaluator
        states, parents, elements, hits = self.states, self.parents, self.elements, self.hits
        stack: list[tuple[etree._Element, State, int, int]] = [(root, automaton.start(), -1, 1)]
        while stack:
            element, parent_state, parent_index, depth = stack.pop()
            if depth > max_depth:
                raise Stage1Error(TOO_DEEP, f"nesting deeper than {max_depth}")
            state = step(parent_state, element, element.tag, evaluator)
            index = len(elements)
            elements.append(element)
            states.append(state)
            parents.append(parent_index)
            if state.emit:
                node_id = str(index)
                for node in state.emit:
                    hits.append((node, node_id, index, True, element))
            if state.attribute_index and len(element.attrib):
                self._attributes(state, element, index)
            if state.text_candidates:
                self._texts(state, element, index)
            children = []
            for child in element:
                if isinstance(child.tag, str):
                    children.append(child)
                elif isinstance(child, etree._Entity):
                    raise entity_error(child)
            depth += 1
            for child in reversed(children):
                stack.append((child, state, index, depth))

    def _attributes(self, state: State, element: etree._Element, index: int) -> None:
        for key, raw in attribute_items(element):
            candidates = self.automaton.attribute_candidates(state, key)
            if not candidates:
                continue
            node_id: str | None = None
            for node in candidates:
                if not self.stage._is_needed(node):
                    continue
                if node.predicates and not self.evaluator.all_hold(
                    node.predicates, AttributeNode(element, key, raw)
                ):
                    continue
                if node_id is None:
                    node_id = attribute_id(index, element, key)
                self.hits.append((node, node_id, index, False, raw))

    def _texts(self, state: State, element: etree._Element, index: int) -> None:
        needed = [n for n in state.text_candidates if self.stage._is_needed(n)]
        if not needed:
            return
        for k, raw in enumerate(text_children(element), start=1):
            node_id = f"{index}/text()[{k}]"
            for node in needed:
                if node.predicates and not self.evaluator.all_hold(
                    node.predicates, TextNode(element, k, raw)
                ):
                    continue
                self.hits.append((node, node_id, index, False, raw))

    def flush(self) -> None:
        """Append the document's rows (values, matches, bindings) to the builder."""
        b = self.builder
        doc = self.doc
        emission_of = self.stage._emission_of
        value_cache: dict[int, str] = {}
        for node, node_id, owner, is_element, source in self.hits:
            emission = emission_of(node)
            if emission.values:
                if is_element:
                    value = value_cache.get(owner)
                    if value is None:
                        value = self.evaluator.value(self.elements[owner])
                        value_cache[owner] = value
                else:
                    value = normalize(str(source))
                count = len(emission.values)
                b.value_doc.extend([doc] * count)
                b.value_var.extend(emission.values)
                b.value_node.extend([node_id] * count)
                b.value_str.extend([value] * count)
            if emission.nodes:
                count = len(emission.nodes)
                b.match_doc.extend([doc] * count)
                b.match_var.extend(emission.nodes)
                b.match_node.extend([node_id] * count)
            for spec in emission.pairs:
                for parent in self._pair_parents(spec, owner, is_element):
                    b.bind_doc.append(doc)
                    b.bind_var1.append(spec.parent_var)
                    b.bind_var2.append(spec.child_var)
                    b.bind_node1.append(str(parent))
                    b.bind_node2.append(node_id)

    def _pair_parents(self, spec: _PairSpec, owner: int, is_element: bool) -> list[int]:
        """Element indices of the parent variable from which this child node is reached."""
        if spec.root_parent:
            return [0]
        states, parents = self.states, self.parents
        chain = spec.chain
        i = len(chain) - 1
        current: set[int]
        if is_element:
            current = {owner}
        else:
            previous = chain[i - 1]
            current = set()
            position = owner
            while position >= 0:
                if previous in states[position].matched:
                    current.add(position)
                if chain[i].axis == "/":
                    break
                position = parents[position]
            i -= 1
        while i > 0 and current:
            node, previous = chain[i], chain[i - 1]
            found: set[int] = set()
            for x in current:
                position = parents[x]
                while position >= 0:
                    if previous in states[position].matched:
                        found.add(position)
                    if node.axis == "/":
                        break
                    position = parents[position]
            current = found
            i -= 1
        return sorted(current)
