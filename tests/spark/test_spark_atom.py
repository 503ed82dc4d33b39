"""The Atom feed sink: valid Atom (feedparser, the validator's rules), readable, bounded,
idempotent, escaped."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import feedparser
import pytest
from lxml import etree

from xscl.connectors.document import format_ts
from xscl.results.atom import AtomFeedWriter, write_feeds_from_results
from xscl.results.commit import StagedPart, commit_batch
from xscl.service.subscriptions import SubscriptionLog

sys.path.insert(0, str(Path(__file__).resolve().parent))
from atom_rules import check_feed

BASE = 1_149_156_000_000_000
ROOT = Path(__file__).resolve().parents[2]
A = "{http://www.w3.org/2005/Atom}"


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
    assert check_feed((tmp_path / "Q1.atom").read_bytes()) == []
    parsed = feedparser.parse(str(tmp_path / "Q1.atom"))
    assert not parsed.bozo, parsed.get("bozo_exception")
    assert parsed.version == "atom10"
    assert parsed.feed.id == "urn:xscl:query:Q1"
    assert parsed.feed.updated == format_ts(BASE + 20 + 5_000_000)  # the newest entry's
    entries = parsed.entries
    assert [e.id for e in entries] == [f"urn:xscl:result:{n:032x}" for n in (2, 1, 0)]
    assert entries[0].updated == format_ts(BASE + 20 + 5_000_000)
    assert "xscl_result" not in entries[0]  # the record is in the results, by its id
    hrefs = [link.href for link in entries[0].links]
    assert hrefs == ["https://example.org/a/2", "urn:xscl:doc:T:t2"]
    assert entries[0].title == "v<2> & co: S/https://example.org/a/2 → T/t2"
    assert entries[0].content[0].type == "text/html"


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
    entry = root.find(A + "entry")
    assert entry is not None
    assert entry.find("{urn:xscl}result") is None  # the record is in the results, by its id
    # a docid with control characters or quotes is not a URL to link: urn: instead
    hrefs = [link.get("href") for link in entry.iterfind(A + "link")]
    assert hrefs == [
        "urn:xscl:doc:S:https%3A%2F%2Fexample.org%2F%3Fa%3D1%26b%3D%22%3C2%3E%22%02%09",
        "urn:xscl:doc:T:t%5D%5D%3E%26%3C%03",
    ]
    title = entry.findtext(A + "title")
    assert title == 'v<1> & co: S/https://example.org/?a=1&b="<2>"\ufffd\t → T/t]]>&<\ufffd'
    assert check_feed((tmp_path / "Q.atom").read_bytes()) == []
    parsed = feedparser.parse(str(tmp_path / "Q.atom"))
    assert not parsed.bozo, parsed.get("bozo_exception")


def test_an_entry_does_not_carry_the_result_xml(tmp_path: Path) -> None:
    """A ``SELECT *`` result copies its documents' elements (whole articles): the entry
    keeps the readable fields only, and its id names the committed record."""
    article = "<content>" + "lorem ipsum " * 5_000 + "</content>"
    record = _record("Q", 1) | {"xml": f'<result query="Q"><item>{article}</item></result>'}
    AtomFeedWriter(tmp_path).update([record])
    raw = (tmp_path / "Q.atom").read_bytes()
    assert b"lorem" not in raw and len(raw) < 4_000
    entry = etree.fromstring(raw).find(A + "entry")
    assert entry is not None
    assert entry.findtext(A + "id") == f"urn:xscl:result:{record['result_id']}"


# -- the RSS example's feeds, as a person reads them ------------------------------------


def test_the_rss_example_reads_well_in_a_feed_reader(tmp_path: Path) -> None:
    """Titles from the items and join values, links to the items, a readable body, the
    subscription's text; valid for feedparser and the validator's rules."""
    results = tmp_path / "results"
    staged = results / "_staging" / "p.jsonl"
    staged.parent.mkdir(parents=True)
    expected = (ROOT / "examples" / "rss" / "expected-results.jsonl").read_text(encoding="utf-8")
    staged.write_text(expected, encoding="utf-8")
    commit_batch(str(results), "0" * 20, [StagedPart(0, str(staged), 5)])
    registry = tmp_path / "registry"
    queries = (ROOT / "examples" / "rss" / "queries.xscl").read_text(encoding="utf-8")
    SubscriptionLog(registry).subscribe(queries, source="queries.xscl")
    feeds = tmp_path / "feeds"
    assert write_feeds_from_results(results, feeds, registry=registry) == {
        "advisory_coverage": 2, "busy_author": 1, "busy_then_release": 1, "crosspost": 1,
    }  # fmt: skip
    for feed in feeds.glob("*.atom"):
        assert check_feed(feed.read_bytes()) == [], feed.name
        parsed = feedparser.parse(str(feed))
        assert not parsed.bozo, (feed.name, parsed.get("bozo_exception"))
        assert [link.rel for link in parsed.feed.links] == ["self"]
        assert parsed.feed.updated == max(e.updated for e in parsed.entries)
    parsed = feedparser.parse(str(feeds / "advisory_coverage.atom"))
    assert parsed.feed.subtitle.startswith("vendor/item[contains(./title, 'Advisory')]")
    first = parsed.entries[-1]  # the older result
    assert first.title == (
        "CVE-2026-41122: Advisory ACME-2026-07: TLS session resumption bypass"
        " → Acme patches TLS resumption flaw"
    )
    assert first.link == "https://acme.example/security/2026-07"
    assert [(ln.rel, ln.href) for ln in first.links] == [
        ("alternate", "https://acme.example/security/2026-07"),
        ("related", "https://news.example/2026/11/acme-tls"),
    ]
    body = first.content[0].value
    assert "Joined on cve, term = <b>CVE-2026-41122</b>" in body
    link = '<a href="https://news.example/2026/11/acme-tls">Acme patches TLS resumption flaw</a>'
    assert link in body
    assert "news · 2026-11-03 07:15:00 UTC" in body
    chain = feedparser.parse(str(feeds / "busy_then_release.atom")).entries[0]
    assert chain.title == (
        "Acme patches TLS resumption flaw + Backup agents under scrutiny"
        " → Release notes: Acme Gateway 9.4"
    )
    busy = json.loads(expected.splitlines()[2])["result_id"]  # the published pair
    assert [ln.href for ln in chain.links] == [
        f"urn:xscl:result:{busy}",
        "https://acme.example/releases/9.4",
    ]
    selected = feedparser.parse(str(feeds / "crosspost.atom")).entries[0]
    assert selected.title == "https://acme.example/releases/9.4: Release notes: Acme Gateway 9.4"
    assert "<p>t: Release notes: Acme Gateway 9.4</p>" in selected.content[0].value


# -- where a feed says it lives (rel="self") ------------------------------------------


def _self_link(feed: Path) -> str | None:
    links = etree.fromstring(feed.read_bytes()).iterfind(A + "link")
    return next((x.get("href") for x in links if x.get("rel") == "self"), None)


@pytest.mark.parametrize("base_url", [None, "https://example.org/xscl/"])
def test_the_job_s_feeds_point_at_the_stable_folder_or_the_base_url(
    tmp_path: Path, base_url: str | None
) -> None:
    """Issue 36, defect 14: the feeds of ``xscl serve`` are written into one epoch's
    folder; their self link named that folder, stale after the next take-over."""
    from xscl.service.pair.epochs import EpochFolders
    from xscl.spark_plugin.job.sink import JobOutputWriter
    from xscl.spark_plugin.serve import ServeRequest, _job_plan
    from xscl.spark_plugin.session import XsclHome

    home = XsclHome(tmp_path)
    request = ServeRequest(home, "job", tmp_path / "spool", None, feed_base_url=base_url)
    folders = EpochFolders(tmp_path, "job", 2)
    plan = _job_plan(request, SubscriptionLog(tmp_path / "registry"), folders)
    sink = JobOutputWriter(plan.output, "jsonl", 5, feed_base_url=plan.feed_base_url)
    writer = sink._feed_writer()
    writer.update([_record("Q one", 1)])
    feed = folders.results / "feeds" / "Q one.atom"
    assert feed.exists()
    expected = (
        f"{(tmp_path / 'results' / 'job' / 'feeds').as_uri()}/Q%20one.atom"
        if base_url is None
        else "https://example.org/xscl/Q%20one.atom"
    )
    assert _self_link(feed) == expected
    assert "e00000002" not in (_self_link(feed) or "")
