"""What names a feed item for a person: its title and its own web link.

Read from the item's element (an RSS ``item``, an Atom ``entry``, an RDF item, or the
normalized ``item`` of ``connectors.normalize``): the Atom feeds' entries use them
(``results.feed_entry``), and the engine reads them once per document from its root
element (``engine.output.DocumentTree.item``), so an entry can name a document that
the result's XML does not copy (``SELECT x, ...``).

>>> from lxml import etree
>>> item = etree.fromstring("<item><title>Hi</title><link>https://a.example/1</link></item>")
>>> item_title(item), item_link(item)
('Hi', 'https://a.example/1')
"""

from __future__ import annotations

import html
import re

from lxml import etree

_RDF_ABOUT = "{http://www.w3.org/1999/02/22-rdf-syntax-ns#}about"
_URL = re.compile(r"https?://[^\s\x00-\x1f\x7f<>\"]+\Z")
_TAG = re.compile(r"<[^>]*>")


def is_web_url(text: str) -> bool:
    """Whether ``text`` is one absolute http(s) URL (the only links a feed ever gets)."""
    return _URL.match(text) is not None


def local_name(element: etree._Element) -> str:
    return etree.QName(element).localname if isinstance(element.tag, str) else ""


def element_text(element: etree._Element) -> str:
    """The element's string value with whitespace runs made one space."""
    return " ".join("".join(str(t) for t in element.itertext()).split())


def item_title(element: etree._Element) -> str | None:
    """An item's title as plain text (an Atom ``type="html"`` title without its tags)."""
    for child in element:
        if local_name(child) == "title":
            text = element_text(child)
            if child.get("type") == "html":
                text = " ".join(html.unescape(_TAG.sub(" ", text)).split())
            return text or None
    return None


def item_link(element: etree._Element) -> str | None:
    """An item's own http(s) link: Atom alternate, RSS link, permalink guid, rdf:about."""
    for child in element:
        name = local_name(child)
        if name == "link":
            href = child.get("href")
            if href is not None:
                if child.get("rel", "alternate") == "alternate" and is_web_url(href.strip()):
                    return href.strip()
            elif is_web_url(element_text(child)):
                return element_text(child)
    for child in element:
        permalink = local_name(child) == "guid" and child.get("isPermaLink", "true") != "false"
        if permalink and is_web_url(element_text(child)):
            return element_text(child)
    about = (element.get(_RDF_ABOUT) or "").strip()
    return about if is_web_url(about) else None
