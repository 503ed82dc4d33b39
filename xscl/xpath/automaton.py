"""The shared path automaton of Stage 1 (YFilter-style NFA, lazily determinised).

Thesis 6.3 leaves "XPath processing" to existing pub/sub technology; this is
that technology, after YFilter (Diao et al., 2003):

* **Trie of steps (the NFA).**  Every registered definition is a path of
  steps from the document node; each distinct step, *with* its filter
  predicates, is one edge ``(axis, node test, predicates)``.  Definitions
  with a common prefix share the prefix's trie nodes, whatever the query they
  come from.  A trie node *matches* a document node when that node is in the
  node set of the trie node's prefix path; a definition's nodes are the nodes
  its last trie node matches.  Adding or removing a definition only adds or
  removes (reference-counted) trie nodes along its own path.
* **Active sets (the NFA run).**  Walking the document in pre-order, each
  element e gets ``matched(e)``, the trie nodes that match e, and
  ``anc(e)``, the trie nodes with ``//`` children that match e or one of its
  ancestors (plus the trie root, i.e. the document node).  A child element c
  is matched by the ``/``-children of ``matched(e)`` and the
  ``//``-children of ``anc(e)`` whose node test accepts c and whose
  predicates hold at c.  Attribute and text tests are resolved the same way
  (``//@a`` and ``//text()`` also apply to e itself).
* **Lazy DFA.**  A :class:`State` interns one pair ``(matched, anc)``;
  transitions are cached per element tag, so a document whose paths were
  seen before costs one dict lookup per element.  Transitions whose
  candidates carry predicates cache the predicate-free part and evaluate only
  the predicated candidates on the element (memoised per document).  Any
  change to the trie or to the requirements drops the DFA cache, which is
  refilled lazily by the next documents; the trie itself is never rebuilt.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from lxml import etree

from xscl.lang.ast import (
    Axis,
    ComparisonPredicate,
    NodeTest,
    Predicate,
    Step,
    StringLiteral,
)
from xscl.xpath.nodes import split_name
from xscl.xpath.predicates import (
    CompiledPredicate,
    PathTable,
    PredicateEvaluator,
    compile_predicates,
)

StepKey = tuple[Axis, NodeTest, tuple[Predicate, ...]]

#: Drop the DFA cache when it holds more states than this (memory bound).
MAX_STATES = 200_000


@dataclass(eq=False)
class TrieNode:
    """One shared step prefix.  Identity-hashed: used as a set member."""

    id: int
    parent: TrieNode | None
    axis: Axis
    test: NodeTest
    predicates: tuple[Predicate, ...]
    predicate_key: int
    compiled: tuple[CompiledPredicate, ...] = ()
    refcount: int = 0
    children: dict[StepKey, TrieNode] = field(default_factory=dict)
    #: var ids whose definition ends here
    var_ids: set[int] = field(default_factory=set)

    @property
    def kind(self) -> str:
        return self.test.kind

    @property
    def has_descendant_children(self) -> bool:
        return any(axis == "//" for axis, _, _ in self.children)

    def chain_from(self, ancestor: TrieNode) -> list[TrieNode]:
        """Trie nodes from ``ancestor`` (included) down to self (included)."""
        chain: list[TrieNode] = []
        node: TrieNode | None = self
        while node is not None and node is not ancestor:
            chain.append(node)
            node = node.parent
        if node is None:
            raise ValueError("not a descendant in the trie")
        chain.append(ancestor)
        chain.reverse()
        return chain


def _accepts_element(test: NodeTest, uri: str, local: str) -> bool:
    if test.kind == "wildcard":
        return True
    if test.kind != "element" or test.local != local:
        return False
    return test.prefix is None or test.prefix == "{" + uri + "}"


def _accepts_attribute(test: NodeTest, uri: str, local: str) -> bool:
    if test.local != local:
        return False
    return test.prefix is None or test.prefix == "{" + uri + "}"


class _Index:
    """Per trie node: its children split by axis and node kind, elements by local name."""

    __slots__ = ("attribute", "element", "text")

    def __init__(self) -> None:
        self.element: dict[str | None, list[TrieNode]] = {}
        self.attribute: dict[str, list[TrieNode]] = {}
        self.text: list[TrieNode] = []


class State:
    """A DFA state: one interned ``(matched, anc)`` pair and its cached transitions."""

    __slots__ = (
        "anc",
        "attribute_index",
        "emit",
        "matched",
        "text_candidates",
        "transitions",
    )

    def __init__(
        self,
        matched: frozenset[TrieNode],
        anc: frozenset[TrieNode],
        attribute_index: dict[str, tuple[TrieNode, ...]],
        text_candidates: tuple[TrieNode, ...],
        emit: tuple[TrieNode, ...],
    ) -> None:
        self.matched = matched
        self.anc = anc
        #: local name -> attribute trie nodes that may match an attribute of this element
        self.attribute_index = attribute_index
        #: text trie nodes that may match a text child of this element
        self.text_candidates = text_candidates
        #: matched trie nodes somebody needs (values, nodes or pairs), in id order
        self.emit = emit
        self.transitions: dict[str, State | _PredicatedTransition] = {}


class _PredicatedTransition:
    """A cached transition with predicated candidates still to check per element.

    Candidates whose only predicate is a path test or a literal comparison are
    grouped by relative path: the path's values are computed once per element,
    and when it selects nothing the whole group fails at once (the common
    case: most ``[./name ...]`` filters name a child the element lacks).
    """

    __slots__ = ("base", "by_child_name", "by_passed", "generic", "groups")

    def __init__(self, base: frozenset[TrieNode], candidates: list[TrieNode]) -> None:
        self.base = base
        groups: dict[int, tuple[CompiledPredicate, list[tuple[TrieNode, Predicate]]]] = {}
        self.generic: list[TrieNode] = []
        for node in candidates:
            if len(node.compiled) == 1 and node.compiled[0].path_key >= 0:
                compiled = node.compiled[0]
                entry = groups.setdefault(compiled.path_key, (compiled, []))
                entry[1].append((node, compiled.predicate))
            else:
                self.generic.append(node)
        #: groups whose path is one plain ``/name`` step, by that name: looked up
        #: from the element's child names, so absent names cost nothing
        self.by_child_name: dict[str, tuple[CompiledPredicate, list[tuple[TrieNode, Predicate]]]]
        self.by_child_name = {}
        self.groups = []
        for group in groups.values():
            name = _plain_child_name(group[0].steps)
            if name is None:
                self.groups.append(group)
            else:
                self.by_child_name[name] = group
        self.by_passed: dict[frozenset[TrieNode], State] = {}


def _plain_child_name(steps: tuple[Step, ...]) -> str | None:
    if len(steps) != 1:
        return None
    step = steps[0]
    test = step.test
    if step.axis != "/" or test.kind != "element" or test.prefix is not None or step.predicates:
        return None
    return test.local


class Automaton:
    """The shared automaton of one stream: trie of steps plus lazy DFA cache."""

    def __init__(self, is_needed: Callable[[TrieNode], bool]) -> None:
        self._next_id = 1
        self._predicate_keys: dict[tuple[Predicate, ...], int] = {(): 0}
        self._paths = PathTable()
        self.root = TrieNode(0, None, "/", NodeTest("wildcard"), (), 0, refcount=0)
        self._slash: dict[int, _Index] = {0: _Index()}
        self._desc: dict[int, _Index] = {0: _Index()}
        self._is_needed = is_needed
        self._states: dict[tuple[frozenset[TrieNode], frozenset[TrieNode]], State] = {}
        self._start: State | None = None
        self.nodes: dict[int, TrieNode] = {0: self.root}

    # ------------------------------------------------------------------ trie
    def add_path(self, steps: tuple[Step, ...]) -> TrieNode:
        """Add one reference to the path ``steps`` and return its last trie node."""
        node = self.root
        node.refcount += 1
        for step in steps:
            key: StepKey = (step.axis, step.test, step.predicates)
            child = node.children.get(key)
            if child is None:
                child = self._new_child(node, key)
            child.refcount += 1
            node = child
        self.invalidate()
        return node

    def remove_path(self, last: TrieNode) -> None:
        """Drop one reference to the path ending at ``last``; prune unused nodes."""
        node: TrieNode | None = last
        while node is not None:
            node.refcount -= 1
            parent = node.parent
            if node.refcount == 0 and parent is not None:
                self._unlink(parent, node)
            node = parent
        self.invalidate()

    def _new_child(self, parent: TrieNode, key: StepKey) -> TrieNode:
        axis, test, predicates = key
        predicate_key = self._predicate_keys.setdefault(predicates, len(self._predicate_keys))
        child = TrieNode(
            self._next_id,
            parent,
            axis,
            test,
            predicates,
            predicate_key,
            compile_predicates(predicates, self._paths),
        )
        self._next_id += 1
        parent.children[key] = child
        self.nodes[child.id] = child
        self._slash[child.id] = _Index()
        self._desc[child.id] = _Index()
        index = (self._slash if axis == "/" else self._desc)[parent.id]
        if test.kind == "text":
            index.text.append(child)
        elif test.kind == "attribute":
            index.attribute.setdefault(test.local or "", []).append(child)
        else:
            index.element.setdefault(test.local, []).append(child)
        return child

    def _unlink(self, parent: TrieNode, child: TrieNode) -> None:
        del parent.children[(child.axis, child.test, child.predicates)]
        del self.nodes[child.id]
        del self._slash[child.id]
        del self._desc[child.id]
        index = (self._slash if child.axis == "/" else self._desc)[parent.id]
        bucket: list[TrieNode]
        if child.test.kind == "text":
            bucket = index.text
        elif child.test.kind == "attribute":
            bucket = index.attribute[child.test.local or ""]
        else:
            bucket = index.element[child.test.local]
        bucket.remove(child)
        if not bucket and child.test.kind == "attribute":
            del index.attribute[child.test.local or ""]
        elif not bucket and child.test.kind != "text":
            del index.element[child.test.local]

    def invalidate(self) -> None:
        """Forget the lazy DFA (after any change to the trie or to requirements)."""
        self._states = {}
        self._start = None

    @property
    def state_count(self) -> int:
        return len(self._states)

    # ------------------------------------------------------------------- DFA
    def start(self) -> State:
        """The state of the document node."""
        if self._start is None or len(self._states) > MAX_STATES:
            self._states = {}
            root_set = frozenset((self.root,))
            self._start = self._intern(root_set, frozenset())
        return self._start

    def _intern(self, matched: frozenset[TrieNode], parent_anc: frozenset[TrieNode]) -> State:
        extra = [n for n in matched if n.id in self._desc and self._has_desc(n)]
        anc = parent_anc.union(extra) if extra else parent_anc
        key = (matched, anc)
        state = self._states.get(key)
        if state is None:
            state = self._make_state(matched, anc)
            self._states[key] = state
        return state

    def _has_desc(self, node: TrieNode) -> bool:
        index = self._desc[node.id]
        return bool(index.element or index.attribute or index.text)

    def _make_state(self, matched: frozenset[TrieNode], anc: frozenset[TrieNode]) -> State:
        attribute_index: dict[str, list[TrieNode]] = {}
        texts: list[TrieNode] = []
        for indexes, sources in ((self._slash, matched), (self._desc, anc)):
            for source in sources:
                index = indexes.get(source.id)
                if index is None:
                    continue
                for local, nodes in index.attribute.items():
                    attribute_index.setdefault(local, []).extend(nodes)
                texts.extend(index.text)
        emit = tuple(sorted((n for n in matched if self._is_needed(n)), key=lambda n: n.id))
        return State(
            matched,
            anc,
            {k: tuple(_unique(v)) for k, v in attribute_index.items()},
            tuple(_unique(texts)),
            emit,
        )

    def step(
        self, state: State, element: etree._Element, tag: str, evaluator: PredicateEvaluator
    ) -> State:
        """The state of ``element`` (tag ``tag``) whose parent is in ``state``."""
        cached = state.transitions.get(tag)
        if cached is None:
            cached = self._transition(state, tag)
            state.transitions[tag] = cached
        if isinstance(cached, State):
            return cached
        passed_nodes: list[TrieNode] = []
        groups = cached.groups
        if cached.by_child_name:
            by_name = cached.by_child_name
            present = [by_name[n] for n in evaluator.child_names(element) if n in by_name]
            groups = groups + present if groups else present
        for compiled, members in groups:
            values = evaluator.path_values(compiled, element)
            if not values:
                continue
            for node, predicate in members:
                if not isinstance(predicate, ComparisonPredicate):
                    passed_nodes.append(node)  # a path test: the path selected something
                elif predicate.op == "=" and isinstance(predicate.literal, StringLiteral):
                    if predicate.literal.value in values:
                        passed_nodes.append(node)
                elif evaluator.compare_any(compiled, element, predicate.op, predicate.literal):
                    passed_nodes.append(node)
        for node in cached.generic:
            if evaluator.check(node.predicate_key, node.compiled, element):
                passed_nodes.append(node)
        passed = frozenset(passed_nodes)
        target = cached.by_passed.get(passed)
        if target is None:
            target = self._intern(cached.base | passed, state.anc)
            cached.by_passed[passed] = target
        return target

    def _transition(self, state: State, tag: str) -> State | _PredicatedTransition:
        uri, local = split_name(tag)
        base: list[TrieNode] = []
        predicated: list[TrieNode] = []
        for indexes, sources in ((self._slash, state.matched), (self._desc, state.anc)):
            for source in sources:
                index = indexes.get(source.id)
                if index is None or not index.element:
                    continue
                for key in (local, None):
                    for node in index.element.get(key, ()):
                        if _accepts_element(node.test, uri, local):
                            (predicated if node.predicates else base).append(node)
        if not predicated:
            return self._intern(frozenset(base), state.anc)
        return _PredicatedTransition(frozenset(base), _unique(predicated))

    def attribute_candidates(self, state: State, key: str) -> list[TrieNode]:
        """Attribute trie nodes whose test accepts attribute ``key`` (Clark name)."""
        uri, local = split_name(key)
        nodes = state.attribute_index.get(local)
        if not nodes:
            return []
        return [n for n in nodes if _accepts_attribute(n.test, uri, local)]


def _unique(nodes: list[TrieNode]) -> list[TrieNode]:
    seen: set[int] = set()
    out: list[TrieNode] = []
    for node in nodes:
        if node.id not in seen:
            seen.add(node.id)
            out.append(node)
    return out
