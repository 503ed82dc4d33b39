"""Atom feed sink: one feed file per query, so a person can follow a subscription.

Each result record (spec section 4) becomes one entry (RFC 4287):

* ``id`` = ``urn:xscl:result:<result_id>`` (stable: re-adding a result replaces its
  entry, so replays never duplicate an entry);
* ``updated`` = the result's end time (the latest timestamp of its documents);
* ``title``, a ``link`` to the first document, a ``link rel="related"`` per other
  document and an HTML ``content`` (join values, each document's title, stream and
  time), made by ``feed_entry``. A CEL result's links are its attributes' http(s)
  URLs; it has none when none of them is one.

An entry does not carry the result's XML (a ``SELECT *`` result copies its documents'
elements, whole articles: one feed of the default 200 entries was ~12 MB): a program
reads the full record from the committed results by the result id its entry id holds
(``xscl.results.read``).

The feed has the query's text as ``subtitle`` (when the writer knows the
subscriptions), a ``link rel="self"`` and the newest entry's ``updated``. A feed keeps
the latest ``max_entries`` results (default 200), newest first (by end time, then
result id), and is replaced atomically (temporary file, ``fsync``, ``rename``), so a
feed reader polling the file never sees half a feed. Feeds live in
``<directory>/<query_id>.atom``.

It runs in the job's output tasks (``job.sink``), once per micro-batch: ``add`` per
result (or ``add_entry`` per entry a join group rendered already, with
``EntryRenderer``), then one ``flush``; or ``write_feeds_from_results`` over a
committed results directory. A flush redoes no work it can avoid:

* entries are rendered straight to UTF-8 bytes by templates, fields escaped as lxml
  escapes them. Characters XML 1.0 forbids become U+FFFD;
* each feed's current entries stay in memory as ``(updated, id, bytes)``, so a flush
  renders only the batch's new entries. The cache is an LRU over feeds bounded by
  total bytes (``cache_bytes``). A feed not in it (a new writer after a restart,
  evicted, or changed on disk since our write, seen with one ``stat``) is read back
  once: sliced by ``own_entries`` when this writer wrote it, else parsed with lxml
  (its entries kept as they are); an unreadable feed is rebuilt with a logged warning;
* a flush that would write the same bytes again (a replay) leaves the file alone.

docs/benchmarks.md ("Atom feeds") has the measurements behind these choices.
"""

from __future__ import annotations

import heapq
import logging
import os
import re
from collections import OrderedDict, defaultdict, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import quote

from lxml import etree

from xscl.connectors.document import format_ts, parse_ts
from xscl.connectors.durable import fsync_dir, write_atomically
from xscl.lang.ast import Query
from xscl.results.feed_entry import DocumentItems, EntryText, cel_entry_text, entry_text
from xscl.results.read import read_results

if TYPE_CHECKING:
    from xscl.engine.output import ResultRecord
    from xscl.service.subscriptions import SubscriptionEvent

ATOM_NS = "http://www.w3.org/2005/Atom"
DEFAULT_MAX_ENTRIES = 200
#: Default bound of the rendered entries kept in memory, over all feeds.
DEFAULT_CACHE_BYTES = 256 * 1024 * 1024
#: Default number of threads writing and fsync-ing feed files during a flush.
DEFAULT_IO_THREADS = 4
#: Largest existing feed file read back when merging (larger ones are rebuilt).
MAX_FEED_BYTES = 64 * 1024 * 1024
_A = f"{{{ATOM_NS}}}"
_LOG = logging.getLogger(__name__)
#: Characters outside XML 1.0's ``Char`` production.
_NOT_XML_CHAR = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
#: Every byte value that may appear in the UTF-8 of XML 1.0 text.
_XML_BYTES = bytes(b for b in range(256) if b >= 0x20 or b in b"\t\n\r")
#: Bookkeeping charged per cached entry on top of its bytes (tuple, id, dict slot).
_ENTRY_OVERHEAD = 256


def xml_safe(text: str) -> str:
    """``text`` with each character XML 1.0 forbids replaced by U+FFFD.

    lxml refuses them (it raised ``ValueError``); one such character in one result
    must not stop a whole micro-batch's feeds.
    """
    return _NOT_XML_CHAR.sub("\ufffd", text)


