"""Canonical form of a reduced join graph: the query's template (thesis 6.4.1-6.4.2).

Two queries share a template exactly when their reduced join graphs are
isomorphic by a map that keeps every node in its block (block order = side),
maps structural edges (parent -> child) to structural edges, value edges to
value edges, document nodes to document nodes, and the operators' kinds
(JOIN vs FOLLOWED BY) are equal. Windows and variable definitions are not part
of the template: they are the columns of the template's query table R_T.

Algorithm: colour refinement (a node's colour = its block, document flag, depth,
then iteratively the colours of its parent, children and value neighbours),
then individualisation of the first non-singleton colour class, one member at a
time, recursively (the search tree of nauty, with its automorphism pruning:
``_Search``). Every leaf of the search gives a discrete colouring; its encoding
lists the
nodes block by block in pre-order with children sorted by colour. The smallest
encoding is the template. Colours are ranks of sorted signatures, never
hashes, so the result does not depend on node names or input order.

Q1 and Q2 of the thesis's Table 6.2 share one template; meta-variables
var1..var6 are x1 x2 x3 x4 x5 x6 for Q1 (thesis Figure 6.5):

>>> from xscl.lang.normal_form import normalize
>>> from xscl.lang.parser import parse_query
>>> from xscl.templates.graph_minor import reduce_join_graph
>>> from xscl.templates.join_graph import build_join_graph
>>> def template(text: str) -> tuple[Template, tuple[str, ...]]:
...     graph = build_join_graph(normalize(parse_query(text)))
...     return canonical_template(reduce_join_graph(graph))
>>> q1, names = template("S//book->x1[./author->x2][./title->x3]"
...     " FOLLOWED BY {x2=x5 AND x3=x6, 1h} S//blog->x4[./author->x5][./title->x6]")
>>> q1.kinds, q1.blocks, q1.parents, q1.value_edges
(('FOLLOWED BY',), (0, 0, 0, 1, 1, 1), (-1, 0, 0, -1, 3, 3), ((1, 4), (2, 5)))
>>> names
('x1', 'x2', 'x3', 'x4', 'x5', 'x6')
>>> q2, _ = template("S//book->x1[./category->x7][./author->x2]"
...     " FOLLOWED BY {x7=x8 AND x2=x5, 1d} S//blog->x4[./author->x5][./category->x8]")
>>> q2 == q1
True
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from xscl.lang.ast import JoinKind
from xscl.templates.join_graph import JoinGraph


@dataclass(frozen=True, order=True)
class Template:
    """A template: the canonical encoding of a reduced join graph.

    Meta-variable ``i`` (``var{i+1}`` in the thesis) lives in ``blocks[i]``, has
    structural parent ``parents[i]`` (-1 for its block's top node), and stands for
    the block's document when ``documents[i]``. ``value_edges`` are sorted pairs
    ``(i, j)`` with ``i <= j``. Meta-variables are numbered block by block in
    pre-order, so a parent always comes before its children.
    """

    kinds: tuple[JoinKind, ...]
    blocks: tuple[int, ...]
    parents: tuple[int, ...]
    documents: tuple[bool, ...]
    value_edges: tuple[tuple[int, int], ...]

    @property
    def size(self) -> int:
        return len(self.blocks)

    @property
    def block_count(self) -> int:
        return len(self.kinds) + 1

    def children(self, index: int) -> tuple[int, ...]:
        return tuple(i for i, p in enumerate(self.parents) if p == index)

    def block_members(self, block: int) -> tuple[int, ...]:
        return tuple(i for i, b in enumerate(self.blocks) if b == block)

    def describe(self) -> str:
        """One line, e.g. ``[v1(v2,v3)] FOLLOWED BY [v4(v5,v6)] v2=v5 v3=v6``."""

        def tree(i: int) -> str:
            label = f"doc{self.blocks[i]}" if self.documents[i] else f"v{i + 1}"
            kids = self.children(i)
            return label + ("(" + ",".join(tree(k) for k in kids) + ")" if kids else "")

        parts: list[str] = []
        for block in range(self.block_count):
            roots = [i for i in self.block_members(block) if self.parents[i] < 0]
            parts.append("[" + " ".join(tree(r) for r in roots) + "]")
            if block < len(self.kinds):
                parts.append(self.kinds[block])
        edges = " ".join(f"v{i + 1}=v{j + 1}" for i, j in self.value_edges)
        return " ".join(parts) + (" " + edges if edges else "")


#: A graph in index form: kinds, block of each node, parent index (-1), document flags, value edges.
RawGraph = tuple[
    tuple[JoinKind, ...],
    tuple[int, ...],
    tuple[int, ...],
    tuple[bool, ...],
    tuple[tuple[int, int], ...],
]


def raw_graph(graph: JoinGraph) -> tuple[RawGraph, tuple[str, ...]]:
    """``graph`` in index form (nodes in the graph's own order) and the node names."""
    names = tuple(n.name for n in graph.nodes)
    index = {name: i for i, name in enumerate(names)}
    parents = [-1] * len(names)
    for parent, child in graph.structural:
        parents[index[child]] = index[parent]
    edges = tuple(
        sorted({(min(index[a], index[b]), max(index[a], index[b])) for a, b in graph.value})
    )
    raw: RawGraph = (
        graph.kinds,
        tuple(n.block for n in graph.nodes),
        tuple(parents),
        tuple(n.is_document for n in graph.nodes),
        edges,
    )
    return raw, names


def canonical_template(graph: JoinGraph) -> tuple[Template, tuple[str, ...]]:
    """The template of a *reduced* join graph and its node names in meta-variable order."""
    raw, names = raw_graph(graph)
    template, order = canonical_raw(raw)
    return template, tuple(names[i] for i in order)


@lru_cache(maxsize=65536)
def canonical_raw(raw: RawGraph) -> tuple[Template, tuple[int, ...]]:
    """Canonical template of an index-form graph and, per meta-variable, its input index.

    Cached: queries generated from one schema repeat a handful of raw shapes.
    """
    kinds, blocks, parents, documents, edges = raw
    n = len(blocks)
    children: list[list[int]] = [[] for _ in range(n)]
    for i, p in enumerate(parents):
        if p >= 0:
            children[p].append(i)
    neighbours: list[list[int]] = [[] for _ in range(n)]
    for a, b in edges:
        neighbours[a].append(b)
        if a != b:
            neighbours[b].append(a)
    depth = [0] * n
    for i in range(n):
        j = i
        while parents[j] >= 0:
            depth[i] += 1
            j = parents[j]
    shape = _Shape(kinds, blocks, parents, documents, children, neighbours)
    initial = _rank([(blocks[i], documents[i], depth[i], i in _loops(edges)) for i in range(n)])
    search = _Search(shape)
    search.run(initial, ())
    best = search.best
    assert best is not None
    return best[1], best[2]


def _loops(edges: tuple[tuple[int, int], ...]) -> frozenset[int]:
    return frozenset(a for a, b in edges if a == b)


def _template_key(t: Template) -> tuple[object, ...]:
    return (t.kinds, t.blocks, t.parents, t.documents, t.value_edges)


def _rank(signatures: list[tuple[object, ...]]) -> list[int]:
    """Colours as ranks of the sorted distinct signatures (canonical, name-free)."""
    order = {sig: rank for rank, sig in enumerate(sorted(set(signatures)))}
    return [order[sig] for sig in signatures]


@dataclass
class _Shape:
    kinds: tuple[JoinKind, ...]
    blocks: tuple[int, ...]
    parents: tuple[int, ...]
    documents: tuple[bool, ...]
    children: list[list[int]]
    neighbours: list[list[int]]

    def refine(self, colours: list[int]) -> list[int]:
        count = len(set(colours))
        while True:
            signatures: list[tuple[object, ...]] = [
                (
                    colours[i],
                    colours[self.parents[i]] if self.parents[i] >= 0 else -1,
                    tuple(sorted(colours[c] for c in self.children[i])),
                    tuple(sorted(colours[v] for v in self.neighbours[i])),
                )
                for i in range(len(colours))
            ]
            colours = _rank(signatures)
            new_count = len(set(colours))
            if new_count == count:
                return colours
            count = new_count

    def encode(self, colours: list[int]) -> tuple[Template, tuple[int, ...]]:
        order: list[int] = []

        def visit(i: int) -> None:
            order.append(i)
            for child in sorted(self.children[i], key=lambda c: colours[c]):
                visit(child)

        for block in range(len(self.kinds) + 1):
            roots = [
                i for i in range(len(colours)) if self.blocks[i] == block and self.parents[i] < 0
            ]
            for root in sorted(roots, key=lambda r: colours[r]):
                visit(root)
        position = {node: pos for pos, node in enumerate(order)}
        edges: set[tuple[int, int]] = set()
        for a in range(len(order)):
            for b in self.neighbours[a]:
                pa, pb = position[a], position[b]
                edges.add((min(pa, pb), max(pa, pb)))
        template = Template(
            kinds=self.kinds,
            blocks=tuple(self.blocks[i] for i in order),
            parents=tuple(position[self.parents[i]] if self.parents[i] >= 0 else -1 for i in order),
            documents=tuple(self.documents[i] for i in order),
            value_edges=tuple(sorted(edges)),
        )
        return template, tuple(order)


class _Search:
    """Individualisation-refinement with automorphism pruning (after nauty).

    A leaf whose encoding equals the best one gives an automorphism (the node at
    position i of the best leaf's order -> the node at position i of this
    leaf's). Two prunings follow, neither of which changes the minimum:

    * *back-jump*: the rest of the subtree where the new leaf was found is the
      automorphic image of explored ground, so the search returns to the level
      where the two leaves' paths diverge;
    * *orbits*: at a level with individualised prefix P, a cell member in the
      same orbit as an explored member, under the automorphisms found so far
      that fix P pointwise, is skipped.

    Symmetric stars (k equal leaves) thus cost O(k) leaves instead of k!.
    """

    def __init__(self, shape: _Shape) -> None:
        self.shape = shape
        self.best: tuple[tuple[object, ...], Template, tuple[int, ...]] | None = None
        self.best_path: tuple[int, ...] = ()
        self.automorphisms: list[tuple[int, ...]] = []

    def run(self, colours: list[int], prefix: tuple[int, ...]) -> int:
        """Explore below ``prefix``; returns the level to resume at (``len(prefix)`` = go on)."""
        colours = self.shape.refine(colours)
        cells: dict[int, list[int]] = {}
        for node, colour in enumerate(colours):
            cells.setdefault(colour, []).append(node)
        ties = [cell for colour, cell in sorted(cells.items()) if len(cell) > 1]
        if not ties:
            return self.leaf(colours, prefix)
        level = len(prefix)
        explored: list[int] = []
        for chosen in ties[0]:
            if explored and self.same_orbit(chosen, explored, prefix):
                continue
            explored.append(chosen)
            split = [
                (2 * c + (0 if node == chosen else 1)) if c == colours[chosen] else 2 * c
                for node, c in enumerate(colours)
            ]
            resume = self.run(_rank([(c,) for c in split]), (*prefix, chosen))
            if resume < level:
                return resume
        return level

    def same_orbit(self, target: int, explored: list[int], prefix: tuple[int, ...]) -> bool:
        parent = list(range(len(self.shape.blocks)))

        def find(x: int) -> int:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for sigma in self.automorphisms:
            if all(sigma[p] == p for p in prefix):
                for x, y in enumerate(sigma):
                    parent[find(x)] = find(y)
        root = find(target)
        return any(find(u) == root for u in explored)

    def leaf(self, colours: list[int], path: tuple[int, ...]) -> int:
        template, order = self.shape.encode(colours)
        key = _template_key(template)
        best = self.best
        if best is None or key < best[0]:
            self.best = (key, template, order)
            self.best_path = path
            return len(path)
        if key == best[0]:
            sigma = [0] * len(order)
            for a, b in zip(best[2], order, strict=True):
                sigma[a] = b
            self.automorphisms.append(tuple(sigma))
            common = 0
            while common < min(len(path), len(self.best_path)) and (
                path[common] == self.best_path[common]
            ):
                common += 1
            return common
        return len(path)
