"""The canonical form is an exact isomorphism test (checked against brute force)."""

from __future__ import annotations

import itertools
import random

from hypothesis import given
from hypothesis import strategies as st

from tests.profiles import examples
from xscl.lang.ast import JoinKind
from xscl.templates.canonical import RawGraph, canonical_raw


def random_graph(rng: random.Random, sizes: tuple[int, ...], edges: int) -> RawGraph:
    blocks: list[int] = []
    parents: list[int] = []
    for block, size in enumerate(sizes):
        start = len(blocks)
        for i in range(size):
            blocks.append(block)
            parents.append(-1 if i == 0 else start + rng.randrange(i))
    n = len(blocks)
    pairs: set[tuple[int, int]] = set()
    for _ in range(edges):
        a, b = rng.randrange(n), rng.randrange(n)
        pairs.add((min(a, b), max(a, b)))
    choices: tuple[JoinKind, ...] = ("JOIN", "FOLLOWED BY")
    kinds = tuple(rng.choice(choices) for _ in range(len(sizes) - 1))
    return (kinds, tuple(blocks), tuple(parents), (False,) * n, tuple(sorted(pairs)))


def relabel(graph: RawGraph, rng: random.Random) -> RawGraph:
    """The same graph with nodes renumbered (block order kept, parents still first)."""
    kinds, blocks, parents, docs, edges = graph
    order: list[int] = []
    for block in sorted(set(blocks)):
        members = [i for i in range(len(blocks)) if blocks[i] == block]
        # a random topological order of the block's tree
        pending = [i for i in members if parents[i] < 0]
        while pending:
            node = pending.pop(rng.randrange(len(pending)))
            order.append(node)
            pending.extend(i for i in members if parents[i] == node)
    new = {old: pos for pos, old in enumerate(order)}
    return (
        kinds,
        tuple(blocks[i] for i in order),
        tuple(new[parents[i]] if parents[i] >= 0 else -1 for i in order),
        tuple(docs[i] for i in order),
        tuple(sorted(tuple(sorted((new[a], new[b]))) for a, b in edges)),  # type: ignore[misc]
    )


def isomorphic(g: RawGraph, h: RawGraph) -> bool:
    """Brute force over block-preserving bijections."""
    if g[0] != h[0] or sorted(g[1]) != sorted(h[1]) or len(g[4]) != len(h[4]):
        return False
    blocks = sorted(set(g[1]))
    g_members = [[i for i, b in enumerate(g[1]) if b == block] for block in blocks]
    h_members = [[i for i, b in enumerate(h[1]) if b == block] for block in blocks]
    h_edges = set(h[4])
    for choice in itertools.product(*(itertools.permutations(m) for m in h_members)):
        mapping = {
            a: b
            for gm, hm in zip(g_members, choice, strict=True)
            for a, b in zip(gm, hm, strict=True)
        }
        if any((h[2][mapping[i]] != (mapping[p] if p >= 0 else -1)) for i, p in enumerate(g[2])):
            continue
        if {tuple(sorted((mapping[a], mapping[b]))) for a, b in g[4]} == h_edges:
            return True
    return False


@examples(150)
@given(
    seed=st.integers(0, 10**9),
    sizes=st.tuples(st.integers(1, 4), st.integers(1, 4)),
    edges=st.integers(1, 4),
)
def test_canonical_form_equals_isomorphism(seed: int, sizes: tuple[int, int], edges: int) -> None:
    rng = random.Random(seed)
    g = random_graph(rng, sizes, edges)
    same = relabel(g, rng)
    other = random_graph(rng, sizes, edges)
    assert canonical_raw(g)[0] == canonical_raw(same)[0]
    assert (canonical_raw(g)[0] == canonical_raw(other)[0]) == isomorphic(g, other)


def test_canonical_order_maps_meta_variables_back_to_input_nodes() -> None:
    graph: RawGraph = (("FOLLOWED BY",), (0, 0, 0, 1), (-1, 0, 0, -1), (False,) * 4, ((2, 3),))
    template, order = canonical_raw(graph)
    assert sorted(order) == [0, 1, 2, 3]
    # the joined leaf (input node 2) must sit where the template's value edge says
    ((a, b),) = template.value_edges
    assert {order[a], order[b]} == {2, 3}