def _utf8(text: str) -> bytes:
    """UTF-8 of ``xml_safe(text)``; the common all-valid case skips the regex."""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate
        return xml_safe(text).encode("utf-8")
    if data.translate(None, _XML_BYTES) or "\ufffe" in text or "\uffff" in text:
        return xml_safe(text).encode("utf-8")
    return data


def escape_text(text: str) -> bytes:
    """Character data as lxml writes it: ``& < >`` escaped, ``\\r`` as ``&#13;``.

    The ``\\r`` reference survives parsing (a literal one is read back as ``\\n``).
    """
    return (
        _utf8(text)
        .replace(b"&", b"&amp;")
        .replace(b"<", b"&lt;")
        .replace(b">", b"&gt;")
        .replace(b"\r", b"&#13;")
    )


def escape_attribute(text: str) -> bytes:
    """A double-quoted attribute value as lxml writes it (tabs and newlines kept)."""
    return (
        escape_text(text).replace(b'"', b"&quot;").replace(b"\t", b"&#9;").replace(b"\n", b"&#10;")
    )


class FeedEntry(NamedTuple):
    """One rendered entry; as a tuple it orders oldest first by (updated, id)."""

    updated_micros: int
    entry_id: str
    data: bytes


def result_end_micros(record: Mapping[str, Any]) -> int:
    """The end time of a result: the latest timestamp of its documents (a CEL result's end)."""
    if "docs" not in record:
        return parse_ts(record["end"])
    return max(parse_ts(doc["ts"]) for doc in record["docs"])


def entry_id_of(record: Mapping[str, Any]) -> str:
    """The Atom id of a result record (an XSCL or a CEL one), as it reads back from the feed."""
    if "result_id" not in record:
        return xml_safe(f"urn:xscl:cel:{record['id']}")
    return result_entry_id(record["result_id"])


def result_entry_id(result_id: str) -> str:
    """The Atom id of the XSCL result ``result_id``.

    >>> result_entry_id("4f2a")
    'urn:xscl:result:4f2a'
    """
    return xml_safe(f"urn:xscl:result:{result_id}")


def render_entry(entry_id: str, updated_micros: int, text: EntryText) -> FeedEntry:
    """One ``<entry>`` element (indented as in the feed) from its fields."""
    related = b"".join(
        b'    <link rel="related" href="' + escape_attribute(href) + b'"/>\n'
        for href in text.related
    )
    data = b"".join(
        (
            _ENTRY_START,
            escape_text(entry_id),
            _ID_END,
            escape_text(text.title),
            _TITLE_END,
            format_ts(updated_micros).encode("ascii"),
            _UPDATED_END,
            b""
            if text.link is None
            else b'    <link href="' + escape_attribute(text.link) + b'"/>\n',
            related,
            _CONTENT_START,
            escape_text(text.html),
            _ENTRY_END,
        )
    )
    return FeedEntry(updated_micros, entry_id, data)


def entry_of(record: Mapping[str, Any], end_micros: int | None = None) -> FeedEntry:
    """The Atom entry of one result record (``end_micros``: its end time, if known)."""
    updated = result_end_micros(record) if end_micros is None else end_micros
    text = entry_text(record) if "docs" in record else cel_entry_text(record)
    return render_entry(entry_id_of(record), updated, text)


_RESULT_START = '<result query="'
_RESULT_END = "</result>"
#: What an entry's text depends on: the result's XML without its wrapper, its
#: documents (stream, docid, ts) and its join values (``EntryRenderer``).
#: Whether the documents' items were known is part of it (a record read back from JSON
#: has none); the items themselves follow from the documents.
_TextKey = tuple[str, tuple[tuple[str, str, str], ...], tuple[Any, ...], bool]


def result_body(xml: str) -> tuple[str, str, str] | None:
    """A result's XML as (its ``<result query="...">`` tag, the body, ``</result>``);
    None if it is not wrapped so. The tag is lxml's serialisation (``records.result_tag``),
    which escapes ``>`` in the attribute, so the first ``>`` ends it.

    >>> result_body('<result query="q1"><a/><b>x</b></result>')
    ('<result query="q1">', '<a/><b>x</b>', '</result>')
    >>> result_body('<result query="q1"/>') is None
    True
    """
    if not (xml.startswith(_RESULT_START) and xml.endswith(_RESULT_END)):
        return None
    tag_end = xml.find(">", len(_RESULT_START)) + 1
    if tag_end == 0 or xml[tag_end - 2] == "/":
        return None
    return xml[:tag_end], xml[tag_end : -len(_RESULT_END)], _RESULT_END


