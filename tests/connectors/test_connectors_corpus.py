"""Real feeds from ../shared/data: every file goes through, counts are sensible, and
``xscl poll`` end to end on the 16 daily snapshots of one feed."""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import pytest

from xscl.cli import poll as poll_command
from xscl.connectors.feeds import FORMS, parse_feed
from xscl.connectors.poller import Poller, PollSummary, expand_feed_sources
from xscl.connectors.spool import Spool, SpoolReader

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
INDEX = DATA / "feeds-index.tsv"
needs_data = pytest.mark.skipif(not INDEX.is_file(), reason=f"shared test data absent: {DATA}")
pytestmark = [pytest.mark.shared_data, needs_data]


def _index() -> dict[str, dict[str, str]]:
    with open(INDEX, encoding="utf-8", newline="") as handle:
        return {row["path"]: row for row in csv.DictReader(handle, delimiter="\t")}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> PollSummary:
    """One poll (raw form) over every file of every feeds-* folder."""
    folders = sorted(str(p) for p in DATA.glob("feeds-*") if p.is_dir())
    with Spool(tmp_path_factory.mktemp("corpus-spool")) as spool:
        return Poller(spool, stream="feeds", form="raw", now_micros=lambda: 0).poll(
            expand_feed_sources(folders)
        )


@pytest.mark.slow
def test_every_feed_file_goes_through(corpus: PollSummary) -> None:
    index = _index()
    polled = {
        Path(r.source).resolve().relative_to(DATA.resolve()).as_posix(): r for r in corpus.reports
    }
    assert set(polled) == set(index)  # 370 files: the index lists them all, .json are skipped
    assert corpus.feeds == corpus.done == len(index) == 370
    # Well-formed files: our lxml item count equals the index's strict count, except
    # four the index counts differently: gzip-compressed and iconv-encoded files (0
    # there), items illegally nested inside items (the index counts nested ones too), and
    # an XHTML page holding Atom entries (the index counts feed roots only).
    known = {"compressed.xml", "iconv.xml", "illegally-nested.xml", "DuplicateContentAtomFeed.xml"}
    for path, row in index.items():
        report = polled[path]
        if row["wellformed"] == "yes" and Path(path).name not in known:
            assert report.raw_items == int(row["items"] or 0), path


@pytest.mark.slow
def test_corpus_totals_are_sensible(corpus: PollSummary) -> None:
    index = _index()
    strict = sum(int(r["items"] or 0) for r in index.values())
    assert strict == 8122
    # feedparser recovers more than the strict count (broken feeds, nested items):
    assert corpus.items >= strict
    assert corpus.new + corpus.duplicate == corpus.items
    assert corpus.feeds_ok + corpus.feeds_error == corpus.feeds
    # the few feeds with nothing recoverable are errors, each with a dead letter
    assert 0 < corpus.feeds_error <= 15
    assert corpus.dead_letters == corpus.feeds_error + corpus.failed_items


@pytest.mark.slow
def test_the_45_malformed_feeds_are_counted(corpus: PollSummary) -> None:
    malformed = {p for p, row in _index().items() if row["wellformed"] != "yes"}
    assert len(malformed) == 45
    by_path = {
        Path(r.source).resolve().relative_to(DATA.resolve()).as_posix(): r for r in corpus.reports
    }
    for path in malformed:
        report = by_path[path]
        assert not report.well_formed or report.bozo, path
        assert report.items > 0 or report.status == "error", path
    assert corpus.feeds_not_well_formed >= 45


