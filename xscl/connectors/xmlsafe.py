"""The one safe lxml configuration the connectors parse untrusted XML with.

No entity resolution (billion laughs, external entities), no DTD loading, no network,
no ``huge_tree`` (so libxml2 keeps its built-in limits: element nesting depth 256 and
10 MB per text node), plus an explicit byte limit checked before parsing. CDATA
sections are kept as such so a ``raw`` item re-serializes close to how it was
published.
"""

from __future__ import annotations

import re

from lxml import etree

#: Largest input (bytes) a connector hands to a parser.
MAX_DOCUMENT_BYTES = 32 * 1024 * 1024
#: libxml2's nesting limit without ``huge_tree`` (documented, enforced by libxml2).
MAX_DEPTH = 256

_NOT_XML_CHAR = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def safe_parser(*, recover: bool = False) -> etree.XMLParser:
    """A fresh parser with the safe settings (parsers are not thread-safe: one per use)."""
    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,
        recover=recover,
        strip_cdata=False,
        collect_ids=False,
    )


def xml_text(value: str) -> str:
    """``value`` without the characters XML 1.0 cannot hold (control chars, lone surrogates)."""
    return _NOT_XML_CHAR.sub("", value)


def strip_xml_declaration(text: str) -> str:
    """``text`` without a leading ``<?xml ...?>`` (lxml rejects one in a ``str``)."""
    stripped = text.lstrip("\ufeff \t\r\n")
    if stripped.startswith("<?xml"):
        end = stripped.find("?>")
        if end >= 0:
            return stripped[end + 2 :]
    return text


def split_tag(tag: object) -> tuple[str, str]:
    """``(namespace, local name)`` of an lxml tag or attribute name; ``("", "")`` for
    comments and processing instructions. Unlike ``etree.QName`` it never raises on
    the odd names recover mode produces (``itunes:subtitle`` with no prefix bound)."""
    if not isinstance(tag, str):
        return "", ""
    if tag.startswith("{"):
        namespace, _, local = tag[1:].partition("}")
        return namespace, local
    return "", tag


def local_name(tag: object) -> str:
    return split_tag(tag)[1]
