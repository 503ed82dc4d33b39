"""The Atom writer's template rendering and entry cache against the lxml reference.

``ReferenceWriter`` is the writer as it was before the cache (lxml elements, each
flush re-reads its feed file): for random batches, replays, restarts and cache sizes
the cached writer's feeds must parse to the same feed and entries.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lxml import etree

from tests.profiles import examples
from xscl.connectors.document import format_ts, parse_ts
from xscl.results import atom
from xscl.results.atom import AtomFeedWriter
from xscl.results.feed_entry import EntryText, entry_text

A = "{http://www.w3.org/2005/Atom}"
NSMAP: Any = {None: "http://www.w3.org/2005/Atom"}
BASE = 1_149_156_000_000_000
NOT_XML_CHAR = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _sub(parent: etree._Element, tag: str, text: str | None = None, **attrs: str) -> Any:
    child = etree.SubElement(parent, A + tag, attrs)
    if text is not None:
        child.text = text
    return child


class ReferenceWriter:
    """The pre-cache writer: lxml entries, merged with the re-parsed file each time."""

    def __init__(self, directory: Path, max_entries: int) -> None:
        self.directory = directory
        self.max_entries = max_entries

    def _entry(self, record: Mapping[str, Any]) -> tuple[tuple[int, str], Any]:
        entry_id = f"urn:xscl:result:{record['result_id']}"
        updated = max(parse_ts(doc["ts"]) for doc in record["docs"])
        text = entry_text(record)
        entry = etree.Element(A + "entry", nsmap=NSMAP)
        _sub(entry, "id", entry_id)
        _sub(entry, "title", text.title)
        _sub(entry, "updated", format_ts(updated))
        _sub(entry, "link", href=text.link)
        for href in text.related:
            _sub(entry, "link", rel="related", href=href)
        _sub(entry, "content", text.html, type="html")
        return (updated, entry_id), entry

    def _read(self, path: Path) -> dict[str, tuple[tuple[int, str], Any]]:
        if not path.exists():
            return {}
        root = etree.fromstring(path.read_bytes())
        merged = {}
        for element in root.iterfind(A + "entry"):
            entry_id = element.findtext(A + "id") or ""
            updated = parse_ts(element.findtext(A + "updated") or "")
            merged[entry_id] = ((updated, entry_id), element)
        return merged

    def update(self, records: Iterable[Mapping[str, Any]]) -> dict[str, int]:
        by_query: dict[str, list[Mapping[str, Any]]] = {}
        for record in records:
            by_query.setdefault(str(record["query"]), []).append(record)
        written = {}
        for query_id, batch in sorted(by_query.items()):
            path = self.directory / f"{query_id}.atom"
            merged = self._read(path)
            for record in batch:
                key, element = self._entry(record)
                merged[key[1]] = (key, element)
            kept = sorted(merged.values(), key=lambda e: e[0], reverse=True)[: self.max_entries]
            feed = etree.Element(A + "feed", nsmap=NSMAP)
            _sub(feed, "id", f"urn:xscl:query:{query_id}")
            _sub(feed, "title", f"xscl: {query_id}")
            _sub(feed, "link", rel="self", href=path.resolve().as_uri())
            _sub(feed, "updated", format_ts(kept[0][0][0]))
            _sub(_sub(feed, "author"), "name", "xscl")
            _sub(feed, "generator", "xscl", uri="urn:xscl")
            for _key, element in kept:
                feed.append(element)
            path.write_bytes(
                etree.tostring(feed, xml_declaration=True, encoding="UTF-8", pretty_print=True)
            )
            written[query_id] = len(kept)
        return written


def parsed_feed(path: Path) -> dict[str, Any]:
    """What a feed reader sees: feed fields and each entry's fields, in file order."""
    root = etree.fromstring(path.read_bytes())  # strict: must be well-formed
    assert root.tag == A + "feed"
    entries = []
    for entry in root.iterfind(A + "entry"):
        content = entry.find(A + "content")
        assert content is not None
        entries.append(
            {
                "id": entry.findtext(A + "id"),
                "title": entry.findtext(A + "title"),
                "updated": entry.findtext(A + "updated"),
                "links": [sorted(link.items()) for link in entry.iterfind(A + "link")],
                "content": (sorted(content.items()), content.text or ""),
                "children": [child.tag for child in entry],
            }
        )
    return {
        "id": root.findtext(A + "id"),
        "title": root.findtext(A + "title"),
        "subtitle": root.findtext(A + "subtitle"),
        "links": [link.get("rel") for link in root.iterfind(A + "link")],
        "updated": root.findtext(A + "updated"),
        "author": root.findtext(f"{A}author/{A}name"),
        "generator": [(g.text, sorted(g.items())) for g in root.iterfind(A + "generator")],
        "entries": entries,
    }


