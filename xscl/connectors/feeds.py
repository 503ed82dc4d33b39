"""Feed bytes -> documents: one per item/entry, in the ``raw`` or ``normalized`` form.

RSS 0.9x, 1.0 (RDF), 2.0 and Atom 0.3/1.0 are read through feedparser (one call
path, ``feedparser_call.feedparser_parse``), which also recovers items from broken
("bozo") feeds.
The ``raw`` form is the item element as published: it is extracted from the
original bytes with lxml (strict first, then recover mode, then re-decoded with the
encoding feedparser detected) and serialized with its in-scope namespace
declarations. Raw elements are paired with feedparser entries by position when the
counts agree, else by id/link. An element lxml recovers that feedparser lost is
parsed on its own (wrapped in a minimal feed) so it is kept too.

Rules (spec section 1, made precise here):

* **docid**: the entry's id (RSS ``guid``, Atom ``id``, RDF ``rdf:about``), else its
  link, else ``"sha256:" + hex(SHA-256(UTF-8 of source + "\\n" + title + "\\n" +
  content-or-summary))`` where ``source`` is the feed URL or file path. Both forms
  get the same docid, so switching form never re-delivers an item.
* **ts**: the entry's published time, else its updated time, else
  ``first_seen_micros`` (passed in by the caller, so it is deterministic in tests).
* **Bozo feeds**: every item that can be recovered is emitted; every entry that
  cannot is a ``DeadLetter`` (``XSCL-C011``); a document with nothing recoverable is
  one ``XSCL-C010`` dead letter. ``FeedResult`` counts all of it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from lxml import etree

from xscl.connectors.dead_letters import DeadLetter
from xscl.connectors.document import Document, check_stream_name
from xscl.connectors.feedparser_call import feedparser_parse
from xscl.connectors.normalize import normalize_entry
from xscl.connectors.xmlsafe import (
    MAX_DOCUMENT_BYTES,
    local_name,
    safe_parser,
    split_tag,
    strip_xml_declaration,
)
from xscl.errors import DocumentTooLargeError, FeedParseError, ItemRecoveryError

FeedForm = Literal["raw", "normalized"]
FORMS: tuple[FeedForm, ...] = ("raw", "normalized")

_ATOM_NS = {"http://www.w3.org/2005/Atom", "http://purl.org/atom/ns#", ""}
_RSS_NS = {
    "",
    "http://purl.org/rss/1.0/",
    "http://my.netscape.com/rdf/simple/0.9/",
    "http://backend.userland.com/rss2",
    "http://backend.userland.com/rss",
    _RSS11_NS := "http://purl.org/net/rss1.1#",
}
#: RSS 1.1's root, which feedparser does not know: its version is said here.
_RSS11_CHANNEL = f"{{{_RSS11_NS}}}Channel"
_RDF_ABOUT = "{http://www.w3.org/1999/02/22-rdf-syntax-ns#}about"


@dataclass
class FeedResult:
    """Documents and counts of one feed document."""

    source: str
    documents: list[Document] = field(default_factory=list)
    dead_letters: list[DeadLetter] = field(default_factory=list)
    version: str = ""
    bozo: bool = False
    bozo_reason: str | None = None
    #: the bytes parse as XML with the strict (non-recovering) safe parser
    well_formed: bool = False
    #: entries feedparser recovered / item elements lxml recovered
    entries: int = 0
    raw_items: int = 0

    @property
    def recovered(self) -> int:
        return len(self.documents)

    @property
    def failed(self) -> int:
        return len(self.dead_letters)


def item_docid(
    *, item_id: str | None, link: str | None, source: str, title: str, content: str
) -> str:
    """The docid rule of the module docstring."""
    if item_id and item_id.strip():
        return item_id.strip()
    if link and link.strip():
        return link.strip()
    digest = hashlib.sha256(f"{source}\n{title}\n{content}".encode("utf-8", "surrogatepass"))
    return "sha256:" + digest.hexdigest()


def _is_item(element: etree._Element) -> bool:
    if not isinstance(element.tag, str):
        return False
    namespace, local = split_tag(element.tag)
    return (local == "item" and namespace in _RSS_NS) or (
        local == "entry" and namespace in _ATOM_NS
    )


def find_item_elements(root: etree._Element | None) -> list[etree._Element]:
    """Top-most item/entry elements in document order (a lone ``<entry>`` root counts)."""
    if root is None:
        return []
    if _is_item(root):
        return [root]
    found: list[etree._Element] = []
    stack = [iter(root)]
    while stack:
        child = next(stack[-1], None)
        if child is None:
            stack.pop()
        elif _is_item(child):
            found.append(child)
        elif isinstance(child.tag, str):
            stack.append(iter(child))
    return found


def _parse_root(source: bytes | str, *, recover: bool) -> etree._Element | None:
    try:
        if isinstance(source, str):
            return etree.fromstring(strip_xml_declaration(source), safe_parser(recover=recover))
        return etree.fromstring(source, safe_parser(recover=recover))
    except (etree.XMLSyntaxError, ValueError):
        return None


def extract_raw_items(
    data: bytes, encoding: str | None
) -> tuple[list[etree._Element], bool, str]:
    """Item elements of the original bytes, whether those bytes are well-formed, and
    the root element's tag (Clark notation; empty when nothing parsed)."""
    root = _parse_root(data, recover=False)
    well_formed = root is not None
    if root is None:
        root = _parse_root(data, recover=True)
    items = find_item_elements(root)
    if not well_formed and encoding:
        try:
            text = data.decode(encoding, errors="replace")
        except LookupError:
            text = None
        if text is not None:
            redone = _parse_root(text, recover=False)
            if redone is None:
                redone = _parse_root(text, recover=True)
            again = find_item_elements(redone)
            if len(again) > len(items):
                items = again
    tag = root.tag if root is not None and isinstance(root.tag, str) else ""
    return items, well_formed, tag


