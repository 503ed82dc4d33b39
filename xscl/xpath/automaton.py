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
  (``//@a`` and ``//text()`` also apply to e itself).  Only *live* trie
  nodes are ever matched: those with a needed emission (a value, node or
  pair somebody requires) at or below them, so definitions nobody reads
  cost nothing per document.
* **Lazy DFA.**  A :class:`State` interns one pair ``(matched, anc)``;
  transitions are cached per element tag, so a document whose paths were
  seen before costs one dict lookup per element.  Each state also carries
  its precomputed output (the merged :class:`~xscl.xpath.emission.Emission`
  of its matched trie nodes: var ids needing values, nodes, pairs) and the
  attribute/text trie nodes somebody needs, so emitting is a few column
  appends.  Any change to the trie or to the requirements drops the DFA
  cache, which is refilled lazily by the next documents; the trie itself is
  never rebuilt.
* **Predicated transitions.**  Transitions whose candidates carry predicates
  cache the predicate-free part; the predicated candidates are grouped by
  the relative path their predicate reads (``_PathGroup``): the path's
  values are computed once per element (``/name`` paths straight from the
  element's children by name, so absent names cost nothing), literal
  comparisons are answered by a :class:`~xscl.xpath.literal_index.LiteralIndex`
  (dict for ``=``, bisect for ``<``/``>``...) in O(log n + hits) per value,
  and the set of candidates that passed maps to the target state.  Groups
  and their indexes are shared by every transition with the same candidates.
* **Function predicates and several predicates.**  The other predicated
  candidates of a transition go through a screen
  (:mod:`xscl.xpath.presearch`): by default a presearch index that returns
  only the candidates whose required literals occur in the element, each
  then verified by the exact evaluator, its several predicates in the order
  A-Greedy keeps per predicate tuple (:mod:`xscl.xpath.filter_order`).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import cast

from lxml import etree

from xscl.lang.ast import (
    Axis,
    ComparisonPredicate,
    NodeTest,
    NumberLiteral,
    Predicate,
    Step,
)
from xscl.xpath.emission import Emission, FixedPairs, merge_emissions
from xscl.xpath.filter_order import AdaptiveOrder
from xscl.xpath.functions import FunctionTable
from xscl.xpath.literal_index import LiteralIndex
from xscl.xpath.nodes import local_name, split_name
from xscl.xpath.predicates import (
    CompiledPredicate,
    PathTable,
    PredicateEvaluator,
    compile_predicates,
    initial_order,
)
from xscl.xpath.presearch import CandidateScreen, ScreenFactory
from xscl.xpath.presearch_terms import Terms, best_terms
from xscl.xpath.strings import parse_number

StepKey = tuple[Axis, NodeTest, tuple[Predicate, ...]]

#: How to emit the edges ending at one node: per parent element, its levels up
#: from the owner (``FixedPairs.distance``) and the edges' var ids (see
#: ``DocumentRun._bind``)
BindPlan = tuple[FixedPairs, ...]

#: Bound on the cached bind plans (cleared at a document start).
MAX_BIND_PLANS = 100_000

#: Bound on each predicate group's memo of position codes (cleared when full).
_MEMO_LIMIT = 4096

#: Bound on each state's cache of attribute names (hostile documents invent many).
_ATTRIBUTE_CACHE_LIMIT = 1024

#: Bound on each transition's cache of child tags (hostile documents invent many).
_TAG_CACHE_LIMIT = 1024

#: Marks a child tag not looked up yet.
_UNSEEN: _PathGroup | None = cast("_PathGroup", object())

#: Drop the DFA cache when it holds more states than this (memory bound).
MAX_STATES = 200_000


@dataclass(eq=False, slots=True)
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
    #: None until its first child (most trie nodes are leaves: an empty dict each was
    #: about 120 bytes per subscription)
    children: dict[StepKey, TrieNode] | None = None
    #: var ids whose definition ends here (a list: most nodes have none or one)
    var_ids: list[int] = field(default_factory=list)

    @property
    def kind(self) -> str:
        return self.test.kind

    @property
    def has_descendant_children(self) -> bool:
        return any(axis == "//" for axis, _, _ in self.children or ())

    def terms(self) -> Terms | None:
        """The presearch terms of the node's function predicates (all must hold: the most
        selective one's terms are necessary); None: always a candidate."""
        return best_terms([c.function.terms() for c in self.compiled if c.function is not None])

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
    """A DFA state: one interned ``(matched, anc)`` pair, its output and cached transitions.

    Everything an element in this state emits is precomputed (``output``), as
    are the attribute and text trie nodes that somebody needs, so a warm
    document costs one dict lookup per element plus column appends.
    """

    __slots__ = (
        "anc",
        "attribute_candidates",
        "attribute_index",
        "matched",
        "output",
        "text_candidates",
        "transitions",
    )

    def __init__(
        self,
        matched: frozenset[TrieNode],
        anc: frozenset[TrieNode],
        attribute_index: dict[str, tuple[tuple[TrieNode, Emission], ...]],
        text_candidates: tuple[tuple[TrieNode, Emission], ...],
        output: Emission | None,
    ) -> None:
        self.matched = matched
        self.anc = anc
        #: local name -> needed attribute trie nodes that may match an attribute here
        self.attribute_index = attribute_index
        #: needed text trie nodes that may match a text child of this element
        self.text_candidates = text_candidates
        #: rows an element in this state emits (None: nothing)
        self.output = output
        self.transitions: dict[str, State | PredicatedTransition] = {}
        #: attribute Clark name -> the needed trie nodes that accept it (cache)
        self.attribute_candidates: dict[str, tuple[tuple[TrieNode, Emission], ...]] = {}


class _PathGroup:
    """Candidates whose single predicate tests one relative path (existence or literal).

    The path's values are computed once per element; when it selects nothing
    the whole group fails at once (the common case: most ``[./name ...]``
    filters name a child the element lacks).  Which members hold depends only
    on where each value falls among the group's sorted distinct literals (one
    ``bisect`` per value, strings and numbers apart): that position code is
    the key of a memo of the members that hold (an interned frozenset),
    computed on a miss by :class:`LiteralIndex` in O(log n + hits).  So a warm
    element costs one bisect per value, never a walk over the members.
    Groups, their indexes and memos are shared between transitions.
    """

    __slots__ = (
        "_indexed",
        "_number_keys",
        "_string_keys",
        "compiled",
        "exists",
        "members",
        "memo",
        "numbers",
        "string_keys",
        "strings",
    )

    def __init__(self, compiled: CompiledPredicate, members: tuple[TrieNode, ...]) -> None:
        self.compiled = compiled
        self.members = members
        self._indexed = False
        self.exists: list[TrieNode] = []
        self.strings: LiteralIndex[TrieNode] | None = None
        self.numbers: LiteralIndex[TrieNode] | None = None
        self._string_keys: list[str] = []
        self._number_keys: list[Decimal] = []
        self.memo: dict[object, frozenset[TrieNode]] = {}
        #: once indexed, when the literals are all strings: their sorted distinct
        #: values, for callers that inline ``passed_one``: a value's result is
        #: ``memo[2p + (keys[p] == value)]`` for ``p = bisect_left(keys, value)``
        #: when present (``passed_one`` fills it)
        self.string_keys: list[str] | None = None

    def _index(self) -> None:
        strings: list[tuple[str, object, TrieNode]] = []
        numbers: list[tuple[str, object, TrieNode]] = []
        for node in self.members:
            predicate = node.compiled[0].predicate
            if isinstance(predicate, ComparisonPredicate):
                literal = predicate.literal
                target = numbers if isinstance(literal, NumberLiteral) else strings
                target.append((predicate.op, literal.value, node))
            else:
                self.exists.append(node)
        self.strings = LiteralIndex(strings) if strings else None
        self.numbers = LiteralIndex(numbers) if numbers else None
        self._string_keys = sorted({cast("str", v) for _, v, _ in strings})
        self._number_keys = sorted({cast("Decimal", v) for _, v, _ in numbers})
        if self._string_keys and not self._number_keys:
            self.string_keys = self._string_keys
        self._indexed = True

    def _code(self, value: str) -> int:
        """Where ``value`` falls among the literals: equal outcomes of every comparison.

        ``2p`` when it sorts just before the p-th distinct literal, ``2p + 1``
        when it equals it; the number part (when the group has numeric
        literals) is added on top, scaled, ``0`` for a value that is no number.
        """
        code = 0
        keys = self._string_keys
        if keys:
            p = bisect_left(keys, value)
            code = 2 * p + (p < len(keys) and keys[p] == value)
        numeric = self._number_keys
        if numeric:
            number = parse_number(value)
            if number is None:
                n_code = 0
            else:
                p = bisect_left(numeric, number)
                n_code = 1 + 2 * p + (p < len(numeric) and numeric[p] == number)
            code += n_code * (2 * len(keys) + 2)
        return code

    def passed(self, values: list[str]) -> frozenset[TrieNode]:
        """The members that hold given the path's values (non-empty), memoised."""
        if len(values) == 1:
            return self.passed_one(values[0])
        if not self._indexed:
            self._index()
        return self._lookup(frozenset(map(self._code, values)), values)

    def passed_one(self, value: str) -> frozenset[TrieNode]:
        """``passed([value])`` (the hot case: one child or the element itself)."""
        if not self._indexed:
            self._index()
        keys = self._string_keys
        if keys and not self._number_keys:  # string literals only: _code inlined
            p = bisect_left(keys, value)
            code = 2 * p + (p < len(keys) and keys[p] == value)
        else:
            code = self._code(value)
        found = self.memo.get(code)
        if found is None:
            found = self._lookup(code, [value])
        return found

    def _lookup(self, key: object, values: list[str]) -> frozenset[TrieNode]:
        found = self.memo.get(key)
        if found is None:
            out: list[TrieNode] = list(self.exists)
            if self.strings is not None:
                self.strings.collect(values, out)
            if self.numbers is not None:
                numbers = [n for n in map(parse_number, values) if n is not None]
                if numbers:
                    self.numbers.collect(numbers, out)
            if len(self.memo) >= _MEMO_LIMIT:
                self.memo.clear()
            found = self.memo[key] = frozenset(out)
        return found


class _CandidateChecks:
    """How to check one list of predicated candidates on an element (shared by transitions).

    Candidates with one path or comparison predicate are grouped by path
    (:class:`_PathGroup`); groups whose path is one plain ``/name`` step are
    keyed by that name and looked up from the element's child names, so absent
    names cost nothing.  The rest (several predicates, function predicates) are
    ``generic``: the ``screen`` picks those to verify at an element.
    """

    __slots__ = ("by_child_name", "by_child_tag", "generic", "groups", "screen", "self_groups")

    def __init__(
        self,
        candidates: tuple[TrieNode, ...],
        shared: dict[tuple[int, tuple[TrieNode, ...]], _PathGroup],
        screen: ScreenFactory[TrieNode],
    ) -> None:
        grouped: dict[int, tuple[CompiledPredicate, list[TrieNode]]] = {}
        self.generic: list[TrieNode] = []
        for node in candidates:
            if len(node.compiled) == 1 and node.compiled[0].path_key >= 0:
                compiled = node.compiled[0]
                grouped.setdefault(compiled.path_key, (compiled, []))[1].append(node)
            else:
                self.generic.append(node)
        self.screen: CandidateScreen[TrieNode] = screen(self.generic, TrieNode.terms)
        self.by_child_name: dict[str, _PathGroup] = {}
        #: the same by the child's Clark name (filled on first sight; None: no group)
        self.by_child_tag: dict[str, _PathGroup | None] = {}
        #: groups whose path is ``.`` (the element's own value)
        self.self_groups: list[_PathGroup] = []
        self.groups: list[_PathGroup] = []
        for compiled, members in grouped.values():
            key = (compiled.path_key, tuple(members))
            group = shared.get(key)
            if group is None:
                group = shared[key] = _PathGroup(compiled, key[1])
            name = compiled.child_name
            if name is not None:
                self.by_child_name[name] = group
            elif not compiled.steps:
                self.self_groups.append(group)
            else:
                self.groups.append(group)

    def group_of_tag(self, tag: str) -> _PathGroup | None:
        """The group of children named ``tag`` (Clark name), cached in ``by_child_tag``."""
        group = self.by_child_name.get(local_name(tag))
        if len(self.by_child_tag) < _TAG_CACHE_LIMIT:
            self.by_child_tag[tag] = group
        return group


class PredicatedTransition:
    """A cached transition with predicated candidates still to check per element.

    ``leaf_group`` is set when the candidates are exactly one group testing
    the element's own value (``[. op literal]``, the common shape): for a
    *leaf* element (no child nodes) nothing else can change the outcome, so
    the walk asks that group directly (``DocumentRun.walk``) instead of
    running the general ``Automaton.step``.
    """

    __slots__ = ("base", "by_parts", "by_passed", "checks", "leaf_group")

    def __init__(self, base: frozenset[TrieNode], checks: _CandidateChecks) -> None:
        self.base = base
        self.checks = checks
        #: candidates that passed -> target state (from this transition's source state)
        self.by_passed: dict[frozenset[TrieNode], State] = {}
        #: the same keyed by the per-group results, before their union (see ``Automaton.step``)
        self.by_parts: dict[tuple[frozenset[TrieNode], ...], State] = {}
        #: the one own-value group deciding a leaf element's target (None: use ``step``)
        self.leaf_group: _PathGroup | None = (
            checks.self_groups[0]
            if len(checks.self_groups) == 1 and not checks.groups and not checks.generic
            else None
        )


class Automaton:
    """The shared automaton of one stream: trie of steps plus lazy DFA cache."""

    def __init__(
        self,
        emission_of: Callable[[TrieNode], Emission],
        functions: FunctionTable,
        screen: ScreenFactory[TrieNode],
    ) -> None:
        self._functions = functions
        self._screen = screen
        #: A-Greedy's order of each predicate tuple with several predicates, by
        #: ``predicate_key`` (kept across DFA rebuilds: the profile is the worker's)
        self.orders: dict[int, AdaptiveOrder] = {}
        self._next_id = 1
        self._predicate_keys: dict[tuple[Predicate, ...], int] = {(): 0}
        self._paths = PathTable()
        self.root = TrieNode(0, None, "/", NodeTest("wildcard"), (), 0, refcount=0)
        self._slash: dict[int, _Index] = {0: _Index()}
        self._desc: dict[int, _Index] = {0: _Index()}
        self._emission_of = emission_of
        self._states: dict[tuple[frozenset[TrieNode], frozenset[TrieNode]], State] = {}
        self._start: State | None = None
        #: predicate groups shared by transitions (see _PathGroup)
        self._groups: dict[tuple[int, tuple[TrieNode, ...]], _PathGroup] = {}
        self._checks: dict[tuple[TrieNode, ...], _CandidateChecks] = {}
        #: trie nodes with live attribute or text children by "/" and by "//"
        self._leafy: tuple[frozenset[TrieNode], frozenset[TrieNode]] = (frozenset(), frozenset())
        #: trie nodes with live "//" children (they join ``anc`` where they match)
        self._desc_sources: frozenset[TrieNode] = frozenset()
        #: trie nodes with live "/" element children (the matched nodes a state's
        #: transitions depend on, with its ``anc``)
        self._element_sources: frozenset[TrieNode] = frozenset()
        #: (matched element sources, anc) -> the transitions every state of that pair
        #: shares (see ``_intern``)
        self._shared_transitions: dict[
            tuple[frozenset[TrieNode], frozenset[TrieNode]],
            dict[str, State | PredicatedTransition],
        ] = {}
        #: trie nodes that can lead to a row (see _prepare_run)
        self._live: frozenset[TrieNode] = frozenset()
        #: (id(emission), is element, DFA states from the root to the owner...)
        #: -> (emission, plan), see BindPlan and ``DocumentRun._searched_plan``
        self.bind_plans: dict[tuple[object, ...], tuple[Emission, BindPlan]] = {}
        self.nodes: dict[int, TrieNode] = {0: self.root}

    # ------------------------------------------------------------------ trie
    def add_path(self, steps: tuple[Step, ...]) -> TrieNode:
        """Add one reference to the path ``steps`` and return its last trie node."""
        node = self.root
        node.refcount += 1
        for step in steps:
            key: StepKey = (step.axis, step.test, step.predicates)
            child = node.children.get(key) if node.children else None
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
            compile_predicates(predicates, self._paths, self._functions),
        )
        self._next_id += 1
        if parent.children is None:
            parent.children = {}
        parent.children[key] = child
        self.nodes[child.id] = child
        # a trie node's index of children is made with its first child (most are leaves)
        indexes = self._slash if axis == "/" else self._desc
        index = indexes.get(parent.id)
        if index is None:
            index = indexes[parent.id] = _Index()
        if test.kind == "text":
            index.text.append(child)
        elif test.kind == "attribute":
            index.attribute.setdefault(test.local or "", []).append(child)
        else:
            index.element.setdefault(test.local, []).append(child)
        return child

    def _unlink(self, parent: TrieNode, child: TrieNode) -> None:
        assert parent.children is not None  # ``child`` is one of them
        del parent.children[(child.axis, child.test, child.predicates)]
        del self.nodes[child.id]
        self._slash.pop(child.id, None)
        self._desc.pop(child.id, None)
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
        self._shared_transitions = {}
        self._groups = {}
        self._checks = {}
        self._start = None
        self.bind_plans = {}

    @property
    def state_count(self) -> int:
        return len(self._states)

    # ------------------------------------------------------------------- DFA
    def start(self) -> State:
        """The state of the document node."""
        if len(self.bind_plans) > MAX_BIND_PLANS:
            self.bind_plans = {}
        if self._start is None or len(self._states) > MAX_STATES:
            self._states = {}
            self._shared_transitions = {}
            self._groups = {}
            self._checks = {}
            self.bind_plans = {}
            self._prepare_run()
            root_set = frozenset((self.root,))
            self._start = self._intern(root_set, frozenset())
        return self._start

    def _prepare_run(self) -> None:
        """Liveness and source sets for a fresh DFA (after any change).

        A trie node is *live* when it or a trie descendant has a needed
        emission; the others can never lead to a row, so they are never
        matched (a definition nobody reads costs nothing per document).
        """
        emission_of = self._emission_of
        live: set[TrieNode] = {self.root}
        for node in self.nodes.values():
            if node.var_ids and emission_of(node).needed:
                current: TrieNode | None = node
                while current is not None and current not in live:
                    live.add(current)
                    current = current.parent
        self._live = frozenset(live)
        slash_leafy: set[TrieNode] = set()
        desc_leafy: set[TrieNode] = set()
        desc_sources: set[TrieNode] = set()
        element_sources: set[TrieNode] = set()
        for node in live:
            parent = node.parent
            if parent is None:
                continue
            if node.axis == "//":
                desc_sources.add(parent)
            if node.test.kind in ("attribute", "text"):
                (slash_leafy if node.axis == "/" else desc_leafy).add(parent)
            elif node.axis == "/":
                element_sources.add(parent)
        self._leafy = (frozenset(slash_leafy), frozenset(desc_leafy))
        self._desc_sources = frozenset(desc_sources)
        self._element_sources = frozenset(element_sources)

    def _intern(self, matched: frozenset[TrieNode], parent_anc: frozenset[TrieNode]) -> State:
        extra = matched & self._desc_sources
        anc = parent_anc | extra if extra else parent_anc
        key = (matched, anc)
        state = self._states.get(key)
        if state is None:
            state = self._make_state(matched, anc)
            # a state's transitions depend only on its matched nodes with element
            # children and its anc (``_transition``, ``target``): states that differ
            # in nodes that only emit (an item matching its own set of keyword
            # predicates) share them, so their children are not worked out again
            shared = (matched & self._element_sources, anc)
            state.transitions = self._shared_transitions.setdefault(shared, state.transitions)
            self._states[key] = state
        return state

    def _make_state(self, matched: frozenset[TrieNode], anc: frozenset[TrieNode]) -> State:
        emission_of = self._emission_of
        attribute_index: dict[str, list[TrieNode]] = {}
        texts: list[TrieNode] = []
        slash_leafy, desc_leafy = self._leafy
        for indexes, sources in (
            (self._slash, matched & slash_leafy),
            (self._desc, anc & desc_leafy),
        ):
            for source in sources:
                index = indexes.get(source.id)
                if index is None:
                    continue
                for local, nodes in index.attribute.items():
                    attribute_index.setdefault(local, []).extend(nodes)
                texts.extend(index.text)
        needed_attributes: dict[str, tuple[tuple[TrieNode, Emission], ...]] = {}
        for local, nodes in attribute_index.items():
            pairs = tuple((n, emission_of(n)) for n in _unique(nodes))
            pairs = tuple(p for p in pairs if p[1].needed)
            if pairs:
                needed_attributes[local] = pairs
        needed_texts = tuple((n, e) for n in _unique(texts) if (e := emission_of(n)).needed)
        emissions = [e for n in sorted(matched, key=lambda n: n.id) if (e := emission_of(n)).needed]
        return State(matched, anc, needed_attributes, needed_texts, merge_emissions(emissions))

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
        checks = cached.checks
        passed: list[frozenset[TrieNode]] = []
        if checks.self_groups:
            # first: the root's value tells whether the document's text is all NFC
            # (``PredicateEvaluator.element_value``), which spares the children's
            value = evaluator.strings.get(element)
            if value is None:
                value = evaluator.element_value(element)
            for own in checks.self_groups:
                hits = own.passed_one(value)
                if hits:
                    passed.append(hits)
        if checks.by_child_name and len(element):
            # Comparisons are existential, so a group's members that hold for a
            # child name's several values are the union of those holding for
            # each value: every child is looked up on its own.
            by_tag = checks.by_child_tag
            strings = evaluator.strings
            for child in element:
                child_tag = child.tag
                group = by_tag.get(child_tag, _UNSEEN)
                if group is None:
                    continue
                if group is _UNSEEN:
                    if child_tag.__class__ is not str:
                        continue
                    group = checks.group_of_tag(child_tag)
                    if group is None:
                        continue
                value = strings.get(child)
                if value is None:
                    value = evaluator.element_value(child)
                keys = group.string_keys
                if keys is None:
                    hits = group.passed_one(value)
                else:  # group.passed_one, inlined: hot
                    p = bisect_left(keys, value)
                    found = group.memo.get(2 * p + (p < len(keys) and keys[p] == value))
                    hits = group.passed_one(value) if found is None else found
                if hits:
                    passed.append(hits)
        for group in checks.groups:
            values = evaluator.path_values(group.compiled, element)
            if values:
                hits = group.passed(values)
                if hits:
                    passed.append(hits)
        if checks.generic:
            verify = self._verify
            held = [
                node
                for node in checks.screen.candidates(element, evaluator.source_values)
                if verify(node, element, evaluator)
            ]
            if held:
                passed.append(frozenset(held))
        # The groups' results are interned by their memos (hashes cached), so the
        # tuple of them is a cheap key; their union (often hundreds of trie nodes
        # from ``>=``/``<`` literals) is only built and hashed on a miss.
        parts = tuple(passed)
        target = cached.by_parts.get(parts)
        if target is None:
            key = _NOTHING if not passed else passed[0] if len(passed) == 1 else _union(passed)
            target = cached.by_passed.get(key)
            if target is None:
                target = self._intern(cached.base | key, state.anc)
                cached.by_passed[key] = target
            if len(cached.by_parts) >= _MEMO_LIMIT:
                cached.by_parts.clear()
            cached.by_parts[parts] = target
        return target

    def _verify(
        self, node: TrieNode, element: etree._Element, evaluator: PredicateEvaluator
    ) -> bool:
        """A screened candidate's predicates at ``element``, several in A-Greedy's order."""
        compiled = node.compiled
        if len(compiled) < 2:
            return evaluator.check(node.predicate_key, compiled, element)
        order = self.orders.get(node.predicate_key)
        if order is None:
            order = self.orders[node.predicate_key] = AdaptiveOrder(
                len(compiled), initial=initial_order(compiled)
            )
        return evaluator.check_in_order(node.predicate_key, compiled, element, order)

    def target(
        self, state: State, transition: PredicatedTransition, passed: frozenset[TrieNode]
    ) -> State:
        """The target of ``transition`` (from ``state``) when ``passed`` candidates held."""
        target = transition.by_passed.get(passed)
        if target is None:
            target = self._intern(transition.base | passed, state.anc)
            transition.by_passed[passed] = target
        return target

    def _transition(self, state: State, tag: str) -> State | PredicatedTransition:
        uri, local = split_name(tag)
        live = self._live
        base: list[TrieNode] = []
        predicated: list[TrieNode] = []
        for indexes, sources in ((self._slash, state.matched), (self._desc, state.anc)):
            for source in sources:
                index = indexes.get(source.id)
                if index is None or not index.element:
                    continue
                for key in (local, None):
                    for node in index.element.get(key, ()):
                        if node in live and _accepts_element(node.test, uri, local):
                            (predicated if node.predicates else base).append(node)
        if not predicated:
            return self._intern(frozenset(base), state.anc)
        candidates = tuple(_unique(predicated))
        checks = self._checks.get(candidates)
        if checks is None:
            checks = self._checks[candidates] = _CandidateChecks(
                candidates, self._groups, self._screen
            )
        return PredicatedTransition(frozenset(base), checks)

    def attribute_candidates(self, state: State, key: str) -> tuple[tuple[TrieNode, Emission], ...]:
        """Needed attribute trie nodes whose test accepts attribute ``key`` (Clark name).

        Cached on the state (``State.attribute_candidates``).
        """
        uri, local = split_name(key)
        nodes = state.attribute_index.get(local, ())
        found = tuple(p for p in nodes if _accepts_attribute(p[0].test, uri, local))
        if len(found) > 1 and not any(node.predicates for node, _ in found):
            # nothing to check per attribute: one merged emission (one run per column)
            merged = merge_emissions([emission for _, emission in found])
            found = ((found[0][0], cast("Emission", merged)),)
        if len(state.attribute_candidates) < _ATTRIBUTE_CACHE_LIMIT:
            state.attribute_candidates[key] = found
        return found


_NOTHING: frozenset[TrieNode] = frozenset()


def _union(sets: list[frozenset[TrieNode]]) -> frozenset[TrieNode]:
    return sets[0].union(*sets[1:])


def _unique(nodes: list[TrieNode]) -> list[TrieNode]:
    """``nodes`` without repeats, in order (trie nodes hash by identity)."""
    return list(dict.fromkeys(nodes))