class EntryRenderer:
    """Atom entries of result records, with the work results share done once.

    Results of the same documents share their XML but for the ``<result
    query="...">`` wrapper (every query that matched them): each entry's text (title,
    links, HTML: from the documents, the join values and the XML's elements, never the
    query) is kept, so a heavy batch parses each document pairing once, not once per
    result. ``max_bytes`` bounds the cache (it starts over past it). The same record
    gives the same bytes from its JSON line (``entry``, the sink) and as an object
    (``result_entry``, the join groups).

    >>> from xscl.engine.output import ResultRecord
    >>> record = ResultRecord("q", "r1", (("S", "d1", 0),), (), (("x", "v"),), 0, 0,
    ...                       xml_parts=('<result query="q">', "<item/>", "</result>"))
    >>> renderer = EntryRenderer(2**20)
    >>> renderer.result_entry(record) == renderer.entry(record.to_json_dict(), 0)
    True
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        #: (XML body, documents, join values) -> the entry's text
        self._texts: dict[_TextKey, EntryText] = {}
        self._texts_size = 0
        #: a record's documents -> (stream, docid, formatted time) of each
        self._docs: dict[tuple[tuple[str, str, int], ...], tuple[tuple[str, str, str], ...]] = {}

    def entry(self, record: Mapping[str, Any], end: int) -> FeedEntry:
        """``entry_of(record, end)`` for a record as read from its JSON line (or a CEL one)."""
        parts = record.get("xml_parts")
        if parts is None:
            parts = result_body(str(record.get("xml", "")))
        if parts is None or not record.get("docs"):  # a CEL result, or no documents
            return entry_of(record, end)
        docs = tuple((d["stream"], d["docid"], d["ts"]) for d in record["docs"])
        values = tuple((record.get("values") or {}).items())
        return self._render(entry_id_of(record), end, parts, docs, values, lambda: record, None)

    def result_entry(self, record: ResultRecord) -> FeedEntry:
        """The same entry for a record as the engine built it (no JSON in between)."""
        parts = record.xml_parts if record.xml_parts is not None else result_body(record.xml)
        if parts is None or not record.docs:
            return entry_of(record.to_json_dict(), record.end_micros)
        docs = self._docs.get(record.docs)
        if docs is None:
            if len(self._docs) >= _DOCS_CAPACITY:
                self._docs.clear()
            docs = self._docs[record.docs] = tuple((s, d, format_ts(t)) for s, d, t in record.docs)
        values = tuple(dict(record.values).items())
        entry_id = result_entry_id(record.result_id)
        return self._render(
            entry_id, record.end_micros, parts, docs, values, record.to_json_dict, record.items
        )

    def _render(
        self,
        entry_id: str,
        end: int,
        parts: Sequence[str],
        docs: tuple[tuple[str, str, str], ...],
        values: tuple[Any, ...],
        record: Callable[[], Mapping[str, Any]],
        items: DocumentItems | None,
    ) -> FeedEntry:
        # the key is the XML without its wrapper only when the parts are so wrapped
        wrapped = len(parts) > 1 and parts[0].startswith(_RESULT_START) and parts[-1] == _RESULT_END
        body = "".join(parts[1:-1] if wrapped else parts)
        key = (body, docs, values, items is not None)
        text = self._texts.get(key)
        if text is None:
            text = entry_text(record(), items)
            if self._texts_size + len(body) > self.max_bytes:
                self._texts.clear()
                self._texts_size = 0
            self._texts[key] = text
            self._texts_size += len(body)
        return render_entry(entry_id, end, text)


#: Distinct document tuples ``EntryRenderer`` keeps formatted before starting over.
_DOCS_CAPACITY = 10_000


def _safe_parser() -> etree.XMLParser:
    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)


def read_entries(feed: Path) -> list[FeedEntry]:
    """The entries of an existing feed file.

    A feed this writer wrote is sliced (``own_entries``); any other is parsed and its
    entries kept as they are. A missing feed has none; an unreadable, oversized or
    corrupt one is rebuilt from scratch (logged).
    """
    try:
        if feed.stat().st_size > MAX_FEED_BYTES:
            raise ValueError(f"larger than {MAX_FEED_BYTES} bytes")
        data = feed.read_bytes()
        own = own_entries(data)
        if own is not None:
            return own
        root = etree.fromstring(data, _safe_parser())
        entries = []
        for element in root.iterfind(_A + "entry"):
            serialized = etree.tostring(element, encoding="UTF-8", with_tail=False)
            entries.append(
                FeedEntry(
                    parse_ts(element.findtext(_A + "updated") or ""),
                    element.findtext(_A + "id") or "",
                    b"  " + serialized + b"\n",
                )
            )
        return entries
    except FileNotFoundError:
        return []
    except (OSError, ValueError, etree.XMLSyntaxError) as exc:
        _LOG.warning("rebuilding Atom feed %s: %s", feed, exc)
        return []


_FEED_START = b"<?xml version='1.0' encoding='UTF-8'?>\n<feed xmlns=\"" + ATOM_NS.encode() + b'">\n'
_HEAD_END = b'  <generator uri="urn:xscl">xscl</generator>\n'
_ENTRY_START = b"  <entry>\n    <id>"
_ID_END = b"</id>\n    <title>"
_TITLE_END = b"</title>\n    <updated>"
_UPDATED_END = b"</updated>\n"
_LINK_START = b"    <link "
_CONTENT_START = b'    <content type="html">'
_ENTRY_END = b"</content>\n  </entry>\n"


def own_entries(data: bytes) -> list[FeedEntry] | None:
    """The entries of a feed in exactly the layout ``render_feed`` writes, sliced out
    of its bytes without parsing; None for anything else (then lxml reads it).

    Re-reading a feed this writer wrote (after a restart, or when the feed fell out
    of the cache) is then a scan, not a parse. Text fields are escaped (no ``<`` or
    ``"`` inside), so every boundary below is unambiguous.
    """
    try:
        if not data.startswith(_FEED_START):
            return None
        at = data.index(_HEAD_END) + len(_HEAD_END)
        entries = []
        while data.startswith(_ENTRY_START, at):
            start = at
            at += len(_ENTRY_START)
            end = data.index(_ID_END, at)
            entry_id = _unescape(data[at:end])
            at = data.index(_TITLE_END, end) + len(_TITLE_END)
            end = data.index(_UPDATED_END, at)
            updated = parse_ts(data[at:end].decode("ascii"))
            at = end + len(_UPDATED_END)
            while data.startswith(_LINK_START, at):
                at = data.index(b'"/>\n', at + len(_LINK_START)) + 4
            if not data.startswith(_CONTENT_START, at):
                return None
            at = data.index(_ENTRY_END, at) + len(_ENTRY_END)
            entries.append(FeedEntry(updated, entry_id, data[start:at]))
        return entries if data[at:] == b"</feed>\n" else None
    except (ValueError, UnicodeDecodeError):
        return None


def _unescape(text: bytes) -> str:
    """Inverse of ``escape_text`` for the references it writes."""
    return (
        text.decode("utf-8")
        .replace("&#13;", "\r")
        .replace("&gt;", ">")
        .replace("&lt;", "<")
        .replace("&amp;", "&")
    )


def render_feed(
    query_id: str,
    entries: Sequence[FeedEntry],
    *,
    subtitle: str | None = None,
    self_href: str | None = None,
) -> bytes:
    """The Atom document of a query around its entries, given newest first.

    ``subtitle``: the query's text; ``self_href``: where the feed is read from.
    """
    query = escape_text(query_id)
    updated = format_ts(entries[0].updated_micros if entries else 0).encode("ascii")
    head = [
        _FEED_START,
        b"  <id>urn:xscl:query:" + query + b"</id>\n",
        b"  <title>xscl: " + query + b"</title>\n",
    ]
    if subtitle:
        head.append(b"  <subtitle>" + escape_text(subtitle) + b"</subtitle>\n")
    if self_href:
        head.append(b'  <link rel="self" href="' + escape_attribute(self_href) + b'"/>\n')
    head += [
        b"  <updated>" + updated + b"</updated>\n",
        b"  <author>\n    <name>xscl</name>\n  </author>\n",
        _HEAD_END,
    ]
    return b"".join((*head, *(entry.data for entry in entries), b"</feed>\n"))


def _stamp(path: Path) -> tuple[int, int, int] | None:
    """What changes when anyone replaces or edits the file (None: it is gone)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


@dataclass
class _CachedFeed:
    """A feed's entries as last written, newest first, and the file's stamp then."""

    entries: dict[str, FeedEntry]
    size: int
    stamp: tuple[int, int, int]


@dataclass
class _PendingFeed:
    """A query's buffered results: the newest ``max_entries`` distinct ones."""

    #: entry id -> (end time, record or its entry rendered already); a result added
    #: again replaces its record
    records: dict[str, tuple[int, Mapping[str, Any] | FeedEntry]] = field(default_factory=dict)
    #: min-heap of the records' sort keys (a key left by a changed end time is skipped)
    keys: list[tuple[int, str]] = field(default_factory=list)

    def add(
        self, entry_id: str, end: int, record: Mapping[str, Any] | FeedEntry, limit: int
    ) -> None:
        known = self.records.get(entry_id)
        self.records[entry_id] = (end, record)
        if known is None or known[0] != end:
            heapq.heappush(self.keys, (end, entry_id))
        while len(self.records) > limit:
            oldest_end, oldest = heapq.heappop(self.keys)
            if self.records.get(oldest, (None,))[0] == oldest_end:
                del self.records[oldest]


class SubscribedTexts:
    """The text of each subscribed query of a job's registry, re-read when it changes.

    Called once per flush: the feeds' subtitles. Which event subscribed each query
    comes from the event files' ids alone; a query is read only when a feed asks
    for its text: from the compiled table when the compile job wrote its event
    (that row decoded, no parsing), else from the event's file. So a worker neither
    decodes nor prints every subscription to write a few feeds (at 100k
    subscriptions decoding them all cost each worker ~7 CPU-s, docs/benchmarks.md).
    """

    def __init__(self, registry: str | Path) -> None:
        from xscl.service.subscriptions import SubscriptionLog

        self.registry = Path(registry)
        self.log = SubscriptionLog(registry)
        self._version = -1
        self._texts: _QueryTexts = _QueryTexts(self.registry, {})

    def __call__(self) -> Mapping[str, str]:
        from xscl.service.subscriptions import apply_event

        versions = self.log.versions()
        latest = versions[-1] if versions else 0
        if latest != self._version:
            owners: dict[str, _Subscribed] = {}
            for event in self.log.events():
                apply_event(owners, event, lambda e: [_Subscribed(q, e) for q in e.ids])
            self._texts = _QueryTexts(self.registry, owners)
            self._version = latest
        return self._texts


class _Subscribed(NamedTuple):
    """A subscribed query's id and the subscribe event that added it."""

    qid: str
    event: SubscriptionEvent


class _QueryTexts(Mapping[str, str]):
    """Queries by id, read as their texts (read and formatted on first use, then kept)."""

    def __init__(self, registry: Path, owners: dict[str, _Subscribed]) -> None:
        self._registry = registry
        self._owners = owners
        self._events: dict[int, Mapping[str, Query]] = {}
        self._texts: dict[str, str] = {}

    def __getitem__(self, qid: str) -> str:
        text = self._texts.get(qid)
        if text is None:
            from xscl.lang.printer import format_query
            from xscl.service.compiled.sources import subscribed_queries

            event = self._owners[qid].event
            queries = self._events.get(event.version)
            if queries is None:
                queries = self._events[event.version] = subscribed_queries(self._registry, event)
            text = self._texts[qid] = format_query(queries[qid], with_id=False)
        return text

    def __iter__(self) -> Iterator[str]:
        return iter(self._owners)

    def __len__(self) -> int:
        return len(self._owners)


class AtomFeedWriter:
    """Keeps ``<directory>/<query_id>.atom`` up to date as results arrive.

    ``subtitles`` gives the queries' texts (``SubscribedTexts``), asked once per
    flush; ``base_url`` is where the feeds are read from: a feed's ``rel="self"`` link
    is ``base_url/<query>.atom`` (by default the ``file:`` URI of the feed in
    ``directory`` as given, a symbolic link in its path kept: ``xscl serve`` writes into
    an epoch's folder and passes the stable ``HOME/results/NAME/feeds``, see
    ``service.pair.epochs``).
    """

    def __init__(
        self,
        directory: str | Path,
        *,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
        io_threads: int = DEFAULT_IO_THREADS,
        subtitles: Callable[[], Mapping[str, str]] | None = None,
        base_url: str | None = None,
    ) -> None:
        if max_entries <= 0:
            raise ValueError(f"max_entries must be positive, got {max_entries}")
        if cache_bytes < 0:
            raise ValueError(f"cache_bytes must not be negative, got {cache_bytes}")
        if io_threads <= 0:
            raise ValueError(f"io_threads must be positive, got {io_threads}")
        self.io_threads = io_threads
        self.subtitles = subtitles
        self.base_url = base_url
        self.directory = Path(directory)
        self._resolved: Path | None = None  # ``directory`` made absolute, on first use
        self.max_entries = max_entries
        self.cache_bytes = cache_bytes
        #: per query: the buffered results, at most ``max_entries``
        self._newest: dict[str, _PendingFeed] = defaultdict(_PendingFeed)
        #: per query, least recently written first
        self._cache: OrderedDict[str, _CachedFeed] = OrderedDict()
        self._cached_size = 0
        self.renderer = EntryRenderer(cache_bytes // 4)

    def feed_path(self, query_id: str) -> Path:
        return self.directory / f"{query_id}.atom"

    def _resolved_directory(self) -> Path:
        if self._resolved is None:  # absolute, symbolic links kept (not ``resolve``)
            self._resolved = Path(os.path.abspath(self.directory))
        return self._resolved

    def feed_url(self, query_id: str) -> str:
        """Where a feed reader finds the feed (its ``rel="self"`` link)."""
        if self.base_url is None:  # the folder resolved once, not each feed's path
            return (self._resolved_directory() / f"{query_id}.atom").as_uri()
        return f"{self.base_url.rstrip('/')}/{quote(query_id, safe='')}.atom"

    @property
    def cached_feeds(self) -> int:
        """How many feeds' entries are held in memory now."""
        return len(self._cache)

    def add(self, record: Mapping[str, Any], end_micros: int | None = None) -> None:
        """Buffer one result record; only each query's newest ``max_entries`` stay.

        A feed shows no more than that, so the buffer does not grow with a batch. A
        result added twice counts once (the later record wins). ``end_micros`` (the
        result's end time) spares parsing it back from the record.
        """
        end = result_end_micros(record) if end_micros is None else end_micros
        pending = self._newest[str(record["query"])]
        pending.add(entry_id_of(record), end, record, self.max_entries)

    def add_entry(self, query_id: str, entry: FeedEntry) -> None:
        """Buffer one result's entry, rendered already (``EntryRenderer``: by the join
        group that made the result); as ``add`` otherwise."""
        pending = self._newest[query_id]
        pending.add(entry.entry_id, entry.updated_micros, entry, self.max_entries)

    def flush(self) -> dict[str, int]:
        """Merge the buffered records into their feeds; return entries written per feed.

        Each replaced feed's write, ``fsync`` and rename run on one of ``io_threads``
        threads while the next feeds are merged and rendered (at most two rendered
        feeds per thread wait, so memory stays bounded); the flush returns once every
        rename is durable. A failed write ends the flush with its error once the writes
        in flight have ended; feeds not yet written keep their old file (the replayed
        batch writes them).
        """
        newest, self._newest = self._newest, defaultdict(_PendingFeed)
        if not newest:
            return {}
        self.directory.mkdir(parents=True, exist_ok=True)
        texts = self.subtitles() if self.subtitles is not None else {}
        written = {}
        replaced = False
        with _FeedFiles(self.io_threads) as files:
            for query_id, pending in sorted(newest.items()):
                path = self.feed_path(query_id)
                current, stamp = self._current(query_id, path)
                entries = self._merge(current, pending.records)
                if stamp is None or not _same_entries(entries, current):
                    replaced = True
                    data = render_feed(
                        query_id,
                        entries,
                        subtitle=texts.get(query_id),
                        self_href=self.feed_url(query_id),
                    )
                    files.replace(path, data, query_id, entries)
                else:
                    self._remember(query_id, entries, stamp)
                written[query_id] = len(entries)
                for done_id, done_entries, done_path in files.finished():
                    self._remember(done_id, done_entries, _stamp(done_path))
            for done_id, done_entries, done_path in files.drain():
                self._remember(done_id, done_entries, _stamp(done_path))
        if replaced:
            fsync_dir(self.directory)  # every feed's rename at once
        return written

    def update(self, records: Iterable[Mapping[str, Any]]) -> dict[str, int]:
        """``add`` every record, then ``flush``."""
        for record in records:
            self.add(record)
        return self.flush()

    def _current(
        self, query_id: str, path: Path
    ) -> tuple[dict[str, FeedEntry], tuple[int, int, int] | None]:
        """The feed's entries now, and the file's stamp if they came from the cache."""
        cached = self._cache.pop(query_id, None)
        if cached is not None:
            self._cached_size -= cached.size
            stamp = _stamp(path)
            if stamp == cached.stamp:
                return cached.entries, stamp
            _LOG.info("Atom feed %s changed on disk since written: reading it again", path)
        return {entry.entry_id: entry for entry in read_entries(path)}, None

    def _merge(
        self,
        current: dict[str, FeedEntry],
        fresh: dict[str, tuple[int, Mapping[str, Any] | FeedEntry]],
    ) -> list[FeedEntry]:
        """The newest ``max_entries`` of the feed's and the batch's entries, newest first.

        A result replaces the entry with its id; only kept results are rendered.
        """
        keys = [(e.updated_micros, i) for i, e in current.items() if i not in fresh]
        keys.extend((end, i) for i, (end, _record) in fresh.items())
        return [
            self._fresh_entry(fresh[i][1], end) if i in fresh else current[i]
            for end, i in heapq.nlargest(self.max_entries, keys)
        ]

    def _fresh_entry(self, record: Mapping[str, Any] | FeedEntry, end: int) -> FeedEntry:
        return record if isinstance(record, FeedEntry) else self.renderer.entry(record, end)

    def _remember(
        self, query_id: str, entries: list[FeedEntry], stamp: tuple[int, int, int] | None
    ) -> None:
        """Cache the entries just written; evict least recently written feeds over the cap."""
        size = sum(len(entry.data) for entry in entries) + _ENTRY_OVERHEAD * len(entries)
        if stamp is None or size > self.cache_bytes:
            return
        self._cache[query_id] = _CachedFeed({e.entry_id: e for e in entries}, size, stamp)
        self._cached_size += size
        while self._cached_size > self.cache_bytes:
            _query, evicted = self._cache.popitem(last=False)
            self._cached_size -= evicted.size


class _FeedFiles:
    """Feed files being replaced (``write_atomically``) by a few threads, in order.

    With one thread the write happens in ``replace`` itself. ``finished`` yields the
    writes completed so far (oldest first, stopping at the first still running);
    ``drain`` waits for all. Leaving the ``with`` block waits for every write, so no
    thread outlives a failed flush.
    """

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self._pool = ThreadPoolExecutor(threads, "xscl-atom") if threads > 1 else None
        self._pending: deque[tuple[str, list[FeedEntry], Path, Future[None]]] = deque()

    def __enter__(self) -> _FeedFiles:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)

    def replace(self, path: Path, data: bytes, query_id: str, entries: list[FeedEntry]) -> None:
        if self._pool is None:
            write_atomically(path, data, sync_dir=False)
            done: Future[None] = Future()
            done.set_result(None)
        else:
            if len(self._pending) >= 2 * self.threads:  # bound the rendered bytes waiting
                self._pending[0][3].result()  # the caller's next ``finished`` takes it
            done = self._pool.submit(write_atomically, path, data, sync_dir=False)
        self._pending.append((query_id, entries, path, done))

    def finished(self) -> Iterator[tuple[str, list[FeedEntry], Path]]:
        while self._pending and self._pending[0][3].done():
            query_id, entries, path, done = self._pending.popleft()
            done.result()
            yield query_id, entries, path

    def drain(self) -> Iterator[tuple[str, list[FeedEntry], Path]]:
        while self._pending:
            query_id, entries, path, done = self._pending.popleft()
            done.result()
            yield query_id, entries, path


def _same_entries(entries: list[FeedEntry], current: dict[str, FeedEntry]) -> bool:
    """Whether the feed would be written with exactly the bytes it holds."""
    return len(entries) == len(current) and all(
        current.get(entry.entry_id) == entry for entry in entries
    )


def write_feeds_from_results(
    results: str | Path,
    feeds: str | Path,
    *,
    max_entries: int = DEFAULT_MAX_ENTRIES,
    registry: str | Path | None = None,
) -> dict[str, int]:
    """Build every query's feed from a committed ``xscl-results`` directory
    (``registry``: the job's, for the queries' texts)."""
    subtitles = SubscribedTexts(registry) if registry is not None else None
    writer = AtomFeedWriter(feeds, max_entries=max_entries, subtitles=subtitles)
    return writer.update(read_results(results))
