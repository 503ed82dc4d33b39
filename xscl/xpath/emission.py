"""What Stage 1 emits for a node a trie node matches (its requirements, precomputed).

An :class:`Emission` says, for one trie node, which var ids need
``value_nodes`` rows (and so the node its ``values`` row), which need
``matches`` rows, and which pattern edges (``bindings``)
end at it.  The automaton folds the emissions of every trie node a DFA state
matches into one emission of that state (:func:`merge_emissions`), so that
an element whose state was seen before costs a few column ``extend`` calls,
never a per-var lookup.  Edges whose child is reached from the parent by
``/`` steps only have exactly one parent node, a fixed number of levels up;
they are grouped by that distance (:class:`FixedPairs`).
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from xscl.xpath.automaton import TrieNode


@dataclass(frozen=True, eq=False)
class PairSpec:
    """A required pattern edge (parent var, child var) and how to find the parent."""

    parent_var: int
    child_var: int
    #: trie nodes from the parent's last node to the child's last node (both included)
    chain: tuple[TrieNode, ...]
    #: the parent is the root element (a definition without steps)
    root_parent: bool
    #: levels from the child's *element* (the owner, for an attribute or text
    #: child) up to the parent's element when every step below the parent is a
    #: ``/`` step: the parent is then that one ancestor; -1 when a ``//`` step
    #: makes several ancestors possible
    fixed_distance: int


def int_array(values: tuple[int, ...]) -> array[int]:
    """``values`` as a C int array: appending one to a column is a memcpy, not a loop."""
    return array("i", values)


@dataclass(frozen=True)
class FixedPairs:
    """Pattern edges whose parent is the ancestor ``distance`` levels up (column-ready)."""

    distance: int
    parent_vars: tuple[int, ...]
    child_vars: tuple[int, ...]
    parent_array: array[int] = field(default_factory=lambda: array("i"), compare=False)
    child_array: array[int] = field(default_factory=lambda: array("i"), compare=False)


def split_pairs(pairs: tuple[PairSpec, ...]) -> tuple[tuple[FixedPairs, ...], tuple[PairSpec, ...]]:
    """Fixed-distance pairs grouped by distance, and the pairs that need a search."""
    fixed: dict[int, list[PairSpec]] = {}
    searched: list[PairSpec] = []
    for spec in pairs:
        if spec.root_parent:
            fixed.setdefault(-1, []).append(spec)
        elif spec.fixed_distance >= 0:
            fixed.setdefault(spec.fixed_distance, []).append(spec)
        else:
            searched.append(spec)
    groups = []
    for distance, group in sorted(fixed.items()):
        parents = tuple(s.parent_var for s in group)
        children = tuple(s.child_var for s in group)
        groups.append(
            FixedPairs(distance, parents, children, int_array(parents), int_array(children))
        )
    return tuple(groups), tuple(searched)


@dataclass(frozen=True)
class Emission:
    """Requirements of one trie node: var ids needing values / nodes, edges ending here."""

    values: tuple[int, ...] = ()
    nodes: tuple[int, ...] = ()
    pairs: tuple[PairSpec, ...] = ()
    #: ``pairs`` split for the hot path (see :func:`split_pairs`)
    fixed_pairs: tuple[FixedPairs, ...] = ()
    searched_pairs: tuple[PairSpec, ...] = ()
    #: ``values`` / ``nodes`` as C int arrays (appended to the var columns as is)
    value_array: array[int] = field(default_factory=lambda: array("i"), compare=False)
    node_array: array[int] = field(default_factory=lambda: array("i"), compare=False)

    @staticmethod
    def of(
        values: tuple[int, ...], nodes: tuple[int, ...], pairs: tuple[PairSpec, ...]
    ) -> Emission:
        fixed, searched = split_pairs(pairs)
        return Emission(values, nodes, pairs, fixed, searched, int_array(values), int_array(nodes))

    @property
    def needed(self) -> bool:
        return bool(self.values or self.nodes or self.pairs)


NO_EMISSION = Emission()


def fixed_distance(chain: tuple[TrieNode, ...]) -> int:
    """``PairSpec.fixed_distance`` of a parent-to-child trie chain."""
    below = chain[1:]
    if any(node.axis != "/" for node in below):
        return -1
    if below and below[-1].test.kind in ("attribute", "text"):
        return len(below) - 1
    return len(below)


def merge_emissions(emissions: list[Emission]) -> Emission | None:
    """Everything an element in one DFA state emits, merged over its trie nodes."""
    if not emissions:
        return None
    return Emission.of(
        values=tuple(v for e in emissions for v in e.values),
        nodes=tuple(v for e in emissions for v in e.nodes),
        pairs=tuple(p for e in emissions for p in e.pairs),
    )
