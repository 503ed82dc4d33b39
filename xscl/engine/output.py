"""Result records, result ids and output XML of the local engine (spec 3.3, 3.4, section 4).

For each block of a match the engine needs the block's *full* pattern again
(the template kept only the joined part): ``QueryOutput`` registers, with
Stage 1, every pattern variable of every block, its pattern edges and the
block's first step, so that the embeddings consistent with a result (same
documents, same join-variable nodes) can be enumerated from the stored R_bin of
each document. From them:

* ``SELECT *``: per block the first-step node that is deepest among the
  consistent embeddings (it is then an ancestor-or-self of the block's join
  nodes), or the first in document order when the block has no join variable,
  or the root element for a block without steps;
* ``SELECT x, ...``: the join variable's node, or the first binding of a
  non-join variable in document order among consistent embeddings.

Nodes are copied from the document (parsed again, safely, on demand and cached):
elements deep-copied without their tail, attribute and text nodes as text.

Example: thesis Q1 over d1 (book) and d2 (blog) gives
``<result query="Q1"><book>...</book><blog>...</blog></result>``.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from lxml import etree

from xscl.connectors.document import format_ts
from xscl.engine.stage1_claims import Stage1Requests
from xscl.engine.state import DocState
from xscl.lang.normal_form.model import NormalQuery
from xscl.xpath import parse_document
from xscl.xpath.nodes import (
    AttributeNode,
    Node,
    TextNode,
    attribute_items,
    attribute_qname,
    text_children,
)


def result_id(query_id: str, docs: Sequence[tuple[str, str]], nodes: Mapping[str, str]) -> str:
    """First 32 hex digits of SHA-256 over ``[qid, [[stream, docid]...], [[var, node]...]]``."""
    payload = [query_id, [list(d) for d in docs], [[v, nodes[v]] for v in sorted(nodes)]]
    text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True, eq=False)
class ResultRecord:
    """One result (spec section 4); ``start``/``end`` are the match's interval.

    Its XML is given whole (``built_xml``) or, for ``SELECT *``, as pieces
    (``xml_parts``: the documents' own element texts, shared by every result of
    the same documents). ``xml`` joins the pieces only when read: the sinks
    encode the pieces (joining them eagerly cost memory and time at 100k
    subscriptions: docs/benchmarks.md). Records compare by their fields and
    ``xml``, however it was given.
    """

    query: str
    result_id: str
    docs: tuple[tuple[str, str, int], ...]
    nodes: tuple[tuple[str, str], ...]
    values: tuple[tuple[str, str], ...]
    start_micros: int
    end_micros: int
    built_xml: str | None = None
    xml_parts: tuple[str, ...] | None = field(default=None, repr=False)
    #: per document, its item's (title, link) (``DocumentTree.item``), for the Atom
    #: entry of a result whose XML does not copy the item; not part of the record
    #: (spec section 4): None when not known
    items: tuple[tuple[str | None, str | None], ...] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if (self.built_xml is None) == (self.xml_parts is None):
            raise ValueError("a result record needs exactly one of built_xml and xml_parts")

    @cached_property
    def xml(self) -> str:
        """The result's XML (spec section 4)."""
        if self.built_xml is not None:
            return self.built_xml
        assert self.xml_parts is not None
        return "".join(self.xml_parts)

    def _key(self) -> tuple[object, ...]:
        return (
            self.query,
            self.result_id,
            self.docs,
            self.nodes,
            self.values,
            self.xml,
            self.start_micros,
            self.end_micros,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ResultRecord):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "result_id": self.result_id,
            "docs": [{"stream": s, "docid": d, "ts": format_ts(t)} for s, d, t in self.docs],
            "nodes": dict(self.nodes),
            "values": dict(self.values),
            "xml": self.xml,
        }

    def to_json_line(self) -> str:
        return json.dumps(self.to_json_dict(), ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class BlockOutput:
    """What output construction needs of one block: var ids of its full pattern, as
    tuples aligned with ``variables`` (kept per query for as long as it is registered:
    no dict, no instance ``__dict__``).

    >>> out = BlockOutput(("x", "y"), (7, 9), (-1, 0), 7, True)
    >>> out.id_of("y"), out.parent_of("y"), out.parent_of("x"), out.signature
    (9, 'x', None, (((7, -1), (9, 7)), 7, True))
    """

    variables: tuple[str, ...]
    #: each variable's var id
    var_ids: tuple[int, ...]
    #: each variable's parent, by its position in ``variables`` (-1: none)
    parents: tuple[int, ...]
    first_id: int | None
    first_is_root: bool

    def id_of(self, name: str) -> int:
        return self.var_ids[self.variables.index(name)]

    def parent_of(self, name: str) -> str | None:
        parent = self.parents[self.variables.index(name)]
        return None if parent < 0 else self.variables[parent]

    @property
    def signature(self) -> tuple[object, ...]:
        """The block's pattern in var ids only (queries with equal patterns share it)."""
        ids = self.var_ids
        shape = tuple((v, ids[p] if p >= 0 else -1) for v, p in zip(ids, self.parents, strict=True))
        return (shape, self.first_id, self.first_is_root)


class DocumentTrees:
    """Parsed documents by (stream, docid), least recently used dropped first."""

    def __init__(self, capacity: int = 256) -> None:
        self.capacity = capacity
        self._trees: OrderedDict[tuple[str, str], DocumentTree] = OrderedDict()

    def get(self, doc: DocState) -> DocumentTree:
        tree = self._trees.get(doc.key)
        if tree is None:
            tree = DocumentTree(parse_document(doc.xml))
            self._trees[doc.key] = tree
            if len(self._trees) > self.capacity:
                self._trees.popitem(last=False)
        else:
            self._trees.move_to_end(doc.key)
        return tree


class DocumentTree:
    """Node ids of one document -> lxml objects, document order and depth (spec section 1)."""

    def __init__(self, root: etree._Element) -> None:
        self.elements: list[etree._Element] = []
        self.order: dict[str, tuple[int, int]] = {}
        self._counter = 0
        self._serialized: dict[str, str] = {}
        #: first-step node per (block pattern signature, fixed join nodes): shared by queries
        self.first_steps: dict[tuple[object, ...], str] = {}
        #: ``SELECT *`` part per (block key, join nodes): the first-step element's
        #: serialisation, or None when that node is not an element (xscl.engine.records)
        self.first_parts: dict[tuple[object, ...], str | None] = {}
        self._visit(root, 0)

    @cached_property
    def item(self) -> tuple[str | None, str | None]:
        """The document's item title and own http(s) link, read from its root element
        (``connectors.item_label``): what its Atom entries name it by."""
        from xscl.connectors.item_label import item_link, item_title

        root = self.elements[0]
        return item_title(root), item_link(root)

    def _next(self) -> int:
        self._counter += 1
        return self._counter

    def _visit(self, element: etree._Element, depth: int) -> None:
        index = len(self.elements)
        self.elements.append(element)
        self.order[str(index)] = (self._next(), depth)
        for key in element.attrib:
            self.order[f"{index}/@{attribute_qname(element, str(key))}"] = (self._next(), depth + 1)
        k = 0
        if element.text:
            k += 1
            self.order[f"{index}/text()[{k}]"] = (self._next(), depth + 1)
        for child in element:
            if isinstance(child.tag, str):
                self._visit(child, depth + 1)
            if child.tail:
                k += 1
                self.order[f"{index}/text()[{k}]"] = (self._next(), depth + 1)

    def serialized(self, node: str) -> str:
        """``tostring`` of a copy of element ``node`` without its tail (cached)."""
        text = self._serialized.get(node)
        if text is None:
            clone = copy.deepcopy(self.elements[int(node)])
            clone.tail = None
            text = str(etree.tostring(clone, encoding="unicode"))
            self._serialized[node] = text
        return text

    def key(self, node: str) -> int:
        """Document-order position of a node id."""
        return self.order[node][0]

    def depth(self, node: str) -> int:
        return self.order[node][1]

    def node(self, node: str) -> Node:
        """The node a node id names (docs/language.md: ``N``, ``N/@qname``, ``N/text()[k]``)."""
        head, _, rest = node.partition("/")
        element = self.elements[int(head)]
        if not rest:
            return element
        if rest.startswith("@"):
            name = rest[1:]
            for key, value in attribute_items(element):
                if attribute_qname(element, str(key)) == name:
                    return AttributeNode(element, key, value)
            raise KeyError(node)
        k = int(rest[len("text()[") : -1])
        return TextNode(element, k, text_children(element)[k - 1])

    def append(self, parent: etree._Element, node: str) -> None:
        """Append a copy of ``node`` to ``parent`` (an element, or its text)."""
        head, _, rest = node.partition("/")
        element = self.elements[int(head)]
        if not rest:
            clone = copy.deepcopy(element)
            clone.tail = None
            parent.append(clone)
            return
        if rest.startswith("@"):
            name = rest[1:]
            text = next(
                str(v)
                for k, v in element.attrib.items()
                if attribute_qname(element, str(k)) == name
            )
        else:
            k = int(rest[len("text()[") : -1])
            text = text_children(element)[k - 1]
        if len(parent):
            last = parent[-1]
            last.tail = (last.tail or "") + text
        else:
            parent.text = (parent.text or "") + text


class QueryOutput:
    """Output construction for one query (see module docstring)."""

    def __init__(self, query: NormalQuery, stage1: Stage1Requests) -> None:
        self.qid = query.qid
        self.select = query.query.select
        #: each selected variable's block (only what output needs: the normal form is not
        #: kept once the query is registered)
        self.select_blocks = (
            {} if self.select is None else {name: query.block_of(name) for name in self.select}
        )
        self.blocks: list[BlockOutput | None] = []
        for block in query.blocks:
            if block.first_step is None:
                self.blocks.append(None)
                continue
            ids = {v.name: stage1.register(v.definition) for v in block.variables}
            for var_id in ids.values():
                stage1.require_nodes(var_id)
            parent = {child: par for par, child in block.edges}
            for par, child in block.edges:
                stage1.require_pair(ids[par], ids[child])
            names = tuple(v.name for v in block.variables)
            first_id = stage1.register(block.first_step)
            first_is_root = False
            if block.root is None:
                stage1.require_nodes(first_id)
            elif block.first_step == query.variable(block.root).definition:
                first_is_root = True
            else:
                stage1.require_pair(first_id, ids[block.root])
            self.blocks.append(
                BlockOutput(
                    names,
                    tuple(ids[n] for n in names),
                    tuple(names.index(parent[n]) if n in parent else -1 for n in names),
                    first_id,
                    first_is_root,
                )
            )

    def embeddings(
        self, block: int, doc: DocState, fixed: Mapping[str, str]
    ) -> Iterator[dict[str, str]]:
        """Assignments of the block's pattern variables in ``doc`` agreeing with ``fixed``."""
        out = self.blocks[block]
        assert out is not None
        names = out.variables
        assign: dict[str, str] = {}

        def walk(i: int) -> Iterator[dict[str, str]]:
            if i == len(names):
                yield dict(assign)
                return
            name = names[i]
            var = out.id_of(name)
            parent = out.parent_of(name)
            if parent is None:
                candidates: Sequence[str] = doc.nodes.get(var, ())
            else:
                index = doc.down.get((out.id_of(parent), var), {})
                candidates = index.get(assign[parent], ())
            if name in fixed:
                candidates = [fixed[name]] if fixed[name] in candidates else []
            for node in candidates:
                assign[name] = node
                yield from walk(i + 1)
            assign.pop(name, None)

        return walk(0)

    def first_nodes(self, block: int, doc: DocState, embedding: Mapping[str, str]) -> Sequence[str]:
        out = self.blocks[block]
        assert out is not None and out.first_id is not None
        root = out.variables[0]
        if out.first_is_root:
            return [embedding[root]]
        return doc.up.get((out.first_id, out.var_ids[0]), {}).get(embedding[root], ())

    def build_xml(
        self, docs: Sequence[DocState], join_nodes: Mapping[str, str], trees: DocumentTrees
    ) -> str:
        if self.select is None:
            nodes = []
            for index, doc in enumerate(docs):
                tree = trees.get(doc)
                nodes.append((tree, self._first_step_node(index, doc, join_nodes, tree)))
            if all("/" not in node for _, node in nodes):
                # Fast path: every part is an element; its serialisation inside <result>
                # equals its serialisation alone (lxml keeps the copied element's own
                # namespace declarations), so cached strings are concatenated.
                body = "".join(tree.serialized(node) for tree, node in nodes)
                return f'<result query="{self.qid}">{body}</result>'
            result = etree.Element("result", query=self.qid)
            for tree, node in nodes:
                tree.append(result, node)
        else:
            result = etree.Element("result", query=self.qid)
            for name in self.select:
                holder = etree.SubElement(result, "var", name=name)
                index = self.select_blocks[name]
                doc = docs[index]
                tree = trees.get(doc)
                if name in join_nodes:
                    node = join_nodes[name]
                else:
                    fixed = self._fixed(index, join_nodes)
                    node = min((e[name] for e in self.embeddings(index, doc, fixed)), key=tree.key)
                tree.append(holder, node)
        return str(etree.tostring(result, encoding="unicode"))

    def _fixed(self, block: int, join_nodes: Mapping[str, str]) -> dict[str, str]:
        out = self.blocks[block]
        assert out is not None
        return {n: join_nodes[n] for n in out.variables if n in join_nodes}

    def _first_step_node(
        self, block: int, doc: DocState, join_nodes: Mapping[str, str], tree: DocumentTree
    ) -> str:
        out = self.blocks[block]
        if out is None:
            return "0"
        fixed = self._fixed(block, join_nodes)
        key = (out.signature, tuple(sorted((out.id_of(n), node) for n, node in fixed.items())))
        cached = tree.first_steps.get(key)
        if cached is None:
            cached = self.first_step_node(block, doc, fixed, tree)
            tree.first_steps[key] = cached
        return cached

    def first_step_node(
        self, block: int, doc: DocState, fixed: Mapping[str, str], tree: DocumentTree
    ) -> str:
        """Block ``block``'s first-step node for ``SELECT *`` given its join nodes ``fixed``.

        Uncached: the deepest first-step node among the embeddings agreeing with
        ``fixed`` (the first in document order when nothing is fixed).
        """
        out = self.blocks[block]
        if out is None:
            return "0"
        if not out.variables:
            assert out.first_id is not None
            return min(doc.nodes.get(out.first_id, ()), key=tree.key)
        firsts = {
            n for e in self.embeddings(block, doc, fixed) for n in self.first_nodes(block, doc, e)
        }
        return max(firsts, key=tree.depth) if fixed else min(firsts, key=tree.key)
