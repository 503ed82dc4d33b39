"""The single walk over one parsed document and the witness rows it appends.

The walk is lxml's C-level ``iterwalk`` (start/end events in document order),
keeping the indices of the open elements on a stack: the parent of an element
and the ancestor any number of levels up are list lookups, and there is no
Python recursion and no per-child list building.
Per element the DFA gives a :class:`~xscl.xpath.automaton.State` whose
precomputed :class:`~xscl.xpath.emission.Emission` says which var ids
need a value, a node or a pair row: the element's string value is computed
at most once (shared by every var and memoised with the predicates'), its
node id is an interned string, and the rows are appended as Python tuples to
a :class:`DocumentRows`: each emission caches its rows per node id, and
documents repeat their node ids, so a warm element's hundreds of
``value_nodes`` rows are one ``list.extend`` of shared tuples.
"""

from __future__ import annotations

from bisect import bisect_left
from unicodedata import normalize as nfc

from lxml import etree

from xscl.errors import XmlDocumentError
from xscl.xpath.automaton import Automaton, BindPlan, State
from xscl.xpath.emission import Emission, FixedPairs, PairSpec
from xscl.xpath.nodes import (
    AttributeNode,
    TextNode,
    attribute_id,
    text_children,
)
from xscl.xpath.predicates import PredicateEvaluator
from xscl.xpath.safe_parse import entity_error
from xscl.xpath.strings import XML_WHITESPACE, normalize
from xscl.xpath.witness import DocumentRows, element_ids

_ENTITY = etree.Entity


def walk_checks_only(root: etree._Element, max_depth: int) -> None:
    """The walk's own checks (depth, entity references) for a stream with no definitions."""
    for node in root.iter(_ENTITY):
        raise entity_error(node)
    depth: dict[etree._Element, int] = {}
    for element in root.iter(etree.Element):
        parent = element.getparent()
        level = 1 if parent is None else depth[parent] + 1
        if level > max_depth:
            raise XmlDocumentError.from_code("XSCL-X003", f"nesting deeper than {max_depth}")
        depth[element] = level


