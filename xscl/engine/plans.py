"""Physical plans of a template's conjunctive query, one per role of the new document.

Order independence (spec 3.3) means a new document must find every partner
already stored, in *every* block it can fill. So each template has one plan per
block ``r`` (the new document plays block r; all other blocks come from the join
state), and each plan is a join order over the template's meta-variables:

1. block r's nodes top-down through the new document's R_binW (``new_root``,
   ``new_down``);
2. then, block by block, a node reached through a value edge from a placed node
   (``value``: a probe of the view-cache slice of that string), its ancestors
   (``up``: R_bin probed by child node) and the block's other nodes (``down``);
   a block no value edge reaches is scanned (``scan``), e.g. ``A JOIN {TRUE, 1h} B``.

The query table R_T joins *during* the walk: each plan keeps R_T as a trie over
the var-id columns in the plan's order, so a meta-variable only tries the var
ids some query of the template has at that position (a hash join with R_T whose
build side is shared by all queries). Leaves hold the R_T rows.

Example: thesis template [v1(v2,v3)] FOLLOWED BY [v4(v5,v6)] v2=v5 v3=v6, role 1:
new_root v4, new_down v5 (from v4), new_down v6 (from v4), value v2 (from v5;
holds v6: a stored document without v6's value is skipped before any walk), up v1
(from v2), down v3 (from v1; checks v3=v6).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

from xscl.templates.canonical import Template
from xscl.templates.registry import QueryRow

StepKind = Literal["new_root", "new_down", "value", "up", "down", "scan"]


@dataclass(frozen=True)
class PlanStep:
    """Place meta-variable ``meta`` (of ``block``) by ``kind`` from ``anchor`` (-1 = none).

    ``checks`` are placed meta-variables (or ``meta`` itself, for ``x=x``) whose
    value must equal this one's. ``holds`` (a ``value`` or ``scan`` step, which
    starts a block): placed meta-variables that a value edge joins to some other
    node of this block, so a candidate document must hold each of their values
    somewhere (``DocState.strings``) before it is worth placing.
    """

    meta: int
    block: int
    kind: StepKind
    anchor: int
    checks: tuple[int, ...]
    holds: tuple[int, ...] = ()


@dataclass
class RolePlan:
    """The plan for the new document in block ``role`` of ``template``, with its R_T trie."""

    template: Template
    role: int
    steps: tuple[PlanStep, ...]
    trie: dict[int, Any] = field(default_factory=dict)
    rows: int = 0
    max_window: int | None = 0
    #: per step, how many rows have each var id there (``vars_at``)
    var_counts: list[Counter[int]] = field(default_factory=list)
    #: per trie node (by ``id``), the widest span any row below it allows (``span_below``);
    #: derived from the trie, so not compared (ids differ from one build to another)
    spans: dict[int, int | None] = field(default_factory=dict, compare=False, repr=False)
    #: per trie leaf (by ``id``), its rows widest span first (``rows_by_span``; derived)
    sorted_leaves: dict[int, list[QueryRow]] = field(
        default_factory=dict, compare=False, repr=False
    )

    #: per block, the side of the new document's timestamp its document lies on
    #: (``block_sides``)
    sides: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.var_counts = [Counter() for _ in self.steps]
        self.sides = block_sides(self.template, self.role)

    def span_below(self, node: dict[Any, Any]) -> int | None:
        """The widest time span (latest minus earliest block) that a match of a row
        under trie ``node`` may have: its last window (spec 3.2: each operator bounds
        the span of every block so far), None for INF."""
        return self.spans[id(node)]

    def rows_by_span(self, leaf: dict[Any, Any]) -> list[QueryRow]:
        """A trie leaf's rows, the widest span first (INF first)."""
        return self.sorted_leaves[id(leaf)]

    def vars_at(self, depth: int) -> set[int]:
        """The var ids some row has at step ``depth``."""
        return set(self.var_counts[depth])

    def probe_anchor(self) -> int | None:
        """The step placing the new document's node that the first value probe starts
        from (None: the plan probes no value)."""
        for step in self.steps:
            if step.kind == "value":
                return next(d for d, s in enumerate(self.steps) if s.meta == step.anchor)
        return None

    def insert(self, row: QueryRow) -> None:
        for counts, step in zip(self.var_counts, self.steps, strict=True):
            counts[row.var_ids[step.meta]] += 1
        node = self.trie
        path: list[dict[Any, Any]] = [node]
        for step in self.steps[:-1]:
            node = node.setdefault(row.var_ids[step.meta], {})
            path.append(node)
        leaf: dict[str, QueryRow] = node.setdefault(row.var_ids[self.steps[-1].meta], {})
        leaf[row.qid] = row
        path.append(leaf)
        span = row_span(row)
        for passed in path:
            self.spans[id(passed)] = wider(self.spans.get(id(passed), 0), span)
        self.sorted_leaves[id(leaf)] = sorted(leaf.values(), key=_widest_first)
        self.rows += 1
        if self.max_window is not None:
            if any(w is None for w in row.windows):
                self.max_window = None
            else:
                self.max_window = max([self.max_window, *(w for w in row.windows if w is not None)])

    def delete(self, row: QueryRow) -> None:
        for counts, step in zip(self.var_counts, self.steps, strict=True):
            var = row.var_ids[step.meta]
            counts[var] -= 1
            if not counts[var]:
                del counts[var]
        path: list[tuple[dict[int, Any], int]] = []
        node = self.trie
        for step in self.steps:
            key = row.var_ids[step.meta]
            path.append((node, key))
            node = node[key]
        leaf: Any = node
        del leaf[row.qid]
        self.rows -= 1
        if leaf:
            self.sorted_leaves[id(leaf)] = sorted(leaf.values(), key=_widest_first)
        else:
            del self.sorted_leaves[id(leaf)]
        below: Any = leaf
        for parent, key in reversed(path):
            if below:  # recomputed from what is left below
                self.spans[id(below)] = _span_of(below, self.spans)
            else:
                del self.spans[id(below)]
                del parent[key]
            below = parent
        self.spans[id(self.trie)] = _span_of(self.trie, self.spans)