def _first_text(element: etree._Element, names: tuple[str, ...]) -> str | None:
    for child in element:
        if local_name(child.tag) in names:
            text = (child.text or "").strip()
            if text:
                return text
    return None


def _raw_keys(element: etree._Element) -> list[str]:
    """Strings feedparser may use as the entry's id or link, to pair it with its entry."""
    keys: list[str] = []
    ident = _first_text(element, ("guid", "id"))
    if ident:
        keys.append(ident)
    about = element.get(_RDF_ABOUT)
    if about:
        keys.append(about.strip())
    for child in element:
        if local_name(child.tag) == "link":
            href = child.get("href") or (child.text or "")
            if href.strip() and child.get("rel", "alternate") == "alternate":
                keys.append(href.strip())
    return keys


def _pair(entries: list[Any], raws: list[etree._Element]) -> tuple[list[int | None], list[int]]:
    """For each entry the index of its raw element (or None); raw indexes left over."""
    if len(entries) == len(raws):
        return list(range(len(raws))), []
    by_key: dict[str, int] = {}
    for index, element in enumerate(raws):
        for key in _raw_keys(element):
            by_key.setdefault(key, index)
    used: set[int] = set()
    pairs: list[int | None] = []
    for entry in entries:
        match = None
        for key in (entry.get("id"), entry.get("link")):
            if isinstance(key, str) and key.strip() in by_key and by_key[key.strip()] not in used:
                match = by_key[key.strip()]
                break
        if match is not None:
            used.add(match)
        pairs.append(match)
    return pairs, [i for i in range(len(raws)) if i not in used]


def _serialize(element: etree._Element) -> str:
    return str(etree.tostring(element, encoding="unicode", with_tail=False))


def _entry_of_raw(element: etree._Element) -> Any | None:
    """A feedparser entry for an element feedparser lost (the element parsed alone)."""
    text = _serialize(element)
    if local_name(element.tag) == "entry":
        wrapper = f'<feed xmlns="http://www.w3.org/2005/Atom">{text}</feed>'
    else:
        wrapper = f'<rss version="2.0"><channel>{text}</channel></rss>'
    parsed = feedparser_parse(wrapper.encode("utf-8"))
    return parsed.entries[0] if parsed.entries else None


def parse_feed(
    data: bytes,
    *,
    source: str,
    stream: str,
    form: FeedForm = "normalized",
    first_seen_micros: int,
    content_type: str | None = None,
    base_url: str | None = None,
) -> FeedResult:
    """Every recoverable item of one feed document as a ``Document`` of ``stream``."""
    check_stream_name(stream)
    if form not in FORMS:
        raise ValueError(f"form must be one of {FORMS}, got {form!r}")
    result = FeedResult(source)
    if len(data) > MAX_DOCUMENT_BYTES:
        too_large = DocumentTooLargeError(
            f"feed is {len(data)} bytes, above the {MAX_DOCUMENT_BYTES} limit", source=source
        )
        result.dead_letters.append(DeadLetter.from_error(too_large, stream=stream))
        return result
    try:
        parsed = feedparser_parse(data, content_type=content_type, base_url=base_url)
    except Exception as exc:  # feedparser should not raise; never let one feed stop the rest
        error = FeedParseError(f"feedparser failed: {exc!r}", source=source)
        result.dead_letters.append(DeadLetter.from_error(error, stream=stream))
        return result
    result.version = str(parsed.get("version") or "")
    result.bozo = bool(parsed.get("bozo"))
    if result.bozo:
        result.bozo_reason = repr(parsed.get("bozo_exception"))
    entries = list(parsed.entries)
    raws, result.well_formed, root_tag = extract_raw_items(data, parsed.get("encoding"))
    if not result.version and root_tag == _RSS11_CHANNEL:
        result.version = "rss11"
    result.entries, result.raw_items = len(entries), len(raws)
    pairs, leftover = _pair(entries, raws)
    work: list[tuple[Any, etree._Element | None]] = [
        (entry, raws[index] if index is not None else None)
        for entry, index in zip(entries, pairs, strict=True)
    ]
    for index in leftover:
        lost = _entry_of_raw(raws[index])
        if lost is not None:
            work.append((lost, raws[index]))
    feed: Mapping[str, Any] = parsed.get("feed") or {}
    for number, (entry, element) in enumerate(work, start=1):
        item = normalize_entry(entry, feed, version=result.version)
        docid = item_docid(
            item_id=item.id,
            link=item.link,
            source=source,
            title=item.title or "",
            content=item.content or item.summary or "",
        )
        ts = item.published_micros
        if ts is None:
            ts = item.updated_micros
        if ts is None:
            ts = first_seen_micros
        if form == "raw":
            if element is None:
                lost_error = ItemRecoveryError(
                    "feedparser recovered this entry but its element could not be "
                    "extracted from the original bytes",
                    source=source,
                    line=number,
                )
                result.dead_letters.append(
                    DeadLetter.from_error(lost_error, stream=stream, docid=docid)
                )
                continue
            xml = _serialize(element)
        else:
            xml = item.to_xml()
        result.documents.append(
            Document(stream, docid, ts, xml, source, {"form": form, "feed_version": result.version})
        )
    if not work and (result.bozo or not result.version):
        reason = result.bozo_reason or "not a recognised RSS/Atom feed"
        empty = FeedParseError(f"no item could be recovered: {reason}", source=source)
        result.dead_letters.append(DeadLetter.from_error(empty, stream=stream))
    return result
