"""Safe XML parsing for Stage 1.

lxml is configured so that no entity is ever expanded or fetched
(``resolve_entities=False``, ``load_dtd=False``, ``no_network=True``) and
libxml2's own safety limits stay on (``huge_tree=False``).  On top of that:

* documents larger than ``max_bytes`` (16 MiB of UTF-8, docs/language.md) are
  refused before parsing, and so is a text node or attribute value longer than
  libxml2's limit (10,000,000 bytes): both are ``XSCL-X002``;
* nesting deeper than ``max_depth`` is refused (libxml2 itself stops at 256
  levels while ``huge_tree`` is off, so larger limits have no effect);
* a document whose tree still holds an entity reference (an entity declared
  in a DTD, internal or external, or an undefined one under an external DTD
  subset) is refused: expanding it is exactly what billion-laughs and XXE
  attacks need, and leaving it out would silently change string values.
  Unused declarations are harmless and accepted.

Every refusal is an ``xscl.errors.XmlDocumentError`` (a ``Stage1Error``) with a stable
code, ``XSCL-X001``-``X005``.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

from lxml import etree

from xscl.errors import XmlDocumentError

#: libxml2's fixed depth limit when ``huge_tree`` is off.
LIBXML2_MAX_DEPTH = 256
#: The largest document, in UTF-8 bytes as delivered (docs/language.md, ``XSCL-X002``).
MAX_DOCUMENT_BYTES = 16 * 1024 * 1024

_DECLARED_ENCODING = re.compile(r"""^(\s*<\?xml[^>]*?\bencoding\s*=\s*)(["'])[^"']*\2""")
_ENCODING_ERRORS = ("encoding", "UTF-8", "Invalid bytes", "Char 0x", "not proper")


@dataclass(frozen=True)
class ParseLimits:
    """Size and depth limits for one document."""

    max_bytes: int = MAX_DOCUMENT_BYTES
    max_depth: int = LIBXML2_MAX_DEPTH


_local = threading.local()


def _parser() -> etree.XMLParser:
    """One parser per thread (lxml parsers must not be shared between threads)."""
    parser: etree.XMLParser | None = getattr(_local, "parser", None)
    if parser is None:
        parser = etree.XMLParser(
            resolve_entities=False,
            no_network=True,
            load_dtd=False,
            dtd_validation=False,
            attribute_defaults=False,
            huge_tree=False,
            collect_ids=False,
            strip_cdata=True,
            remove_comments=False,
            remove_pis=False,
        )
        _local.parser = parser
    return parser


def _as_bytes(xml: bytes | str) -> tuple[bytes, int]:
    """The bytes libxml2 parses and the document's size as delivered (its UTF-8 bytes)."""
    if isinstance(xml, bytes):
        return xml, len(xml)
    # A str is already decoded: re-encode as UTF-8 and make any declared
    # encoding say so, otherwise libxml2 would decode the bytes a second time.
    # The size is the delivered text's: the declaration's name is ASCII, so the
    # rewrite changes characters and bytes alike.
    rewritten = _DECLARED_ENCODING.sub(r"\1\2UTF-8\2", xml, count=1)
    data = rewritten.encode("utf-8", "surrogatepass")
    return data, len(data) - (len(rewritten) - len(xml))


def classify_syntax_error(message: str) -> str:
    """Map a libxml2 error message to a Stage 1 error code.

    >>> classify_syntax_error("Excessive depth in document: 256 use XML_PARSE_HUGE option")
    'XSCL-X003'
    >>> classify_syntax_error("Premature end of data in tag a line 1, line 1, column 4")
    'XSCL-X001'
    >>> classify_syntax_error("Resource limit exceeded: Text node too long, try XML_PARSE_HUGE")
    'XSCL-X002'
    """
    if "Excessive depth" in message:
        return "XSCL-X003"
    if "Resource limit exceeded" in message:  # a text node, attribute or name too long
        return "XSCL-X002"
    if "amplification" in message or "entity reference loop" in message:
        return "XSCL-X005"
    if any(marker in message for marker in _ENCODING_ERRORS):
        return "XSCL-X004"
    return "XSCL-X001"


def parse_document(xml: bytes | str, limits: ParseLimits = ParseLimits()) -> etree._Element:
    """Parse one document safely and return its root element.

    Raises ``XmlDocumentError`` for oversized, not well-formed, wrongly encoded
    or entity-bearing input.  Depth is checked by the caller's tree walk
    (:func:`check_depth` helps callers that do not walk).
    """
    data, size = _as_bytes(xml)
    if size > limits.max_bytes:
        raise XmlDocumentError.from_code(
            "XSCL-X002", f"document of {size} bytes exceeds {limits.max_bytes}"
        )
    try:
        root = etree.fromstring(data, _parser())
    except etree.XMLSyntaxError as exc:
        message = str(exc)
        raise XmlDocumentError.from_code(classify_syntax_error(message), message) from None
    except ValueError as exc:  # e.g. lxml refusing some inputs before libxml2 sees them
        raise XmlDocumentError.from_code("XSCL-X001", str(exc)) from None
    if root is None:  # pragma: no cover - lxml raises for empty input
        raise XmlDocumentError.from_code("XSCL-X001", "document has no root element")
    return root


def entity_error(node: etree._Entity) -> XmlDocumentError:
    """The error for an entity reference left in the tree."""
    return XmlDocumentError.from_code(
        "XSCL-X005", f"entity reference {node.text} is never expanded"
    )


def check_depth(root: etree._Element, limits: ParseLimits = ParseLimits()) -> None:
    """Raise if ``root`` nests elements deeper than ``limits.max_depth`` or holds entities."""
    stack: list[tuple[etree._Element, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limits.max_depth:
            raise XmlDocumentError.from_code("XSCL-X003", f"nesting deeper than {limits.max_depth}")
        for child in node:
            if isinstance(child, etree._Entity):
                raise entity_error(child)
            stack.append((child, depth + 1))
