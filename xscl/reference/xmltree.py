"""Safe XML parsing and the node model of one document (spec/XSCL.md section 1).

``parse_xml`` parses with lxml without entity resolution, network access or DTD
loading, and rejects documents larger than a byte limit or nested deeper than a
depth limit. libxml2 itself refuses nesting deeper than 256 elements when
``huge_tree`` is off, so the effective depth limit is ``min(max_depth, 256)``;
both cases are reported as "too deep".

``DocTree`` indexes a parsed document once: the XPath nodes the evaluator can
bind (elements, attributes, text nodes), their spec node ids, document order,
string values and the navigation the embedding code needs.

Decisions (documented for engine authors):

* Elements are numbered in pre-order from the root element = 0, counting only
  elements (comments, processing instructions and entity references do not count).
* Text nodes follow the XPath data model: every maximal run of character data
  between two sibling nodes is one text node. lxml already merges CDATA with the
  adjacent text, so in practice a text node is one non-empty ``text``/``tail``
  slot; comments, processing instructions and (unresolved) entity references
  split text. Whitespace-only runs are text nodes too. ``N/text()[k]`` is the
  k-th text child of element N, 1-based.
* Entity references are never resolved (``resolve_entities=False``). A document
  that still holds one after parsing (an entity declared in an internal DTD
  subset, the billion-laughs shape) is rejected as a whole, like Stage 1 does:
  its text would otherwise depend on whether a consumer expands entities.
* An attribute id is ``N/@qname`` with the prefix used in the document; when one
  namespace URI is bound to several prefixes in scope, the lexicographically
  smallest prefix is used (lxml does not record which one was written). The
  ``xml`` namespace is always written ``xml``.
* The string value of an element is the concatenation of all its descendant
  text nodes in document order (XPath 1.0); of an attribute, its value; of a
  text node, its text. ``normalize_value`` applies NFC then strips XML
  whitespace (space, tab, CR, LF) at both ends.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

from lxml import etree

from xscl.errors import XmlDocumentError

XML_NAMESPACE = "http://www.w3.org/XML/1998/namespace"
#: The largest document, in UTF-8 bytes (docs/language.md: 16 MiB); libxml2 without
#: ``huge_tree`` also refuses a text node or attribute value over 10,000,000 bytes,
#: which is the same fault (``XSCL-X002``).
DEFAULT_MAX_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_DEPTH = 1000
_XML_WHITESPACE = " \t\r\n"

NodeKind = Literal["element", "attribute", "text"]


def normalize_value(text: str) -> str:
    """Spec section 1 value normalisation: Unicode NFC, then strip XML whitespace."""
    return unicodedata.normalize("NFC", text).strip(_XML_WHITESPACE)


def _new_parser() -> etree.XMLParser:
    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        huge_tree=False,
        remove_blank_text=False,
    )


def parse_xml(
    xml: str, *, max_bytes: int = DEFAULT_MAX_BYTES, max_depth: int = DEFAULT_MAX_DEPTH
) -> etree._ElementTree:
    """Parse one document safely; raise ``XmlDocumentError`` when it is not acceptable.

    Its codes are the public ones (``XSCL-X001``-``X005``): the same document gets
    the same code here as in the engines, decided by this module's own checks.
    """
    size = len(xml.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise _rejected(
            "XSCL-X002", f"document is {size} bytes, over the limit of {max_bytes} bytes"
        )
    try:
        data = xml.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate (a JSON "\\ud800" escape)
        raise _rejected("XSCL-X004", f"text that is not Unicode: {exc}") from exc
    try:
        root = etree.fromstring(data, _new_parser())
    except etree.XMLSyntaxError as exc:
        if "Excessive depth" in str(exc):
            raise _rejected(
                "XSCL-X003", f"document nesting exceeds the parser's depth limit: {exc}"
            ) from exc
        if "Resource limit exceeded" in str(exc):
            raise _rejected(
                "XSCL-X002", f"a text node, attribute or name is over the parser's limit: {exc}"
            ) from exc
        raise _rejected("XSCL-X001", f"malformed XML: {exc}") from exc
    for node in root.iter(etree.Entity):
        raise _rejected("XSCL-X005", f"entity reference {node.text} is never expanded")
    depth = _max_depth(root)
    if depth > max_depth:
        raise _rejected(
            "XSCL-X003", f"document nesting depth {depth} exceeds the limit of {max_depth}"
        )
    return root.getroottree()


def _rejected(code: str, message: str) -> XmlDocumentError:
    return XmlDocumentError.from_code(code, message)


def _max_depth(root: etree._Element) -> int:
    deepest = 0
    stack = [(root, 1)]
    while stack:
        element, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in element if isinstance(child.tag, str))
    return deepest


@dataclass(eq=False)
class Node:
    """One bindable XPath node of a document. Identity is object identity within a DocTree."""

    kind: NodeKind
    node_id: str
    order: int
    depth: int
    element: etree._Element
    """The element itself, or the owner element (attribute) / parent element (text)."""
    local: str | None
    namespace: str | None
    raw_value: str
    """Attribute value or text of an attribute/text node; filled lazily for elements."""
    attr_key: str | None = None
    """Clark name (``{uri}local``) of an attribute, as lxml stores it."""
    text_index: int = 0
    """k of ``text()[k]`` for a text node."""
    attributes: list[Node] = field(default_factory=list)
    content: list[Node] = field(default_factory=list)
    """Child elements and text nodes in document order (elements only)."""
    subtree_end: int = 0
    """Pre-order index one past the last descendant element (elements only)."""
    index: int = -1
    """Pre-order element index (elements only)."""

    def __repr__(self) -> str:
        return f"Node({self.kind}, {self.node_id!r})"


class DocTree:
    """Index of one parsed document: nodes, ids, document order and string values."""

    def __init__(self, tree: etree._ElementTree) -> None:
        self.tree = tree
        self.root_element = tree.getroot()
        self.elements: list[Node] = []
        self.attribute_nodes: list[Node] = []
        self.text_nodes: list[Node] = []
        self._by_element: dict[etree._Element, Node] = {}
        self._string_values: dict[int, str] = {}
        self._order = 0
        self._build(self.root_element, 0)

    def _next_order(self) -> int:
        self._order += 1
        return self._order

    def _build(self, element: etree._Element, depth: int) -> Node:
        qname = etree.QName(element)
        node = Node(
            kind="element",
            node_id=str(len(self.elements)),
            order=self._next_order(),
            depth=depth,
            element=element,
            local=qname.localname,
            namespace=qname.namespace,
            raw_value="",
            index=len(self.elements),
        )
        self.elements.append(node)
        self._by_element[element] = node
        for key, value in element.attrib.items():
            akey = str(key)
            aname = etree.QName(akey)
            attr = Node(
                kind="attribute",
                node_id=f"{node.index}/@{_written_name(element, aname)}",
                order=self._next_order(),
                depth=depth + 1,
                element=element,
                local=aname.localname,
                namespace=aname.namespace,
                raw_value=str(value),
                attr_key=akey,
            )
            node.attributes.append(attr)
            self.attribute_nodes.append(attr)
        self._add_text(node, element.text, depth)
        for child in element:
            if isinstance(child.tag, str):
                node.content.append(self._build(child, depth + 1))
            self._add_text(node, child.tail, depth)
        node.subtree_end = len(self.elements)
        return node

    def _add_text(self, parent: Node, text: str | None, depth: int) -> None:
        if not text:
            return
        k = sum(1 for item in parent.content if item.kind == "text") + 1
        text_node = Node(
            kind="text",
            node_id=f"{parent.index}/text()[{k}]",
            order=self._next_order(),
            depth=depth + 1,
            element=parent.element,
            local=None,
            namespace=None,
            raw_value=text,
            text_index=k,
        )
        parent.content.append(text_node)
        self.text_nodes.append(text_node)

    @property
    def root(self) -> Node:
        return self.elements[0]

    def node_of(self, element: etree._Element) -> Node:
        return self._by_element[element]

    def child_elements(self, node: Node) -> Iterator[Node]:
        return (item for item in node.content if item.kind == "element")

    def child_texts(self, node: Node) -> Iterator[Node]:
        return (item for item in node.content if item.kind == "text")

    def descendant_elements(self, node: Node) -> list[Node]:
        """Elements strictly below ``node``, in document order."""
        return self.elements[node.index + 1 : node.subtree_end]

    def subtree_elements(self, node: Node) -> list[Node]:
        """``node`` and every element below it, in document order."""
        return self.elements[node.index : node.subtree_end]

    def string_value(self, node: Node) -> str:
        """XPath 1.0 string value (not normalised)."""
        if node.kind != "element":
            return node.raw_value
        cached = self._string_values.get(node.index)
        if cached is None:
            texts = sorted(
                (
                    item
                    for element in self.subtree_elements(node)
                    for item in element.content
                    if item.kind == "text"
                ),
                key=lambda item: item.order,
            )
            cached = "".join(item.raw_value for item in texts)
            self._string_values[node.index] = cached
        return cached

    def value(self, node: Node) -> str:
        """Normalised string value (NFC, outer XML whitespace stripped)."""
        return normalize_value(self.string_value(node))


def _written_name(element: etree._Element, name: etree.QName) -> str:
    """The attribute name as written: ``prefix:local`` or ``local``."""
    if name.namespace is None:
        return name.localname
    if name.namespace == XML_NAMESPACE:
        return f"xml:{name.localname}"
    prefixes = sorted(p for p, uri in element.nsmap.items() if uri == name.namespace and p)
    if prefixes:
        return f"{prefixes[0]}:{name.localname}"
    return name.localname
