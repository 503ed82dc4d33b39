"""Our normalized items (docs/language.md) beside other feed parsers' expected output.

``normalized_items`` reads a feed file the way ``xscl poll`` does (the ``normalized``
form) and gives each item's fields; ``gofeed_item`` and ``fastfeedparser_item`` read
the same fields from those projects' expected JSON. ``differing_fields`` compares
them field by field, only the fields the peer states, in a form both can be held to:
text stripped, empty values absent (the normalized item has no empty elements),
authors and categories as sorted lists (fastfeedparser sorts its tags), times as UTC
to the second (the normalized item's precision).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lxml import etree

from xscl.connectors.feeds import parse_feed

FIELDS = (
    "title", "link", "id", "authors", "categories", "summary", "content", "published",
    "updated",
)  # fmt: skip
Item = dict[str, Any]


def normalized_items(path: Path) -> tuple[list[Item], Any]:
    """Each normalized item of the feed file at ``path`` (authors and categories in
    document order), and the ``FeedResult``."""
    result = parse_feed(
        path.read_bytes(), source=str(path), stream="S", form="normalized", first_seen_micros=0
    )
    items = []
    for document in result.documents:
        item = etree.fromstring(document.xml)
        fields: Item = {name: item.findtext(name) or "" for name in FIELDS}
        fields["authors"] = [e.text or "" for e in item.findall("author")]
        fields["categories"] = [e.text or "" for e in item.findall("category")]
        items.append(fields)
    return items, result


def utc_second(value: str | None) -> str:
    """An ISO 8601 time as the normalized item writes it (``2024-01-31T12:00:00Z``)."""
    if not value:
        return ""
    moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _names(values: Sequence[str | None]) -> list[str]:
    return sorted(v.strip() for v in values if v and v.strip())


def gofeed_item(entry: Mapping[str, Any], kind: str) -> Item:
    """The fields a gofeed ``rss.Item`` or ``atom.Entry`` (its test JSON) states."""
    fields: Item = {}
    if kind == "rss":
        renamed = {"title": "title", "link": "link", "description": "summary", "content": "content"}
        fields.update({ours: entry[theirs] for theirs, ours in renamed.items() if theirs in entry})
        if "guid" in entry:
            fields["id"] = entry["guid"].get("value", "")
        if "author" in entry:
            fields["authors"] = _names([entry["author"]])
        if "categories" in entry:
            fields["categories"] = _names([c.get("value") for c in entry["categories"]])
        if "pubDateParsed" in entry:
            fields["published"] = utc_second(entry["pubDateParsed"])
        return fields
    for name in ("title", "summary", "id"):
        if name in entry:
            fields[name] = entry[name]
    if "content" in entry:
        content = entry["content"]
        fields["content"] = content if isinstance(content, str) else content.get("value", "")
    if "links" in entry:
        links = entry["links"]
        alternate = [k.get("href", "") for k in links if k.get("rel", "alternate") == "alternate"]
        fields["link"] = alternate[0] if alternate else ""
    if "authors" in entry:
        fields["authors"] = _names([a.get("name") or a.get("email") for a in entry["authors"]])
    if "categories" in entry:
        terms = [c.get("term") or c.get("label") for c in entry["categories"]]
        fields["categories"] = _names(terms)
    for name in ("published", "updated"):
        if f"{name}Parsed" in entry:
            fields[name] = utc_second(entry[f"{name}Parsed"])
    return fields


def fastfeedparser_item(entry: Mapping[str, Any]) -> Item:
    """The fields of a fastfeedparser entry (its expected ``.json``): all of them."""
    content = entry.get("content") or [{}]
    return {
        "title": entry.get("title") or "",
        "link": entry.get("link") or "",
        "id": entry.get("id") or "",
        "authors": _names([a.get("name") or a.get("email") for a in entry.get("authors") or []]),
        "categories": _names([t.get("term") or t.get("label") for t in entry.get("tags") or []]),
        "summary": entry.get("description") or "",
        "content": content[0].get("value") or "",
        "published": utc_second(entry.get("published")),
        "updated": utc_second(entry.get("updated")),
    }


def differing_fields(expected: Sequence[Item], ours: Sequence[Item]) -> set[str]:
    """The fields on which some item differs; ``items`` when the counts differ."""
    if len(expected) != len(ours):
        return {"items"}
    differing = set()
    for want, have in zip(expected, ours, strict=True):
        for name, value in want.items():
            mine = sorted(have[name]) if isinstance(have[name], list) else have[name]
            if (value.strip() if isinstance(value, str) else value) != mine:
                differing.add(name)
    return differing
