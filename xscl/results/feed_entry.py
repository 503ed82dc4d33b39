"""What a person reads in a result's Atom entry: a title, links to click, a summary.

A result record (spec section 4) names its documents and join values; its XML holds
a copy of each block's element (``SELECT *``) or the selected variables (``SELECT
x, y``). From them, for a feed reader:

* **title**: the distinct join values, then each document's title (an RSS/Atom
  item's ``title``; the selected variables' values for ``SELECT x, y``; else
  ``stream/docid``), joined by arrows in block order::

      CVE-2026-41122: Advisory ACME-2026-07: TLS bypass → Acme patches TLS flaw

* **link** to the first document, **related** links to the others: an item's own
  link (Atom ``link`` ``alternate``, RSS ``link`` or permalink ``guid``, RDF
  ``rdf:about``, else an http(s) docid), else a ``urn:`` (``urn:xscl:result:ID`` for
  a result of a PUBLISHed stream: the id of its entry in the publisher's feed);
* **html**: the join values, the selected variables and one line per document
  (its title, linked; its stream and time), escaped.

A document the result's XML does not copy (``SELECT x, y``, or a block whose
element is below the item) is named by its item's title and link when the engine
that built the record read them (``ResultRecord.items``: the join groups render
entries from the record objects); a record read back from its JSON line has no such
field and falls back to ``stream/docid``.

Only http(s) URLs are ever linked. A result whose XML cannot be read still gets an
entry, from its record's fields alone.

>>> record = {
...     "query": "Q", "result_id": "r1", "values": {"cve": "CVE-1", "term": "CVE-1"},
...     "docs": [{"stream": "vendor", "docid": "a7", "ts": "2026-11-02T08:00:00Z"},
...              {"stream": "news", "docid": "n1", "ts": "2026-11-03T07:15:00Z"}],
...     "xml": '<result query="Q"><item><title>Advisory 7</title>'
...            '<link>https://acme.example/7</link></item>'
...            '<entry xmlns="http://www.w3.org/2005/Atom"><title>Acme patches</title>'
...            '<link href="https://news.example/p"/></entry></result>'}
>>> text = entry_text(record)
>>> text.title
'CVE-1: Advisory 7 → Acme patches'
>>> text.link, text.related
('https://acme.example/7', ('https://news.example/p',))
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from lxml import etree

from xscl.connectors.item_label import element_text, is_web_url, item_link, item_title

#: Longest label of one document in a title (longer ones end with an ellipsis).
MAX_LABEL = 120


@dataclass(frozen=True)
class EntryText:
    """The readable fields of one entry (plain text; ``html`` is an HTML fragment)."""

    title: str
    #: the entry's main link (None: nothing a reader could open, no link element)
    link: str | None
    related: tuple[str, ...]
    html: str


@dataclass(frozen=True)
class _Item:
    """One document of a result as a reader sees it."""

    stream: str
    docid: str
    ts: str
    title: str | None
    link: str | None
    #: the document is a result of a PUBLISHed stream (its docid is a result id)
    published: bool = False

    @property
    def label(self) -> str:
        return _shorten(self.title or f"{self.stream}/{self.docid}")

    @property
    def href(self) -> str:
        if self.link is not None:
            return self.link
        if self.published:
            return f"urn:xscl:result:{quote(self.docid, safe='')}"
        return f"urn:xscl:doc:{quote(self.stream, safe='')}:{quote(self.docid, safe='')}"


#: Per document of a result, its item's (title, link) as the engine read them.
DocumentItems = Sequence[tuple[str | None, str | None]]


def entry_text(record: Mapping[str, Any], items: DocumentItems | None = None) -> EntryText:
    """The title, links and HTML summary of a result record (see the module docstring);
    ``items``: each document's (title, link) from its root element, when known."""
    docs: Sequence[Mapping[str, Any]] = record["docs"]
    values: Mapping[str, str] = record.get("values") or {}
    root = _parse(str(record.get("xml", "")))
    children = [] if root is None else [c for c in root if isinstance(c.tag, str)]
    selected: list[tuple[str, str]] = []
    if children and all(c.tag == "var" and c.get("name") for c in children):
        selected = [
            (str(c.get("name")), element_text(c)) for c in children if c.get("name") not in values
        ]
        children = []
    if len(children) != len(docs):
        children = []
    if items is not None and len(items) != len(docs):
        items = None
    shown = [
        _item(doc, children[i] if children else None, items[i] if items else (None, None))
        for i, doc in enumerate(docs)
    ]
    joined = _distinct(v for v in values.values() if v)
    labels = [_shorten(text) for _name, text in selected if text] or [i.label for i in shown]
    title = " → ".join(labels)
    if joined:
        title = f"{', '.join(_shorten(v) for v in joined)}: {title}"
    return EntryText(
        title,
        shown[0].href if shown else f"urn:xscl:result:{record.get('result_id', '')}",
        tuple(item.href for item in shown[1:]),
        _summary(values, selected, shown),
    )


