"""The Atom feed sink: valid Atom (parsed back by feedparser), bounded, idempotent, escaped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import feedparser
from lxml import etree

from xscl.connectors.document import format_ts
from xscl.spark_plugin.atom import AtomFeedWriter, write_feeds_from_results
from xscl.spark_plugin.results_sink import StagedPart, commit_batch

BASE = 1_149_156_000_000_000


def _record(query: str, n: int) -> dict[str, Any]:
    docs = [
        {"stream": "S", "docid": f"https://example.org/a/{n}", "ts": format_ts(BASE + n * 10)},
        {"stream": "T", "docid": f"t{n}", "ts": format_ts(BASE + n * 10 + 5_000_000)},
    ]
    return {
        "query": query,
        "result_id": f"{n:032x}",
        "docs": docs,
        "nodes": {"x": "2"},
        "values": {"x": f"v<{n}> & co"},
        "xml": f'<result query="{query}"><item>v&lt;{n}&gt; &amp; co</item></result>',
    }


def test_feed_is_valid_atom_with_one_entry_per_result(tmp_path: Path) -> None:
    writer = AtomFeedWriter(tmp_path)
    records = [_record("Q1", n) for n in range(3)] + [_record("Q2", 7)]
    assert writer.update(records) == {"Q1": 3, "Q2": 1}
    parsed = feedparser.parse(str(tmp_path / "Q1.atom"))
    assert not parsed.bozo, parsed.get("bozo_exception")
    assert parsed.version == "atom10"
    assert parsed.feed.id == "urn:xscl:query:Q1"
    entries = parsed.entries
    assert [e.id for e in entries] == [f"urn:xscl:result:{n:032x}" for n in (2, 1, 0)]
    assert entries[0].updated == format_ts(BASE + 20 + 5_000_000)
    assert entries[0].content[0].value == records[2]["xml"]
    assert [link.href for link in entries[0].links] == ["https://example.org/a/2"]
    assert "S/https://example.org/a/2" in entries[0].title


def test_feed_is_bounded_and_replays_do_not_duplicate(tmp_path: Path) -> None:
    writer = AtomFeedWriter(tmp_path, max_entries=5)
    writer.update(_record("Q", n) for n in range(4))
    writer.update(_record("Q", n) for n in range(2, 9))  # overlaps: a replayed batch
    parsed = feedparser.parse(str(tmp_path / "Q.atom"))
    assert not parsed.bozo
    assert [e.id[-2:] for e in parsed.entries] == ["08", "07", "06", "05", "04"]


def test_corrupt_feed_is_rebuilt(tmp_path: Path) -> None:
    (tmp_path / "Q.atom").write_text("<feed><entry>")
    AtomFeedWriter(tmp_path).update([_record("Q", 1)])
    parsed = feedparser.parse(str(tmp_path / "Q.atom"))
    assert not parsed.bozo and len(parsed.entries) == 1


def test_feeds_from_a_results_directory(tmp_path: Path) -> None:
    import json

    results = tmp_path / "results"
    staged = results / "_staging" / "p.jsonl"
    staged.parent.mkdir(parents=True)
    lines = [_record("Q", 1), _record("Q", 1), _record("R", 2)]
    staged.write_text("".join(json.dumps(r) + "\n" for r in lines))
    commit_batch(str(results), "00000000000000000000", [StagedPart(0, str(staged), 3)])
    assert write_feeds_from_results(results, tmp_path / "feeds") == {"Q": 1, "R": 1}


def test_awkward_characters_are_escaped_or_replaced(tmp_path: Path) -> None:
    """Markup-like text round-trips; characters XML 1.0 forbids become U+FFFD."""
    record = _record("Q", 1)
    record["xml"] = '<r a="x">]]> &amp; <b>\x00\x01\x0b\x1f\ufffe\uffff\ud800|\r\n\t\x7f</r>'
    record["docs"][0]["docid"] = 'https://example.org/?a=1&b="<2>"\x02\t'
    record["docs"][1]["docid"] = "t]]>&<\x03"
    assert AtomFeedWriter(tmp_path).update([record]) == {"Q": 1}
    root = etree.fromstring((tmp_path / "Q.atom").read_bytes())  # a strict parser accepts it
    atom = "{http://www.w3.org/2005/Atom}"
    entry = root.find(atom + "entry")
    assert entry is not None
    bad = "\ufffd" * 7
    expected_xml = f'<r a="x">]]> &amp; <b>{bad}|\r\n\t\x7f</r>'
    assert entry.findtext(atom + "content") == expected_xml
    href = 'https://example.org/?a=1&b="<2>"\ufffd\t'
    assert [link.get("href") for link in entry.iterfind(atom + "link")] == [href]
    assert entry.findtext(atom + "title") == f"Q: S/{href}, T/t]]>&<\ufffd"
    parsed = feedparser.parse(str(tmp_path / "Q.atom"))
    assert not parsed.bozo, parsed.get("bozo_exception")
    assert "]]> &amp; <b>" in parsed.entries[0].content[0].value


def test_content_is_cdata_and_keeps_every_character(tmp_path: Path) -> None:
    """``]]>`` inside CDATA is split; a ``\\r`` (CDATA would lose it) is escaped."""
    texts = ["<a>]]></a>]]]]>x&amp;<![CDATA[y]]>", "<a>line\r\nnext]]></a>"]
    records = [_record("Q", n) | {"xml": text} for n, text in enumerate(texts)]
    AtomFeedWriter(tmp_path).update(records)
    raw = (tmp_path / "Q.atom").read_bytes()
    assert b"<![CDATA[<a>]]]]><![CDATA[></a>" in raw
    assert b"line&#13;\nnext" in raw
    root = etree.fromstring(raw)
    atom = "{http://www.w3.org/2005/Atom}"
    contents = [e.findtext(atom + "content") for e in root.iterfind(atom + "entry")]
    assert contents == texts[::-1]
