"""The join graph of a normalised query (thesis 6.4.1), for two blocks and for chains.

Nodes are the pattern variables of every block plus one *document node* per
block (``#doc<i>``, the parent of the block's root variable, defined by the
block's ``exists`` path). Structural edges are the blocks' pattern edges
(parent, child) plus (document node, root). Value edges are the query's
equalities, undirected. A chain ``B0 op1 B1 op2 B2`` is one graph with three
block trees; the operators' kinds and windows ride along.

Thesis Table 6.2, Q1:

>>> from xscl.lang.normal_form import normalize
>>> from xscl.lang.parser import parse_query
>>> graph = build_join_graph(normalize(parse_query(
...     "S//book->x1[./author->x2][./title->x3]"
...     " FOLLOWED BY {x2=x5 AND x3=x6, 1h} S//blog->x4[./author->x5][./title->x6]")))
>>> [node.name for node in graph.nodes]
['#doc0', 'x1', 'x2', 'x3', '#doc1', 'x4', 'x5', 'x6']
>>> graph.structural
(('#doc0', 'x1'), ('x1', 'x2'), ('x1', 'x3'), ('#doc1', 'x4'), ('x4', 'x5'), ('x4', 'x6'))
>>> graph.value, graph.kinds
((('x2', 'x5'), ('x3', 'x6')), ('FOLLOWED BY',))
"""

from __future__ import annotations

from dataclasses import dataclass

from xscl.lang.ast import JoinKind
from xscl.lang.normal_form.model import NormalQuery, VarDef


def document_node_name(block: int) -> str:
    """Name of the document node of ``block`` (``#`` never starts a variable name)."""
    return f"#doc{block}"


@dataclass(frozen=True)
class JoinNode:
    """A node of a join graph: a pattern variable, or a block's document."""

    name: str
    block: int
    definition: VarDef
    is_document: bool = False


@dataclass(frozen=True)
class JoinGraph:
    """A query's join graph; ``nodes`` are block by block, each block in pre-order."""

    nodes: tuple[JoinNode, ...]
    structural: tuple[tuple[str, str], ...]
    value: tuple[tuple[str, str], ...]
    kinds: tuple[JoinKind, ...]
    windows: tuple[int | None, ...]
    block_count: int

    def node(self, name: str) -> JoinNode:
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(name)

    def children(self, name: str) -> tuple[str, ...]:
        return tuple(child for parent, child in self.structural if parent == name)

    def parent(self, name: str) -> str | None:
        for parent, child in self.structural:
            if child == name:
                return parent
        return None

    def joined(self) -> frozenset[str]:
        """Names of nodes that take part in a value edge."""
        return frozenset(name for edge in self.value for name in edge)

    def block_nodes(self, block: int) -> tuple[JoinNode, ...]:
        return tuple(node for node in self.nodes if node.block == block)


def build_join_graph(query: NormalQuery) -> JoinGraph:
    """The join graph of ``query`` (see the module docstring)."""
    nodes: list[JoinNode] = []
    structural: list[tuple[str, str]] = []
    for block in query.blocks:
        doc = document_node_name(block.index)
        nodes.append(JoinNode(doc, block.index, block.exists, is_document=True))
        if block.root is not None:
            structural.append((doc, block.root))
        nodes.extend(JoinNode(v.name, block.index, v.definition) for v in block.variables)
        structural.extend(block.edges)
    seen: set[frozenset[str]] = set()
    value: list[tuple[str, str]] = []
    for eq in query.equalities:
        key = frozenset((eq.left, eq.right))
        if key not in seen:  # x=x stays: it still requires a non-empty value
            seen.add(key)
            value.append((eq.left, eq.right))
    return JoinGraph(
        nodes=tuple(nodes),
        structural=tuple(structural),
        value=tuple(value),
        kinds=tuple(op.kind for op in query.ops),
        windows=tuple(op.window_micros for op in query.ops),
        block_count=len(query.blocks),
    )