XML_TEXT = st.lists(
    st.one_of(
        st.sampled_from([*"&<>\"'\r\n\t] é\U0001f600", "]]>", "&amp;", "\r\n"]),
        st.characters(codec="utf-8").filter(lambda c: NOT_XML_CHAR.match(c) is None),
    ),
    max_size=20,
).map("".join)


@st.composite
def record_pool(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Distinct results (each with its own id) of a few queries."""
    size = draw(st.integers(1, 14))
    pool = []
    for n in range(size):
        docs = []
        for _ in range(draw(st.integers(1, 3))):
            docid = draw(
                st.one_of(
                    XML_TEXT,
                    XML_TEXT.map(lambda s: "https://example.org/" + s),
                    st.just("http://example.org/?a=1&b=<2>"),
                )
            )
            ts = BASE + draw(st.integers(0, 20)) * 1_000_000 + draw(st.sampled_from([0, 7]))
            docs.append(
                {"stream": draw(st.sampled_from(["S", "T&U"])), "docid": docid, "ts": format_ts(ts)}
            )
        query = draw(st.sampled_from(["A", "B", "C"]))
        record: dict[str, Any] = {
            "query": query,
            "result_id": f"{n:04x}",
            "docs": docs,
            "xml": draw(st.one_of(XML_TEXT, RESULT_BODIES.map(_wrapped(query)))),
        }
        if draw(st.booleans()):
            record["values"] = draw(st.sampled_from([{}, {"x": "a"}, {"x": "a", "y": "b"}]))
        pool.append(record)
    return pool


#: Result bodies shared by results of several queries (as a ``SELECT *`` result's
#: elements are): the writer keeps each body's entry text and CDATA once.
RESULT_BODIES = st.sampled_from(
    [
        "<item><title>One &amp; two</title><link>https://example.org/1</link></item>",
        "<item><title>]]&gt;</title></item><entry><title type='html'>&lt;b&gt;B</title></entry>",
        '<var name="x">a</var><var name="z">zed\r</var>',
        "<item>\r\n]</item><item>]</item>",
    ]
)


def _wrapped(query: str) -> Any:
    return lambda body: f'<result query="{query}">{body}</result>'


@examples(60)
@given(
    pool=record_pool(),
    picks=st.lists(st.lists(st.integers(0, 13), max_size=10), min_size=1, max_size=5),
    max_entries=st.integers(1, 5),
    cache_bytes=st.sampled_from([0, 1500, atom.DEFAULT_CACHE_BYTES]),
    restarts=st.lists(st.booleans(), min_size=5, max_size=5),
    use_end=st.booleans(),
    io_threads=st.sampled_from([1, 2, 4]),
)
def test_cached_writer_matches_the_lxml_reference(
    tmp_path_factory: pytest.TempPathFactory,
    pool: list[dict[str, Any]],
    picks: list[list[int]],
    max_entries: int,
    cache_bytes: int,
    restarts: list[bool],
    use_end: bool,
    io_threads: int,
) -> None:
    new_dir = tmp_path_factory.mktemp("new")
    ref_dir = tmp_path_factory.mktemp("ref")
    reference = ReferenceWriter(ref_dir, max_entries)
    options = {"max_entries": max_entries, "cache_bytes": cache_bytes, "io_threads": io_threads}
    writer = AtomFeedWriter(new_dir, **options)
    for batch_no, batch in enumerate(picks):
        if restarts[batch_no]:
            writer = AtomFeedWriter(new_dir, **options)
        records = [pool[i % len(pool)] for i in batch]
        for record in records:
            end = max(parse_ts(doc["ts"]) for doc in record["docs"]) if use_end else None
            writer.add(record, end)
        written = writer.flush()
        assert written == reference.update(records)
        for query_id in written:
            new_feed = parsed_feed(new_dir / f"{query_id}.atom")
            assert new_feed == parsed_feed(ref_dir / f"{query_id}.atom")
        assert sorted(p.name for p in new_dir.iterdir()) == sorted(
            p.name for p in ref_dir.iterdir()
        )


def _record(query: str, n: int, xml: str = "<r/>") -> dict[str, Any]:
    ts = format_ts(BASE + n * 1_000_000)
    return {
        "query": query,
        "result_id": f"{n:08x}",
        "docs": [{"stream": "S", "docid": f"d{n}", "ts": ts}],
        "xml": xml,
    }


def _counting_reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    reads: list[Path] = []
    real = atom.read_entries

    def counting(feed: Path) -> list[atom.FeedEntry]:
        reads.append(feed)
        return real(feed)

    monkeypatch.setattr(atom, "read_entries", counting)
    return reads


def test_a_flush_does_not_reread_the_feed_it_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = _counting_reads(monkeypatch)
    writer = AtomFeedWriter(tmp_path, max_entries=3)
    for n in range(6):
        writer.update([_record("Q", n)])
    assert reads == [tmp_path / "Q.atom"]  # only the first flush looked at the disk
    assert [e["id"][-1] for e in parsed_feed(tmp_path / "Q.atom")["entries"]] == ["5", "4", "3"]


def test_a_restarted_writer_merges_with_the_feed_on_disk(tmp_path: Path) -> None:
    AtomFeedWriter(tmp_path).update([_record("Q", 1), _record("Q", 2)])
    AtomFeedWriter(tmp_path).update([_record("Q", 3)])
    ids = [e["id"][-1] for e in parsed_feed(tmp_path / "Q.atom")["entries"]]
    assert ids == ["3", "2", "1"]


def test_a_feed_changed_on_disk_is_read_again(tmp_path: Path) -> None:
    writer = AtomFeedWriter(tmp_path)
    writer.update([_record("Q", 1)])
    AtomFeedWriter(tmp_path).update([_record("Q", 2)])  # another writer replaced the file
    writer.update([_record("Q", 3)])
    ids = [e["id"][-1] for e in parsed_feed(tmp_path / "Q.atom")["entries"]]
    assert ids == ["3", "2", "1"]
    (tmp_path / "Q.atom").unlink()  # a deleted feed starts afresh, as before the cache
    writer.update([_record("Q", 4)])
    assert [e["id"][-1] for e in parsed_feed(tmp_path / "Q.atom")["entries"]] == ["4"]


def test_the_cache_is_bounded_by_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads = _counting_reads(monkeypatch)
    writer = AtomFeedWriter(tmp_path, cache_bytes=3 * 600)
    writer.update(_record(f"Q{q}", q) for q in range(10))
    assert 1 <= writer.cached_feeds <= 6  # each feed holds over 300 bytes
    reads.clear()
    writer.update([_record("Q0", 20), _record("Q9", 21)])  # Q0 was evicted, Q9 is cached
    assert reads == [tmp_path / "Q0.atom"]
    assert [e["id"][-2:] for e in parsed_feed(tmp_path / "Q0.atom")["entries"]] == ["14", "00"]
    uncached = AtomFeedWriter(tmp_path / "none", cache_bytes=0)
    uncached.update([_record("Q", 1)])
    uncached.update([_record("Q", 2)])
    assert uncached.cached_feeds == 0
    assert len(parsed_feed(tmp_path / "none" / "Q.atom")["entries"]) == 2


def test_a_replay_leaves_the_file_alone(tmp_path: Path) -> None:
    writer = AtomFeedWriter(tmp_path, max_entries=2)
    assert writer.update([_record("Q", n) for n in range(3)]) == {"Q": 2}
    before = (tmp_path / "Q.atom").stat()
    assert writer.update([_record("Q", 2), _record("Q", 0)]) == {"Q": 2}  # replay, too old
    after = (tmp_path / "Q.atom").stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


@pytest.mark.parametrize("content", [b"<feed><entry>", b"\x00\xff", b"<feed/>" + b" " * 64])
def test_an_unreadable_feed_is_rebuilt_with_a_warning(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    content: bytes,
) -> None:
    monkeypatch.setattr(atom, "MAX_FEED_BYTES", 64)
    (tmp_path / "Q.atom").write_bytes(content)
    with caplog.at_level(logging.WARNING, logger=atom.__name__):
        assert AtomFeedWriter(tmp_path).update([_record("Q", 1)]) == {"Q": 1}
    assert "rebuilding Atom feed" in caplog.text
    assert len(parsed_feed(tmp_path / "Q.atom")["entries"]) == 1


def test_invalid_arguments_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max_entries"):
        AtomFeedWriter(tmp_path, max_entries=0)
    with pytest.raises(ValueError, match="cache_bytes"):
        AtomFeedWriter(tmp_path, cache_bytes=-1)
    with pytest.raises(ValueError, match="io_threads"):
        AtomFeedWriter(tmp_path, io_threads=0)


def test_threads_write_the_same_feeds_as_one(tmp_path: Path) -> None:
    """More feeds than the writes allowed in flight, over flushes that evict and re-read."""
    batches = [
        [_record(f"Q{q:02d}", 100 * b + q, f"<r>{b}</r>" * (q + 1)) for q in range(40)]
        for b in range(3)
    ]
    feeds = {}
    for threads in (1, 3):
        folder = tmp_path / str(threads)
        writer = AtomFeedWriter(
            folder, max_entries=2, cache_bytes=8_000, io_threads=threads, base_url="https://x/"
        )
        assert [writer.update(batch) for batch in batches] == [
            {f"Q{q:02d}": n for q in range(40)} for n in (1, 2, 2)
        ]
        feeds[threads] = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert len(feeds[1]) == 40
    assert feeds[1] == feeds[3]


def test_a_failed_feed_write_fails_the_flush_after_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = atom.write_atomically

    def failing(target: Path, data: bytes, *, sync_dir: bool = True) -> None:
        if target.name == "Q03.atom":
            raise OSError(28, "No space left on device")
        real(target, data, sync_dir=sync_dir)

    monkeypatch.setattr(atom, "write_atomically", failing)
    writer = AtomFeedWriter(tmp_path, io_threads=2)
    with pytest.raises(OSError, match="No space left"):
        writer.update([_record(f"Q{q:02d}", q) for q in range(10)])
    written = sorted(p.name for p in tmp_path.iterdir())
    assert "Q03.atom" not in written and "Q00.atom" in written
    assert all(name.endswith(".atom") for name in written)  # no temporary file left
    monkeypatch.setattr(atom, "write_atomically", real)  # the next batch's replay recovers
    replayed = writer.update([_record(f"Q{q:02d}", q) for q in range(10)])
    assert replayed == {f"Q{q:02d}": 1 for q in range(10)}
    for q in range(10):
        assert len(parsed_feed(tmp_path / f"Q{q:02d}.atom")["entries"]) == 1


#: pieces that look like the layout's own boundaries, to be met inside fields
PIECES = [
    *"ab<>&\"'\r\n\t]é\u2028",
    "]]>",
    "</content>\n  </entry>\n",
    "  <entry>\n    <id>",
    '    <link href="',
]
HOSTILE = st.lists(st.sampled_from(PIECES), max_size=12).map("".join)


@examples(80)
@given(
    fields=st.lists(
        st.tuples(
            HOSTILE,
            st.integers(0, 2**40),
            st.builds(
                EntryText, HOSTILE, HOSTILE, st.lists(HOSTILE, max_size=2).map(tuple), HOSTILE
            ),
        ),
        max_size=5,
    ),
    query=HOSTILE,
    subtitle=st.one_of(st.none(), HOSTILE),
)
def test_own_feeds_are_sliced_back_exactly(
    fields: list[tuple[str, int, EntryText]], query: str, subtitle: str | None
) -> None:
    """What ``render_feed`` wrote comes back as the same entries without a parse."""
    entries = [atom.render_entry(f"urn:{i}", t, text) for i, t, text in fields]
    data = atom.render_feed(query, entries, subtitle=subtitle, self_href=query)
    assert atom.own_entries(data) == entries
    etree.fromstring(data)  # and it is well-formed XML
    assert atom.own_entries(data[:-1]) is None  # anything else: the lxml path


def test_a_restart_reads_its_own_feeds_without_lxml(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    AtomFeedWriter(tmp_path).update([_record("q", n, "<r>]]></r>") for n in range(5)])

    def no_parse(*_args: object) -> None:
        raise AssertionError("parsed with lxml")

    monkeypatch.setattr(atom, "_safe_parser", no_parse)  # only the lxml reading uses it
    restarted = AtomFeedWriter(tmp_path)
    assert restarted.update([_record("q", 9)]) == {"q": 6}
    monkeypatch.undo()
    assert len(parsed_feed(tmp_path / "q.atom")["entries"]) == 6


def test_entry_text_is_shared_only_across_a_wrapper() -> None:
    """Results differing only in their ``<result query>`` tag share an entry text; pieces
    not so wrapped are keyed whole, so a different first piece is not shared."""
    docs = [{"stream": "S", "docid": f"d{n}", "ts": format_ts(BASE)} for n in range(2)]
    item = "<item><title>A</title></item>"
    renderer = atom.EntryRenderer(1 << 20)
    for query, first in (("Q1", "<r><item><title>X</title></item>"), ("Q2", "<r>" + item)):
        parts = (first, item, "</r>")
        record = {"query": query, "result_id": query, "docs": docs, "xml": "".join(parts)}
        unwrapped = {**record, "xml_parts": parts}
        assert renderer.entry(unwrapped, BASE) == atom.entry_of(unwrapped, BASE)
        wrapped = {**record, "xml": f'<result query="{query}">{item * 2}</result>'}
        assert renderer.entry(wrapped, BASE) == atom.entry_of(wrapped, BASE)


def test_the_self_link_keeps_a_symlinked_folder(tmp_path: Path) -> None:
    """The folder is made absolute once, not each feed's path; the link is the URI of
    the file through a symlinked folder (as ``HOME/results/NAME/feeds`` names the newest
    epoch's: issue 36, defect 14), ``..`` folded, for ids URIs must escape."""
    real = tmp_path / "real feeds"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    writer = AtomFeedWriter(tmp_path / "link" / ".." / "link")
    for qid in ("Q 1", "Q%2", "Qé"):
        writer.update([_record(qid, 1)])
        root = etree.fromstring((real / f"{qid}.atom").read_bytes())
        hrefs = [x.get("href") for x in root.iterfind(A + "link") if x.get("rel") == "self"]
        assert hrefs == [(tmp_path / "link" / f"{qid}.atom").as_uri()]
