"""Atom feed sink: one feed file per query, so a person can follow a subscription.

Each result record (spec section 4) becomes one entry (RFC 4287):

* ``id`` = ``urn:xscl:result:<result_id>`` (stable: re-adding a result replaces its
  entry, so replays never duplicate an entry);
* ``updated`` = the result's end time (the latest timestamp of its documents);
* ``title`` = the query id and the documents' ids;
* ``content`` (``type="text"``) = the result XML, escaped as text;
* one ``link rel="related"`` per document whose docid is an http(s) URL.

A feed keeps the latest ``max_entries`` results (default 200), newest first (by end
time, then result id), and is replaced atomically (temporary file, ``fsync``,
``rename``), so a feed reader polling the file never sees half a feed. Feeds live in
``<directory>/<query_id>.atom``. It runs on the driver: in ``foreachBatch`` (the
micro-batch's results are few and already collected) or from a committed results
directory (``write_feeds_from_results``).
"""

from __future__ import annotations

import heapq
import logging
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lxml import etree

from xscl.connectors.document import format_ts, parse_ts
from xscl.connectors.durable import fsync_dir, write_atomically
from xscl.spark_plugin.results_sink import read_results

ATOM_NS = "http://www.w3.org/2005/Atom"
DEFAULT_MAX_ENTRIES = 200
#: Largest existing feed file read back when merging (larger ones are rebuilt).
MAX_FEED_BYTES = 64 * 1024 * 1024
_A = f"{{{ATOM_NS}}}"
_LOG = logging.getLogger(__name__)
#: The default namespace map (typed Any: lxml-stubs rejects the None prefix key).
_NSMAP: Any = {None: ATOM_NS}


@dataclass(frozen=True)
class AtomEntry:
    """One feed entry, ordered newest first by ``(updated_micros, entry_id)``."""

    entry_id: str
    updated_micros: int
    element: etree._Element

    @property
    def sort_key(self) -> tuple[int, str]:
        return (self.updated_micros, self.entry_id)


def _sub(parent: etree._Element, tag: str, text: str | None = None, **attrs: str) -> etree._Element:
    child = etree.SubElement(parent, _A + tag, attrs)
    if text is not None:
        child.text = text
    return child


def _is_url(docid: str) -> bool:
    return docid.startswith(("http://", "https://")) and " " not in docid


def result_end_micros(record: Mapping[str, Any]) -> int:
    """The end time of a result: the latest timestamp of its documents."""
    return max(parse_ts(doc["ts"]) for doc in record["docs"])


def entry_of(record: Mapping[str, Any]) -> AtomEntry:
    """The Atom entry of one result record."""
    entry_id = f"urn:xscl:result:{record['result_id']}"
    updated = result_end_micros(record)
    entry = etree.Element(_A + "entry", nsmap=_NSMAP)
    _sub(entry, "id", entry_id)
    docids = ", ".join(f"{doc['stream']}/{doc['docid']}" for doc in record["docs"])
    _sub(entry, "title", f"{record['query']}: {docids}")
    _sub(entry, "updated", format_ts(updated))
    for doc in record["docs"]:
        if _is_url(str(doc["docid"])):
            _sub(entry, "link", rel="related", href=str(doc["docid"]))
    _sub(entry, "content", str(record.get("xml", "")), type="text")
    return AtomEntry(entry_id, updated, entry)


def _safe_parser() -> etree.XMLParser:
    return etree.XMLParser(
        resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False
    )


def read_entries(feed: Path) -> list[AtomEntry]:
    """The entries of an existing feed file; an unreadable feed is rebuilt (logged)."""
    try:
        if feed.stat().st_size > MAX_FEED_BYTES:
            raise ValueError(f"larger than {MAX_FEED_BYTES} bytes")
        root = etree.fromstring(feed.read_bytes(), _safe_parser())
        entries = []
        for element in root.iterfind(_A + "entry"):
            entry_id = element.findtext(_A + "id") or ""
            updated = parse_ts(element.findtext(_A + "updated") or "")
            entries.append(AtomEntry(entry_id, updated, element))
        return entries
    except FileNotFoundError:
        return []
    except (OSError, ValueError, etree.XMLSyntaxError) as exc:
        _LOG.warning("rebuilding Atom feed %s: %s", feed, exc)
        return []


