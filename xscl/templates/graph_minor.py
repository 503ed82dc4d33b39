"""The graph-minor reduction of a join graph (thesis 6.4.2), one block tree at a time.

Three rules, applied in order to every block's tree:

1. **Drop unjoined leaves**, recursively: a leaf in no value edge is removed.
   Its subtree is *folded* into its parent's definition as a path filter (and
   into the definitions of the parent's other descendants), so the remaining
   variables still demand that the dropped branch embeds under the same node.
   (The thesis can skip this because its Stage 1 checked whole tree patterns;
   here a SELECT-only variable may be a pattern variable, and dropping it must
   not weaken the match.)
2. **Drop nodes above the LCA**: keep only the least common ancestor of the
   block's joined nodes and its descendants. A block without joined nodes keeps
   only its document node (defined by the block's ``exists`` path).
3. **Contract single-child nodes**: an unjoined node with exactly one child is
   removed and its child hangs from its parent (an ancestor-descendant edge).

Example: block 0 joined on x2 and x3, x4 only selected: rule 1 drops x4, folding
``[./e]`` into x0's step (x1..x3 become ``S//a[./e]/b...``), rule 2 drops #doc0 and
x0 (the LCA is x1), rule 3 has nothing to contract; block 1 keeps w, y, z:

>>> from xscl.lang.explain import format_definition
>>> from xscl.lang.normal_form import normalize
>>> from xscl.lang.parser import parse_query
>>> from xscl.templates.join_graph import build_join_graph
>>> reduced = reduce_join_graph(build_join_graph(normalize(parse_query(
...     "SELECT x4 FROM S//a->x0[./b->x1[./c->x2][./d->x3]][./e->x4]"
...     " JOIN {x2=y AND x3=z, 1h} T//f->w[./y->y][./z->z]"))))
>>> [(node.name, format_definition(node.definition)) for node in reduced.nodes[:3]]
[('x1', 'S//a[./e]/b'), ('x2', 'S//a[./e]/b/c'), ('x3', 'S//a[./e]/b/d')]
>>> reduced.structural
(('x1', 'x2'), ('x1', 'x3'), ('w', 'y'), ('w', 'z'))
"""

from __future__ import annotations

from dataclasses import replace

from xscl.lang.ast import Block, PathPredicate, RelPath
from xscl.lang.normal_form.model import VarDef
from xscl.lang.normal_form.order_predicates import canonical_predicates, order_steps
from xscl.templates.join_graph import JoinGraph, JoinNode


def fold_branch(parent: VarDef, child: VarDef) -> PathPredicate:
    """The filter that says ``child`` embeds below ``parent``'s node."""
    rest = child.path.steps[len(parent.path.steps) :]
    return PathPredicate(RelPath(order_steps(rest)))


def add_filter(definition: VarDef, position: int, predicate: PathPredicate) -> VarDef:
    """``definition`` with ``predicate`` added to its step at ``position`` (canonical order)."""
    steps = list(definition.path.steps)
    step = steps[position]
    steps[position] = replace(step, predicates=canonical_predicates((*step.predicates, predicate)))
    return VarDef(Block(definition.stream, tuple(steps)))


class _BlockTree:
    """A mutable working copy of one block's tree (names, parent links, definitions)."""

    def __init__(self, graph: JoinGraph, block: int) -> None:
        self.nodes: dict[str, JoinNode] = {n.name: n for n in graph.block_nodes(block)}
        self.order: list[str] = [n.name for n in graph.block_nodes(block)]
        self.parent: dict[str, str] = {
            c: p for p, c in graph.structural if c in self.nodes and p in self.nodes
        }
        self.joined = graph.joined() & self.nodes.keys()

    def children(self, name: str) -> list[str]:
        return [n for n in self.order if self.parent.get(n) == name]

    def subtree(self, name: str) -> list[str]:
        out = [name]
        for child in self.children(name):
            out.extend(self.subtree(child))
        return out

    def remove(self, name: str) -> None:
        self.order.remove(name)
        del self.nodes[name]
        self.parent.pop(name, None)

    def ancestors_or_self(self, name: str) -> list[str]:
        chain = [name]
        while chain[-1] in self.parent:
            chain.append(self.parent[chain[-1]])
        return chain


def drop_unjoined_leaves(tree: _BlockTree) -> None:
    """Rule 1 (see module doc), folding every dropped leaf into its ancestors' subtree."""
    changed = True
    while changed:
        changed = False
        for name in list(reversed(tree.order)):
            node = tree.nodes[name]
            if node.is_document or name in tree.joined or tree.children(name):
                continue
            parent = tree.parent.get(name)
            if parent is not None and not tree.nodes[parent].is_document:
                parent_def = tree.nodes[parent].definition
                predicate = fold_branch(parent_def, node.definition)
                position = len(parent_def.path.steps) - 1
                for kept in tree.subtree(parent):
                    if kept != name:
                        old = tree.nodes[kept]
                        tree.nodes[kept] = replace(
                            old, definition=add_filter(old.definition, position, predicate)
                        )
            tree.remove(name)
            changed = True


def keep_below_lca(tree: _BlockTree) -> None:
    """Rule 2: keep the LCA of the joined nodes and its descendants (or the document)."""
    if not tree.joined:
        for name in list(tree.order):
            if not tree.nodes[name].is_document:
                tree.remove(name)
        return
    chains = [list(reversed(tree.ancestors_or_self(n))) for n in sorted(tree.joined)]
    lca = chains[0][0]
    for depth in range(min(len(c) for c in chains)):
        if len({c[depth] for c in chains}) != 1:
            break
        lca = chains[0][depth]
    keep = set(tree.subtree(lca))
    for name in list(tree.order):
        if name not in keep:
            tree.remove(name)
    tree.parent.pop(lca, None)


def contract_single_children(tree: _BlockTree) -> None:
    """Rule 3: splice out unjoined nodes that have exactly one child."""
    for name in list(tree.order):
        kids = tree.children(name)
        if len(kids) == 1 and name not in tree.joined and not tree.nodes[name].is_document:
            parent = tree.parent.get(name)
            if parent is None:
                tree.parent.pop(kids[0], None)
            else:
                tree.parent[kids[0]] = parent
            tree.remove(name)


def reduce_join_graph(graph: JoinGraph) -> JoinGraph:
    """The graph minor of ``graph`` (rules 1-3 of the module doc, per block)."""
    nodes: list[JoinNode] = []
    structural: list[tuple[str, str]] = []
    for block in range(graph.block_count):
        tree = _BlockTree(graph, block)
        drop_unjoined_leaves(tree)
        keep_below_lca(tree)
        contract_single_children(tree)
        nodes.extend(tree.nodes[name] for name in tree.order)
        structural.extend((tree.parent[n], n) for n in tree.order if n in tree.parent)
    return replace(graph, nodes=tuple(nodes), structural=tuple(structural))
