"""What Stage 1 emits for a node a trie node matches (its requirements, precomputed).

An :class:`Emission` says, for one trie node, which var ids need
``value_nodes`` rows (and so the node its ``values`` row), which need
``matches`` rows, and which pattern edges (``bindings``)
end at it.  The automaton folds the emissions of every trie node a DFA state
matches into one emission of that state (:func:`merge_emissions`), so that
an element whose state was seen before costs a few ``list.extend`` calls of
cached rows, never a per-var lookup.  Edges whose child is reached from the parent by
``/`` steps only have exactly one parent node, a fixed number of levels up;
they are grouped by that distance (:class:`FixedPairs`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import repeat
from typing import TYPE_CHECKING, TypeVar

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


#: Bound on the rows each row cache below holds (it is cleared when full, see
#: :func:`cache_rows`): hostile documents (many elements in one state) cannot
#: grow it further.
ROW_CACHE_ROWS = 16_384

#: ``value_nodes`` / ``matches`` rows (var, node) of one node
VarRows = tuple[tuple[int, str], ...]
#: ``bindings`` rows (var1, var2, node1, node2) of one (parent, child) pair of nodes
BindRows = tuple[tuple[int, int, str, str], ...]

K = TypeVar("K")
R = TypeVar("R")


def cache_rows(cache: dict[K, tuple[R, ...]], key: K, rows: tuple[R, ...]) -> tuple[R, ...]:
    """Store and return ``rows``, keeping ``cache`` within ``ROW_CACHE_ROWS`` rows.

    Every entry of one cache has the same number of rows (one per var id of its
    emission or group), so a bound on the entries bounds the rows.  The caches
    stay plain dicts: their ``get`` is on the hot path.
    """
    if len(cache) >= ROW_CACHE_ROWS // max(len(rows), 1):
        cache.clear()
    cache[key] = rows
    return rows


@dataclass(frozen=True)
class FixedPairs:
    """Pattern edges whose parent is the ancestor ``distance`` levels up."""

    distance: int
    parent_vars: tuple[int, ...]
    child_vars: tuple[int, ...]
    #: (parent node id, child node id) -> rows (see ``Emission.value_rows``)
    rows: dict[tuple[str, str], BindRows] = field(default_factory=dict, compare=False, repr=False)

    def rows_of(self, parent: str, child: str) -> BindRows:
        """The ``bindings`` rows of this group for one pair of nodes (cached in ``rows``)."""
        key = (parent, child)
        found = self.rows.get(key)
        if found is None:
            rows = zip(self.parent_vars, self.child_vars, repeat(parent), repeat(child))
            found = cache_rows(self.rows, key, tuple(rows))
        return found


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
        groups.append(FixedPairs(distance, parents, children))
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
    #: node id -> its ``value_nodes`` / ``matches`` rows:
    #: documents repeat their node ids, so a warm node's rows are one dict lookup
    #: and one ``list.extend`` of shared (immutable) tuples, no allocation per row
    value_rows: dict[str, VarRows] = field(default_factory=dict, compare=False, repr=False)
    node_rows: dict[str, VarRows] = field(default_factory=dict, compare=False, repr=False)

    @staticmethod
    def of(
        values: tuple[int, ...], nodes: tuple[int, ...], pairs: tuple[PairSpec, ...]
    ) -> Emission:
        fixed, searched = split_pairs(pairs)
        return Emission(values, nodes, pairs, fixed, searched)

    def value_rows_of(self, node: str) -> VarRows:
        """``(var, node)`` for every var in ``values`` (cached in ``value_rows``)."""
        return _cached_rows(self.value_rows, self.values, node)

    def node_rows_of(self, node: str) -> VarRows:
        """``(var, node)`` for every var in ``nodes`` (cached in ``node_rows``)."""
        return _cached_rows(self.node_rows, self.nodes, node)

    @property
    def needed(self) -> bool:
        return bool(self.values or self.nodes or self.pairs)


def _cached_rows(cache: dict[str, VarRows], var_ids: tuple[int, ...], node: str) -> VarRows:
    found = cache.get(node)
    return cache_rows(cache, node, tuple(zip(var_ids, repeat(node)))) if found is None else found


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
