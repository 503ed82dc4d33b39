"""The single walk over one parsed document and the witness rows it appends.

The walk is lxml's C-level ``iterwalk`` (start/end events in document order),
keeping the indices of the open elements on a stack: the parent of an element
and the ancestor any number of levels up are list lookups, and there is no
Python recursion and no per-child list building.
Per element the DFA gives a :class:`~xscl.xpath.automaton.State` whose
precomputed :class:`~xscl.xpath.emission.Emission` says which var ids
need a value, a node or a pair row: the element's string value is computed
at most once (shared by every var and memoised with the predicates'), its
node id is an interned string stored once in the builder's node table, and
rows are appended column-wise as ints.
"""

from __future__ import annotations

from typing import cast
from unicodedata import normalize as nfc

from lxml import etree

from xscl.xpath.automaton import Automaton, BindPlan, State
from xscl.xpath.emission import Emission, PairSpec, int_array
from xscl.xpath.errors import TOO_DEEP, Stage1Error
from xscl.xpath.nodes import (
    AttributeNode,
    TextNode,
    attribute_id,
    text_children,
)
from xscl.xpath.predicates import PredicateEvaluator
from xscl.xpath.safe_parse import entity_error
from xscl.xpath.strings import XML_WHITESPACE, normalize
from xscl.xpath.witness import WitnessBuilder, element_ids

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
            raise Stage1Error(TOO_DEEP, f"nesting deeper than {max_depth}")
        depth[element] = level


