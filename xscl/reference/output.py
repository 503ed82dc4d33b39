"""Output XML of a result (spec/XSCL.md section 3.4).

* ``SELECT *``: ``<result query="ID">`` holding, for each block in order, a copy
  of the node the block's first step matched: among the block's embeddings
  consistent with the result (same nodes for the block's join variables), the
  nearest (deepest) one, which is an ancestor-or-self of all the join-variable
  nodes; for a block without join variables, the first in document order; for a
  block without steps, the root element.
* ``SELECT x, y``: one ``<var name="x">`` per listed variable holding a copy of
  the bound node; a non-join variable takes its first binding in document order
  among the embeddings consistent with the result.
* Elements are deep-copied without their tail; an attribute or text node
  becomes text (its raw, unnormalised value). Should a first step match an
  attribute or text node (``S//@id``), it is likewise output as text.
* Serialised with ``lxml.etree.tostring(..., encoding="unicode")``: no XML
  declaration, namespace declarations as lxml places them, deterministic.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

from lxml import etree

from xscl.reference.embed import Embedding
from xscl.reference.xmltree import Node


def _append_node(parent: etree._Element, node: Node) -> None:
    if node.kind == "element":
        clone = copy.deepcopy(node.element)
        clone.tail = None
        parent.append(clone)
        return
    text = node.raw_value
    if len(parent):
        last = parent[-1]
        last.tail = (last.tail or "") + text
    else:
        parent.text = (parent.text or "") + text


def first_step_node(embeddings: Sequence[Embedding], has_join_vars: bool) -> Node:
    """The node a block contributes to ``SELECT *`` among consistent embeddings."""
    if has_join_vars:
        return max((first for first, _ in embeddings), key=lambda node: node.depth)
    return min((first for first, _ in embeddings), key=lambda node: node.order)


def first_binding(embeddings: Sequence[Embedding], var: str) -> Node:
    """The first node in document order bound to ``var`` among ``embeddings``."""
    return min((dict(bindings)[var] for _, bindings in embeddings), key=lambda n: n.order)


def build_select_all(query_id: str, nodes: Sequence[Node]) -> str:
    result = etree.Element("result", query=query_id)
    for node in nodes:
        _append_node(result, node)
    return etree.tostring(result, encoding="unicode")


def build_select_vars(query_id: str, bound: Sequence[tuple[str, Node]]) -> str:
    result = etree.Element("result", query=query_id)
    for var, node in bound:
        holder = etree.SubElement(result, "var", name=var)
        _append_node(holder, node)
    return etree.tostring(result, encoding="unicode")