def _parse(xml: str) -> etree._Element | None:
    parser = etree.XMLParser(
        resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False
    )
    try:
        return etree.fromstring(xml.encode("utf-8", "replace"), parser)
    except (etree.XMLSyntaxError, ValueError):
        return None


def _item(
    doc: Mapping[str, Any], element: etree._Element | None, known: tuple[str | None, str | None]
) -> _Item:
    """One document: from its element in the result's XML, else (and for what that
    element lacks) from ``known``, its item's (title, link) as the engine read them."""
    stream, docid, ts = str(doc["stream"]), str(doc["docid"]), str(doc["ts"])
    title, link = known
    if link is None and is_web_url(docid):
        link = docid
    if element is None:
        return _Item(stream, docid, ts, title, link)
    if element.tag == "result" and element.get("query") is not None:
        parts = [t for t in (item_title(c) for c in element if isinstance(c.tag, str)) if t]
        return _Item(stream, docid, ts, " + ".join(parts) or None, None, published=True)
    return _Item(stream, docid, ts, item_title(element) or title, item_link(element) or link)


def _shorten(text: str) -> str:
    return text if len(text) <= MAX_LABEL else text[: MAX_LABEL - 1].rstrip() + "…"


def _distinct(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(values))


def _summary(
    values: Mapping[str, str], selected: Sequence[tuple[str, str]], items: Sequence[_Item]
) -> str:
    """The HTML body: join values, selected variables, then one line per document."""
    esc = html.escape
    parts: list[str] = []
    by_value: dict[str, list[str]] = {}
    for name, value in values.items():
        by_value.setdefault(value, []).append(name)
    if by_value:
        pairs = "; ".join(
            f"{esc(', '.join(names))} = <b>{esc(value)}</b>" for value, names in by_value.items()
        )
        parts.append(f"<p>Joined on {pairs}</p>")
    parts.extend(f"<p>{esc(name)}: {esc(text)}</p>" for name, text in selected)
    lines = []
    for item in items:
        label = esc(item.title or f"{item.stream}/{item.docid}")
        if item.href.startswith(("http://", "https://")):
            label = f'<a href="{esc(item.href)}">{label}</a>'
        when = item.ts.replace("T", " ").replace("Z", " UTC")
        lines.append(f"<li>{label}<br/><small>{esc(item.stream)} · {esc(when)}</small></li>")
    parts.append(f"<ul>{''.join(lines)}</ul>")
    return "\n".join(parts)


def cel_entry_text(record: Mapping[str, Any]) -> EntryText:
    """The entry of a CEL result record (docs/cel.md 5.2): its attributes and interval.

    A CEL result names no documents, only its attributes (for an event of a
    PUBLISHed XSCL stream: the result's join and SELECTed values, ``events.from_xscl``).
    The documents' links it carries are attributes holding an http(s) URL (a query that
    SELECTs an item's ``link``): the first is the entry's link, the others ``related``.
    Without one the entry has no link (its id, ``urn:xscl:cel:ID``, names the record).

    >>> text = cel_entry_text({"query": "x", "stream": None, "start": "2024-01-01T10:00:00Z",
    ...     "end": "2024-01-01T11:00:00Z", "attrs": {"author": "ann", "n": 3}, "id": "f00"})
    >>> text.title, text.link
    ('author = ann, n = 3', None)
    >>> text = cel_entry_text({"query": "x", "stream": None, "start": "2024-01-01T10:00:00Z",
    ...     "end": "2024-01-01T11:00:00Z", "attrs": {"l1": "https://a.example/1", "n": 3,
    ...     "l2": "https://b.example/2", "l3": "https://a.example/1"}, "id": "f00"})
    >>> text.link, text.related
    ('https://a.example/1', ('https://b.example/2',))
    """
    attrs: Mapping[str, Any] = record.get("attrs") or {}
    shown = [(name, "null" if value is None else str(value)) for name, value in attrs.items()]
    title = _shorten(", ".join(f"{name} = {value}" for name, value in shown)) or str(record["id"])
    links = _distinct(value.strip() for _name, value in shown if is_web_url(value.strip()))
    esc = html.escape

    def row(name: str, value: str) -> str:
        if is_web_url(value.strip()):
            return f'<li>{esc(name)}: <a href="{esc(value.strip())}">{esc(value)}</a></li>'
        return f"<li>{esc(name)}: <b>{esc(value)}</b></li>"

    rows = "".join(row(name, value) for name, value in shown)
    when = f"{record['start']} – {record['end']}".replace("T", " ").replace("Z", " UTC")
    return EntryText(
        title,
        links[0] if links else None,
        tuple(links[1:]),
        f"<ul>{rows}</ul>\n<p><small>{esc(when)}</small></p>",
    )