class DocumentRun:
    """One document: walk, states per element, rows into a :class:`DocumentRows`."""

    __slots__ = (
        "automaton",
        "evaluator",
        "ids",
        "parents",
        "path",
        "rows",
        "states",
    )

    def __init__(
        self, automaton: Automaton, evaluator: PredicateEvaluator, rows: DocumentRows
    ) -> None:
        self.automaton = automaton
        self.evaluator = evaluator
        #: the interned element ids (one shared list, grown in place by ``element_ids``)
        self.ids = element_ids(1024)
        self.rows = rows
        #: per element (pre-order index): its DFA state and its parent's index
        self.states: list[State] = []
        self.parents: list[int] = []
        #: pre-order indices of the elements from the root to the current one
        self.path: list[int] = []

    def walk(self, root: etree._Element, max_depth: int) -> None:
        """Visit every element once; raises for entity references and excess depth."""
        automaton = self.automaton
        step = automaton.step
        target = automaton.target
        evaluator = self.evaluator
        element_value = evaluator.element_value
        strings = evaluator.strings
        states, parents = self.states, self.parents
        value_rows, value_node_rows, match_rows, bind_rows = self.rows
        attributes, texts = self._attributes, self._texts
        #: pre-order indices of the open elements, root first (the current path)
        path = self.path
        start = automaton.start()
        bind_plans = automaton.bind_plans
        ids = self.ids
        index = 0
        for event, element in etree.iterwalk(root, events=("start", "end")):
            if event == "end":
                path.pop()
                continue
            tag = element.tag
            if tag.__class__ is not str:
                raise entity_error(element)  # only entity references reach here
            if path:
                if len(path) >= max_depth:
                    raise XmlDocumentError.from_code(
                        "XSCL-X003", f"nesting deeper than {max_depth}"
                    )
                parent_index = path[-1]
                source = states[parent_index]
            else:
                parent_index = -1
                source = start
            # the hot cases inline: a plain cached transition, or a leaf whose
            # target only depends on its own value (see PredicatedTransition)
            transition = source.transitions.get(tag)
            if isinstance(transition, State):
                state = transition
            elif transition is not None and transition.leaf_group is not None and not len(element):
                value = strings.get(element)
                if value is None:
                    # a leaf's string value is its text (element_value, inlined: hot)
                    value = element.text or ""
                    if not value.isascii() and not evaluator.nfc_text:
                        value = nfc("NFC", value)
                    value = strings[element] = value.strip(XML_WHITESPACE)
                leaf_group = transition.leaf_group
                keys = leaf_group.string_keys
                if keys is None:
                    passed = leaf_group.passed_one(value)
                else:  # leaf_group.passed_one, inlined: hot
                    p = bisect_left(keys, value)
                    hit = leaf_group.memo.get(2 * p + (p < len(keys) and keys[p] == value))
                    passed = leaf_group.passed_one(value) if hit is None else hit
                found = transition.by_passed.get(passed)
                state = target(source, transition, passed) if found is None else found
            else:
                state = step(source, element, tag, evaluator)
            path.append(index)
            states.append(state)
            parents.append(parent_index)
            output = state.output
            if output is not None:
                if index >= len(ids):
                    ids = element_ids(index + 1)
                node = ids[index]
                if output.values:
                    value = strings.get(element)
                    value_rows.append((node, element_value(element) if value is None else value))
                    cached = output.value_rows.get(node)
                    value_node_rows.extend(output.value_rows_of(node) if cached is None else cached)
                if output.nodes:
                    cached = output.node_rows.get(node)
                    match_rows.extend(output.node_rows_of(node) if cached is None else cached)
                if output.pairs:
                    # _bind_rows, inlined: hot (the parent ``distance`` levels up)
                    if output.searched_pairs:
                        plan_key = (id(output), True, *map(states.__getitem__, path))
                        plan = bind_plans.get(plan_key)
                        groups = (
                            self._searched_plan(output, index, True) if plan is None else plan[1]
                        )
                    else:
                        groups = output.fixed_pairs
                    for group in groups:
                        parent = ids[0 if group.distance < 0 else path[-1 - group.distance]]
                        cached_bind = group.rows.get((parent, node))
                        bind_rows.extend(
                            group.rows_of(parent, node) if cached_bind is None else cached_bind
                        )
            if state.attribute_index:
                items: list[tuple[str, str]] = element.items()
                if items:
                    attributes(state, element, index, items)
            if state.text_candidates:
                texts(state, element, index)
            index += 1

    def _emit(self, emission: Emission, node: str, raw: str, owner: int, valued: bool) -> bool:
        """Rows of one attribute or text node (``node``: its id; ``raw``: its value).

        One node may be matched by several trie nodes, each with its own emission:
        ``valued`` says its ``values`` row exists; returns the new ``valued``.
        """
        rows = self.rows
        if emission.values:
            if not valued:
                rows.values.append((node, normalize(raw)))
                valued = True
            found = emission.value_rows.get(node)
            rows.value_nodes.extend(emission.value_rows_of(node) if found is None else found)
        if emission.nodes:
            found = emission.node_rows.get(node)
            rows.matches.extend(emission.node_rows_of(node) if found is None else found)
        if emission.pairs:
            self._bind(emission, node, owner, False)
        return valued

    def _attributes(
        self,
        state: State,
        element: etree._Element,
        index: int,
        items: list[tuple[str, str]],
    ) -> None:
        """Rows of the element's attributes (``items``: Clark name, value)."""
        candidates_of = state.attribute_candidates
        rows = self.rows
        for key, raw in items:
            candidates = candidates_of.get(key)
            if candidates is None:
                candidates = self.automaton.attribute_candidates(state, key)
            if not candidates:
                continue
            # a name without namespace is written as is (see attribute_qname)
            node = f"{index}/@{key}" if key[:1] != "{" else attribute_id(index, element, key)
            if len(candidates) == 1 and not candidates[0][0].predicates:
                # the common case (one merged emission, nothing to check) inline
                emission = candidates[0][1]
                if emission.values:
                    if not raw.isascii():
                        raw = nfc("NFC", raw)
                    rows.values.append((node, raw.strip(XML_WHITESPACE)))
                    found = emission.value_rows.get(node)
                    rows.value_nodes.extend(
                        emission.value_rows_of(node) if found is None else found
                    )
                if emission.nodes:
                    found = emission.node_rows.get(node)
                    rows.matches.extend(emission.node_rows_of(node) if found is None else found)
                if emission.pairs:
                    self._bind(emission, node, index, False)
                continue
            valued = False
            for trie_node, emission in candidates:
                if trie_node.predicates and not self.evaluator.all_hold(
                    trie_node.predicates, AttributeNode(element, key, raw)
                ):
                    continue
                valued = self._emit(emission, node, raw, index, valued)

    def _texts(self, state: State, element: etree._Element, index: int) -> None:
        """Rows of the element's text nodes."""
        for k, raw in enumerate(text_children(element), start=1):
            valued = False
            for trie_node, emission in state.text_candidates:
                if trie_node.predicates and not self.evaluator.all_hold(
                    trie_node.predicates, TextNode(element, k, raw)
                ):
                    continue
                valued = self._emit(emission, f"{index}/text()[{k}]", raw, index, valued)

    def _bind(self, emission: Emission, node: str, owner: int, is_element: bool) -> None:
        """``bindings`` rows of the edges ending at one node (``owner``: its element).

        Edges whose parent must be searched for (``//`` steps below it) are
        resolved once per (emission, path of DFA states to the owner) into
        a plan of (levels up, parent vars, child vars): the parents depend on
        nothing else, and documents repeat their paths.
        """
        bindings = self.rows.bindings
        path = self.path  # ends with ``owner``
        ids = self.ids
        if owner >= len(ids):
            element_ids(owner + 1)  # grows ``ids`` (the one shared list) in place
        groups = (
            self._searched_plan(emission, owner, is_element)
            if emission.searched_pairs
            else emission.fixed_pairs
        )
        for group in groups:
            # distance < 0: the parent variable is the root element
            parent = ids[0 if group.distance < 0 else path[-1 - group.distance]]
            found = group.rows.get((parent, node))
            bindings.extend(group.rows_of(parent, node) if found is None else found)

    def _searched_plan(self, emission: Emission, owner: int, is_element: bool) -> BindPlan:
        """The :data:`BindPlan` of ``emission`` at ``owner``, cached (see ``_bind``).

        The parents depend only on the DFA states from the root to the owner
        (the current ``path``): the plan is cached under them, and documents
        repeat their paths.
        """
        plans = self.automaton.bind_plans
        key = (id(emission), is_element, *map(self.states.__getitem__, self.path))
        entry = plans.get(key)
        if entry is None:
            entry = plans[key] = (emission, self._plan(emission, owner, is_element))
        return entry[1]

    def _plan(self, emission: Emission, owner: int, is_element: bool) -> BindPlan:
        """Every edge of ``emission`` as (levels from the owner up to the parent, vars)."""
        path = self.path
        top = len(path) - 1
        level_of = {index: top - depth for depth, index in enumerate(path)}
        by_level: dict[int, tuple[list[int], list[int]]] = {}
        for group in emission.fixed_pairs:
            parents, children = by_level.setdefault(
                top if group.distance < 0 else group.distance, ([], [])
            )
            parents.extend(group.parent_vars)
            children.extend(group.child_vars)
        for spec in emission.searched_pairs:
            for parent in self._pair_parents(spec, owner, is_element):
                parents, children = by_level.setdefault(level_of[parent], ([], []))
                parents.append(spec.parent_var)
                children.append(spec.child_var)
        return tuple(
            FixedPairs(levels, tuple(parents), tuple(children))
            for levels, (parents, children) in sorted(by_level.items())
        )

    def _pair_parents(self, spec: PairSpec, owner: int, is_element: bool) -> list[int]:
        """Element indices of the parent variable from which this child node is reached."""
        parents = self.parents
        states = self.states
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