class DocumentRun:
    """One document: walk, states per element, rows into a :class:`WitnessBuilder`."""

    __slots__ = ("automaton", "builder", "evaluator", "parents", "path", "path_keys", "states")

    def __init__(
        self, automaton: Automaton, evaluator: PredicateEvaluator, builder: WitnessBuilder
    ) -> None:
        self.automaton = automaton
        self.evaluator = evaluator
        self.builder = builder
        #: per element (pre-order index): its DFA state and its parent's index
        self.states: list[State] = []
        self.parents: list[int] = []
        #: pre-order indices of the elements from the root to the current one
        self.path: list[int] = []
        #: per element: the interned path of DFA states from the root to it
        #: (only when some edge needs a parent search, see ``_bind``)
        self.path_keys: list[int] = []

    def walk(self, root: etree._Element, max_depth: int) -> None:
        """Visit every element once; raises for entity references and excess depth."""
        automaton = self.automaton
        step = automaton.step
        target = automaton.target
        evaluator = self.evaluator
        element_value = evaluator.element_value
        strings = evaluator.strings
        builder = self.builder
        node_ids = builder.node_ids
        value_refs, value_strs = builder.value_refs, builder.value_strs
        member_var, member_refs, member_counts = (
            builder.member_var,
            builder.member_refs,
            builder.member_counts,
        )
        match_var, match_refs, match_counts = (
            builder.match_var,
            builder.match_refs,
            builder.match_counts,
        )
        states, parents = self.states, self.parents
        #: pre-order indices of the open elements, root first (the current path)
        path = self.path
        start = automaton.start()
        path_keys = self.path_keys if automaton.searched_pairs else None
        key_of = automaton.path_keys
        ids = element_ids(1024)
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
                    raise Stage1Error(TOO_DEEP, f"nesting deeper than {max_depth}")
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
                    if not value.isascii():
                        value = nfc("NFC", value)
                    value = strings[element] = value.strip(XML_WHITESPACE)
                passed = transition.leaf_group.passed_one(value)
                found = transition.by_passed.get(passed)
                state = target(source, transition, passed) if found is None else found
            else:
                state = step(source, element, tag, evaluator)
            path.append(index)
            states.append(state)
            parents.append(parent_index)
            if path_keys is not None:
                key = (path_keys[parent_index] if parent_index >= 0 else -1, state)
                path_key = key_of.get(key)
                if path_key is None:
                    path_key = key_of[key] = len(key_of)
                path_keys.append(path_key)
            output = state.output
            if output is not None:
                ref = len(node_ids)
                if index >= len(ids):
                    ids = element_ids(index + 1)
                node_ids.append(ids[index])
                if output.values:
                    value_refs.append(ref)
                    value = strings.get(element)
                    value_strs.append(element_value(element) if value is None else value)
                    member_var.extend(output.value_array)
                    member_refs.append(ref)
                    member_counts.append(len(output.values))
                if output.nodes:
                    match_var.extend(output.node_array)
                    match_refs.append(ref)
                    match_counts.append(len(output.nodes))
                if output.pairs:
                    self._bind(output, ref, index, True)
            if state.attribute_index:
                items = element.items()
                if items:
                    self._attributes(state, element, index, cast("list[tuple[str, str]]", items))
            if state.text_candidates:
                self._texts(state, element, index)
            index += 1

    def _emit(self, emission: Emission, ref: int, raw: str, owner: int, valued: bool) -> bool:
        """Rows of one attribute or text node (``raw``: its unnormalised value).

        One node may be matched by several trie nodes, each with its own
        emission: the caller stores the node once (``ref``) and passes
        ``valued`` (its ``values`` row exists); returns the new ``valued``.
        """
        builder = self.builder
        if emission.values:
            if not valued:
                builder.value_refs.append(ref)
                builder.value_strs.append(normalize(raw))
                valued = True
            builder.member_var.extend(emission.value_array)
            builder.member_refs.append(ref)
            builder.member_counts.append(len(emission.values))
        if emission.nodes:
            builder.match_var.extend(emission.node_array)
            builder.match_refs.append(ref)
            builder.match_counts.append(len(emission.nodes))
        if emission.pairs:
            self._bind(emission, ref, owner, False)
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
        builder = self.builder
        node_ids = builder.node_ids
        for key, raw in items:
            candidates = candidates_of.get(key)
            if candidates is None:
                candidates = self.automaton.attribute_candidates(state, key)
            if not candidates:
                continue
            if len(candidates) == 1 and not candidates[0][0].predicates:
                # the common case (one merged emission, nothing to check) inline
                emission = candidates[0][1]
                ref = len(node_ids)
                # a name without namespace is written as is (see attribute_qname)
                node_ids.append(
                    f"{index}/@{key}" if key[:1] != "{" else attribute_id(index, element, key)
                )
                if emission.values:
                    builder.value_refs.append(ref)
                    builder.value_strs.append(normalize(raw))
                    builder.member_var.extend(emission.value_array)
                    builder.member_refs.append(ref)
                    builder.member_counts.append(len(emission.values))
                if emission.nodes:
                    builder.match_var.extend(emission.node_array)
                    builder.match_refs.append(ref)
                    builder.match_counts.append(len(emission.nodes))
                if emission.pairs:
                    self._bind(emission, ref, index, False)
                continue
            ref = -1
            valued = False
            for node, emission in candidates:
                if node.predicates and not self.evaluator.all_hold(
                    node.predicates, AttributeNode(element, key, raw)
                ):
                    continue
                if ref < 0:
                    ref = len(node_ids)
                    node_ids.append(
                        f"{index}/@{key}" if key[:1] != "{" else attribute_id(index, element, key)
                    )
                valued = self._emit(emission, ref, raw, index, valued)

    def _texts(self, state: State, element: etree._Element, index: int) -> None:
        for k, raw in enumerate(text_children(element), start=1):
            ref = -1
            valued = False
            for node, emission in state.text_candidates:
                if node.predicates and not self.evaluator.all_hold(
                    node.predicates, TextNode(element, k, raw)
                ):
                    continue
                if ref < 0:
                    ref = self.builder.add_node(f"{index}/text()[{k}]")
                valued = self._emit(emission, ref, raw, index, valued)

    def _bind(self, emission: Emission, ref: int, owner: int, is_element: bool) -> None:
        """``bindings`` rows of the edges ending at one node (``owner``: its element).

        Edges whose parent must be searched for (``//`` steps below it) are
        resolved once per (emission, path of DFA states to the owner) into
        a plan of (levels up, parent vars, child vars): the parents depend on
        nothing else, and documents repeat their paths.
        """
        builder = self.builder
        path = self.path  # ends with ``owner``
        if emission.searched_pairs:
            plans = self.automaton.bind_plans
            key = (id(emission), self.path_keys[owner], is_element)
            entry = plans.get(key)
            if entry is None:
                entry = plans[key] = (emission, self._plan(emission, owner, is_element))
            for levels, parent_vars, child_vars in entry[1]:
                builder.bind_var1.extend(parent_vars)
                builder.bind_var2.extend(child_vars)
                builder.bind_parents.append(path[-1 - levels])
                builder.bind_refs.append(ref)
                builder.bind_counts.append(len(parent_vars))
            return
        for group in emission.fixed_pairs:
            # distance < 0: the parent variable is the root element
            builder.bind_var1.extend(group.parent_array)
            builder.bind_var2.extend(group.child_array)
            builder.bind_parents.append(0 if group.distance < 0 else path[-1 - group.distance])
            builder.bind_refs.append(ref)
            builder.bind_counts.append(len(group.parent_vars))

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
            (levels, int_array(tuple(parents)), int_array(tuple(children)))
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
