"""feedparser entry -> the canonical ``normalized`` item of spec section 1.

Layout (elements in this order, no namespace, no whitespace between elements; an
element is present only when the value is known and non-empty, ``channel`` always)::

    <item>
      <title>text</title>
      <link>URL</link>
      <id>the item's guid / atom:id / rdf:about</id>
      <author>name (else e-mail)</author>          repeated, document order, no repeats
      <category>term (else label)</category>       repeated, document order, no repeats
      <summary>text or escaped HTML</summary>
      <content>text or escaped HTML</content>      the first content element
      <published>2024-01-31T12:00:00Z</published>  RFC 3339, UTC, whole seconds
      <updated>2024-01-31T12:00:00Z</updated>
      <channel><title>feed title</title><link>feed URL</link></channel>
    </item>

Values are what feedparser returns (``feedparser_call``: text read as the document
declares it; HTML in ``summary``/``content`` kept as escaped text, neither sanitized
nor with relative URIs inside it rewritten; links resolved against ``xml:base``). An
Atom entry without ``author`` inherits the feed's
authors (RFC 4287 4.2.1). Characters XML 1.0 cannot hold are dropped. Dates are
feedparser's ``*_parsed`` (UTC ``struct_time``, so sub-second digits are lost).
"""

from __future__ import annotations

import calendar
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from lxml import etree

from xscl.connectors.document import format_ts
from xscl.connectors.xmlsafe import xml_text

ITEM_CHILDREN = (
    "title",
    "link",
    "id",
    "author",
    "category",
    "summary",
    "content",
    "published",
    "updated",
    "channel",
)


@dataclass(frozen=True)
class NormalizedItem:
    """The fields of a normalized item (``None``/empty = absent)."""

    title: str | None = None
    link: str | None = None
    id: str | None = None
    authors: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    summary: str | None = None
    content: str | None = None
    published_micros: int | None = None
    updated_micros: int | None = None
    channel_title: str | None = None
    channel_link: str | None = None

    def to_xml(self) -> str:
        """The canonical ``<item>`` serialization (see the module docstring)."""
        item = etree.Element("item")
        _child(item, "title", self.title)
        _child(item, "link", self.link)
        _child(item, "id", self.id)
        for author in self.authors:
            _child(item, "author", author)
        for category in self.categories:
            _child(item, "category", category)
        _child(item, "summary", self.summary)
        _child(item, "content", self.content)
        if self.published_micros is not None:
            _child(item, "published", format_ts(self.published_micros))
        if self.updated_micros is not None:
            _child(item, "updated", format_ts(self.updated_micros))
        channel = etree.SubElement(item, "channel")
        _child(channel, "title", self.channel_title)
        _child(channel, "link", self.channel_link)
        return str(etree.tostring(item, encoding="unicode"))


def _child(parent: etree._Element, name: str, value: str | None) -> None:
    if value:
        cleaned = xml_text(value)
        if cleaned:
            etree.SubElement(parent, name).text = cleaned


def _text(value: object) -> str | None:
    if isinstance(value, str):
        stripped = value.strip()
        return stripped or None
    return None


def _unique(values: Iterable[str | None]) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for value in values:
        if value and value not in seen:
            seen[value] = None
    return tuple(seen)


def struct_time_micros(value: object) -> int | None:
    """UTC microseconds of a feedparser ``*_parsed`` value (None if absent/invalid)."""
    if not isinstance(value, (time.struct_time, tuple)) or len(value) < 6:
        return None
    try:
        return calendar.timegm((*tuple(value)[:6], 0, 0, 0)) * 1_000_000
    except (TypeError, ValueError, OverflowError):
        return None


def _own(entry: Mapping[str, Any], key: str) -> Any:
    """``entry[key]`` without feedparser's deprecated updated->published fallback."""
    return dict.get(entry, key) if isinstance(entry, dict) else entry.get(key)


def _people(entry: Mapping[str, Any]) -> tuple[str, ...]:
    names: list[str | None] = []
    for person in entry.get("authors") or ():
        if isinstance(person, Mapping):
            names.append(_text(person.get("name")) or _text(person.get("email")))
    if not any(names):
        names.append(_text(entry.get("author")))
    return _unique(names)


def normalize_entry(
    entry: Mapping[str, Any], feed: Mapping[str, Any], *, version: str = ""
) -> NormalizedItem:
    """The ``NormalizedItem`` of one feedparser entry within its feed."""
    authors = _people(entry)
    if not authors and version.startswith("atom"):
        authors = _people(feed)
    categories = _unique(
        _text(tag.get("term")) or _text(tag.get("label"))
        for tag in entry.get("tags") or ()
        if isinstance(tag, Mapping)
    )
    content: str | None = None
    for block in entry.get("content") or ():
        if isinstance(block, Mapping) and _text(block.get("value")):
            content = _text(block.get("value"))
            break
    return NormalizedItem(
        title=_text(entry.get("title")),
        link=_text(entry.get("link")),
        id=_text(entry.get("id")),
        authors=authors,
        categories=categories,
        summary=_text(entry.get("summary")),
        content=content,
        published_micros=struct_time_micros(entry.get("published_parsed")),
        updated_micros=struct_time_micros(_own(entry, "updated_parsed")),
        channel_title=_text(feed.get("title")),
        channel_link=_text(feed.get("link")),
    )