def render_feed(query_id: str, entries: Iterable[AtomEntry], max_entries: int) -> bytes:
    """The Atom document of a query: the newest ``max_entries`` entries, newest first."""
    kept = sorted(entries, key=lambda e: e.sort_key, reverse=True)[:max_entries]
    feed = etree.Element(_A + "feed", nsmap=_NSMAP)
    _sub(feed, "id", f"urn:xscl:query:{query_id}")
    _sub(feed, "title", f"xscl results of query {query_id}")
    _sub(feed, "updated", format_ts(kept[0].updated_micros) if kept else format_ts(0))
    author = _sub(feed, "author")
    _sub(author, "name", "xscl")
    _sub(feed, "generator", "xscl", uri="urn:xscl")
    for entry in kept:
        feed.append(entry.element)
    return bytes(etree.tostring(feed, xml_declaration=True, encoding="UTF-8", pretty_print=True))


class AtomFeedWriter:
    """Keeps ``<directory>/<query_id>.atom`` up to date as results arrive (driver)."""

    def __init__(self, directory: str | Path, *, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        if max_entries <= 0:
            raise ValueError(f"max_entries must be positive, got {max_entries}")
        self.directory = Path(directory)
        self.max_entries = max_entries
        #: per query: a min-heap of (sort key, record), at most ``max_entries``
        self._newest: dict[str, list[tuple[tuple[int, str], Mapping[str, Any]]]] = (
            defaultdict(list)
        )

    def feed_path(self, query_id: str) -> Path:
        return self.directory / f"{query_id}.atom"

    def add(self, record: Mapping[str, Any], end_micros: int | None = None) -> None:
        """Buffer one result record; only each query's newest ``max_entries`` stay.

        A feed shows no more than that, so the buffer does not grow with a batch.
        ``end_micros`` (the result's end time) spares parsing it back from the record.
        """
        end = result_end_micros(record) if end_micros is None else end_micros
        key = (end, f"urn:xscl:result:{record['result_id']}")
        kept = self._newest[str(record["query"])]
        if len(kept) < self.max_entries:
            heapq.heappush(kept, (key, record))
        elif key > kept[0][0]:
            heapq.heapreplace(kept, (key, record))

    def flush(self) -> dict[str, int]:
        """Merge the buffered records into their feeds; return entries written per feed."""
        newest, self._newest = self._newest, defaultdict(list)
        if not newest:
            return {}
        self.directory.mkdir(parents=True, exist_ok=True)
        written = {}
        for query_id, kept in sorted(newest.items()):
            path = self.feed_path(query_id)
            merged = {e.entry_id: e for e in read_entries(path)}
            for _key, record in kept:
                entry = entry_of(record)
                merged[entry.entry_id] = entry
            rendered = render_feed(query_id, merged.values(), self.max_entries)
            write_atomically(path, rendered, sync_dir=False)
            written[query_id] = min(len(merged), self.max_entries)
        fsync_dir(self.directory)  # every feed's rename at once
        return written

    def update(self, records: Iterable[Mapping[str, Any]]) -> dict[str, int]:
        """``add`` every record, then ``flush``."""
        for record in records:
            self.add(record)
        return self.flush()


def write_feeds_from_results(
    results: str | Path, feeds: str | Path, *, max_entries: int = DEFAULT_MAX_ENTRIES
) -> dict[str, int]:
    """Build every query's feed from a committed ``xscl-results`` directory."""
    return AtomFeedWriter(feeds, max_entries=max_entries).update(read_results(results))