#: feedparser's illformed fixtures by class, read by hand (their items, their "Expect:"
#: line): (items recovered, feeds failed, bozo), the same in both forms.
ILLFORMED: dict[str, tuple[int, int, bool]] = {
    # broken and nothing to recover: the feed fails (a dead letter), no item
    "aaa_illformed.xml": (0, 1, True),  # <rss> never closed, no item
    "rss_empty_document.xml": (0, 1, True),  # a comment and nothing else
    "undeclared_namespace.xml": (0, 1, True),  # itunes: prefix unbound, no item
    "chardet/big5.xml": (0, 1, True),  # undeclared Big5, an Atom feed without entries
    # broken, and its one item recovered
    "chardet/eucjp.xml": (1, 0, True),  # undeclared encodings: feedparser guesses them
    "chardet/euckr.xml": (1, 0, True),
    "chardet/gb2312.xml": (1, 0, True),
    "chardet/koi8r.xml": (1, 0, True),
    "chardet/shiftjis.xml": (1, 0, True),
    "chardet/tis620.xml": (1, 0, True),
    "chardet/windows1255.xml": (1, 0, True),
    "rdf_channel_empty_textinput.xml": (1, 0, True),  # </rdf:RDF never closed
    "rss_incomplete_cdata.xml": (1, 0, True),
    "rss_item_link_corrupted_ampersands.xml": (1, 0, True),  # </rss never closed
    # well-formed XML with bad GeoRSS: the item, no error
    "geo/georss_point_no_coords.xml": (1, 0, False),
    "geo/georss_polygon_insufficient_coords.xml": (1, 0, False),
    "geo/gml_point.xml": (1, 0, False),
    # a channel without items, nothing wrong for feedparser
    "always_strip_doctype.xml": (0, 0, False),  # Expect: not bozo
    "http_high_bit_date.xml": (0, 0, False),  # a non-ASCII date in ISO-8859-7
}


def test_feedparser_illformed_set_gives_the_expected_counts() -> None:
    folder = DATA / "feedparser-tests" / "illformed"
    files = {p.relative_to(folder).as_posix(): p for p in folder.rglob("*.xml")}
    assert set(files) == set(ILLFORMED)
    for name, expected in ILLFORMED.items():
        for form in FORMS:
            result = parse_feed(
                files[name].read_bytes(), source=name, stream="S", form=form, first_seen_micros=0
            )
            got = (result.recovered, result.failed, result.bozo)
            assert got == expected, (name, form)


def test_invalid_utf8_and_truncated_feeds() -> None:
    path = DATA / "feeds-stream-youthopp" / "2026-08-07.xml"
    data = path.read_bytes()
    broken = data.replace(b"<title>", b"<title>\xff\xfe", 3)
    result = parse_feed(broken, source="u", stream="S", form="raw", first_seen_micros=0)
    assert result.bozo and result.recovered == 10
    half = data[: len(data) // 2]
    for form in FORMS:
        cut = parse_feed(half, source="t", stream="S", form=form, first_seen_micros=0)
        assert cut.bozo and not cut.well_formed
        assert 1 <= cut.recovered < 10
        assert cut.recovered + cut.failed >= cut.entries


def test_xscl_poll_end_to_end_on_daily_snapshots(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = DATA / "feeds-stream-youthopp"
    parser = argparse.ArgumentParser()
    poll_command.register(parser.add_subparsers())
    args = parser.parse_args(
        ["poll", "--spool", str(tmp_path / "spool"), "--stream", "youth", "--json", str(folder)]
    )
    assert args.func(args) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert "poll: feeds 16/16" in captured.err

    # the same counts, directly
    files = sorted(folder.glob("*.xml"))
    docids: list[str] = []
    for path in files:
        result = parse_feed(
            path.read_bytes(), source=str(path), stream="youth", first_seen_micros=0
        )
        docids.extend(d.docid for d in result.documents)
    assert (summary["feeds"], summary["feeds_ok"], summary["errors"]) == (16, 16, 0)
    assert summary["items"] == len(docids) == 160
    assert summary["new"] == len(set(docids)) == 135
    assert summary["duplicate"] == len(docids) - len(set(docids)) == 25
    stored = SpoolReader(tmp_path / "spool").read(0, 10**6)
    assert sorted(d.docid for _, d in stored) == sorted(set(docids))

    # a second run adds nothing: everything is a duplicate
    assert args.func(args) == 0
    again = json.loads(capsys.readouterr().out)
    assert (again["new"], again["duplicate"]) == (0, 160)


def test_poll_usage_errors(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser()
    poll_command.register(parser.add_subparsers())
    args = parser.parse_args(["poll", "--spool", str(tmp_path), "--stream", "1bad", "x"])
    assert args.func(args) == 2
    with pytest.raises(SystemExit) as info:
        parser.parse_args(["poll", "--form", "pretty", "x"])
    assert info.value.code == 2