def role_steps(
    template: Template,
    role: int,
    first_probe: tuple[int, int] | None = None,
    probe_class: frozenset[int] = frozenset(),
) -> tuple[PlanStep, ...]:
    """The join order for ``role`` (see the module docstring).

    ``first_probe``: a value edge between the blocks that must be the first value
    probe (the new document's end placed first, then the stored end found by its
    value): the Spark job's join groups own a match by that edge's value, and a
    group can only probe the values it holds (``xscl.engine.groups``).
    ``probe_class``: when given, every value probe goes along an edge between two of
    these meta-variables (a keyed chain's key class, ``placements.key_class``: a
    group holds a keyed match's documents under its key value only); the other
    equalities are checked as filters.

    Greedy, most selective first: after the new document's top node, prefer
    (1) a node of a started block whose parent is placed and that has a value
    edge to a placed node (a probe that is also a filter), then (2) the new
    document's next node in pre-order, then (3) the first node of an unstarted
    block reachable by a value edge (a view-cache probe), climbing to its block's
    top, then (4) any other node whose parent is placed, else (5) a scan.

    The new document is placed whole before any probe (its nodes are few), so a
    probe knows every value its block must also equal (``PlanStep.holds``) and
    skips the stored documents of a hot value that lack the others, without
    walking them (docs/architecture.md, "Probing by the most selective value").
    """
    placed: list[int] = []
    steps: list[PlanStep] = []
    started: set[int] = set()
    neighbours: dict[int, list[int]] = {i: [] for i in range(template.size)}
    for a, b in template.value_edges:
        neighbours[a].append(b)
        if a != b:
            neighbours[b].append(a)

    def place(meta: int, kind: StepKind, anchor: int) -> None:
        checks = tuple(w for w in neighbours[meta] if w in placed or w == meta)
        block = template.blocks[meta]
        holds: tuple[int, ...] = ()
        if block not in started:  # the block's first node: what its other nodes must equal
            holds = tuple(
                sorted(
                    {
                        w
                        for other in template.block_members(block)
                        if other != meta
                        for w in neighbours[other]
                        if w in placed
                    }
                )
            )
        placed.append(meta)
        started.add(block)
        steps.append(PlanStep(meta, block, kind, anchor, checks, holds))

    def parent_placed(meta: int) -> bool:
        return template.parents[meta] in placed

    def joined_to_placed(meta: int) -> list[int]:
        return [w for w in neighbours[meta] if w in placed]

    role_order = list(template.block_members(role))
    place(role_order[0], "new_root", -1)
    while len(placed) < template.size:
        free = [m for m in range(template.size) if m not in placed]
        filtering = [
            m
            for m in free
            if template.blocks[m] != role
            and template.blocks[m] in started
            and parent_placed(m)
            and joined_to_placed(m)
        ]
        if filtering:
            place(filtering[0], "down", template.parents[filtering[0]])
            continue
        own = [m for m in role_order if m not in placed]
        if own:
            place(own[0], "new_down", template.parents[own[0]])
            continue
        probes = [m for m in free if template.blocks[m] not in started and joined_to_placed(m)]
        if probe_class:
            probes = [
                m
                for m in probes
                if m in probe_class and not probe_class.isdisjoint(joined_to_placed(m))
            ]
        if first_probe is not None and len(started) == 1:  # only the owner edge probes first
            probes = [m for m in probes if m in first_probe and set(first_probe) & set(placed)]
        if probes:
            meta = probes[0]
            anchors = joined_to_placed(meta)
            place(meta, "value", min(w for w in anchors if not probe_class or w in probe_class))
            while template.parents[meta] >= 0:
                parent = template.parents[meta]
                place(parent, "up", meta)
                meta = parent
            continue
        rest = [m for m in free if template.blocks[m] in started and parent_placed(m)]
        if rest:
            place(rest[0], "down", template.parents[rest[0]])
            continue
        block = min(template.blocks[m] for m in free)
        top = next(m for m in template.block_members(block) if template.parents[m] < 0)
        place(top, "scan", -1)
    return tuple(steps)


def block_sides(template: Template, role: int) -> list[int]:
    """Per block, on which side of the new document's (block ``role``) timestamp its
    document lies in a match: -1 strictly before, 1 strictly after, 0 either. In a
    template of FOLLOWED BY only, each block's timestamp is after every earlier
    block's (spec 3.2), so the blocks before ``role`` are earlier, those after later."""
    if not all(kind == "FOLLOWED BY" for kind in template.kinds):
        return [0] * template.block_count
    return [(block > role) - (block < role) for block in range(template.block_count)]


def row_span(row: QueryRow) -> int | None:
    """The widest span a match of ``row`` may have: its last window (None: INF)."""
    return row.windows[-1] if row.windows else 0


def wider(a: int | None, b: int | None) -> int | None:
    """The wider of two spans (None: INF)."""
    return None if a is None or b is None else max(a, b)


def _span_of(node: dict[Any, Any], spans: dict[int, int | None]) -> int | None:
    """A trie node's widest span, from its children (a leaf: from its rows)."""
    out: int | None = 0
    for child in node.values():
        out = wider(out, row_span(child) if isinstance(child, QueryRow) else spans[id(child)])
    return out


def _widest_first(row: QueryRow) -> tuple[bool, int]:
    span = row_span(row)
    return (span is not None, -(span or 0))


def windows_hold(kinds: tuple[str, ...], windows: tuple[int | None, ...], ts: list[int]) -> bool:
    """Spec 3.2's chain semantics for block timestamps ``ts`` (left-associative)."""
    start = end = ts[0]
    for k, kind in enumerate(kinds):
        t, window = ts[k + 1], windows[k]
        if kind == "FOLLOWED BY":
            if not end < t or (window is not None and t - start > window):
                return False
        elif window is not None and max(end, t) - min(start, t) > window:
            return False
        start, end = min(start, t), max(end, t)
    return True
