"""Directories of XML files: one document per file or per record element."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from xscl.connectors.dead_letters import DeadLetter
from xscl.connectors.document import Document, parse_ts
from xscl.connectors.xmlfiles import XmlFileOptions, iter_xml_files


def test_one_document_per_file_with_mtime_and_path_ts(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.xml").write_text(
        '<?xml version="1.0" encoding="utf-8"?>'
        "<book><published>2006-06-01T10:00:00Z</published></book>"
    )
    (tmp_path / "sub" / "b.xml").write_text("<book/>")
    (tmp_path / "skip.txt").write_text("<book/>")
    os.utime(tmp_path / "sub" / "b.xml", ns=(0, 1_500_000_000_123_456_789))
    items = list(iter_xml_files([tmp_path], XmlFileOptions("S")))
    assert [(d.docid, d.ts_micros) for d in items if isinstance(d, Document)][1] == (
        "sub/b.xml",
        1_500_000_000_123_456,
    )
    with_path = list(iter_xml_files([tmp_path / "a.xml"], XmlFileOptions("S", ts_path="published")))
    assert with_path == [
        Document(
            "S",
            "a.xml",
            parse_ts("2006-06-01T10:00:00Z"),
            "<book><published>2006-06-01T10:00:00Z</published></book>",
            str(tmp_path / "a.xml"),
        )
    ]


def test_records_via_iterparse_with_paths(tmp_path: Path) -> None:
    records = "".join(
        f'<r:rec xmlns:r="urn:r" id="k{i}">'
        f"<when>Mon, 0{i} Jan 2024 00:00:00 GMT</when><v>{i}</v></r:rec>"
        for i in range(1, 6)
    )
    (tmp_path / "big.xml").write_text(f"<dump>{records}<rec id='bad'><v/></rec></dump>")
    options = XmlFileOptions("S", record_tag="rec", ts_path="when", docid_path="@id")
    items = list(iter_xml_files([tmp_path / "big.xml"], options))
    docs = [i for i in items if isinstance(i, Document)]
    assert [d.docid for d in docs] == ["k1", "k2", "k3", "k4", "k5"]
    assert docs[1].ts_micros == parse_ts("2024-01-02T00:00:00Z")
    assert docs[0].xml.startswith('<r:rec xmlns:r="urn:r" id="k1">')
    (letter,) = [i for i in items if isinstance(i, DeadLetter)]
    assert letter.code == "XSCL-C013" and letter.line == 6
    by_name = list(iter_xml_files([tmp_path / "big.xml"], XmlFileOptions("S", record_tag="v")))
    assert [d.docid for d in by_name if isinstance(d, Document)][:2] == ["big.xml#1", "big.xml#2"]


def test_broken_hostile_and_deep_files_are_dead_letters(tmp_path: Path) -> None:
    (tmp_path / "1-truncated.xml").write_text("<a><b>text</b>")
    (tmp_path / "2-utf8.xml").write_bytes(b"<a>\xff\xfe</a>")
    (tmp_path / "3-deep.xml").write_text("<a>" * 10_000 + "</a>" * 10_000)
    (tmp_path / "4-bomb.xml").write_text(
        '<!DOCTYPE x [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
        '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]><x>&c;&c;</x>'
    )
    (tmp_path / "5-external.xml").write_text(
        '<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><x>&e;</x>'
    )
    (tmp_path / "6-ok.xml").write_text("<ok/>")
    items = list(iter_xml_files([tmp_path], XmlFileOptions("S")))
    kinds = [(type(i).__name__, getattr(i, "code", None)) for i in items]
    assert kinds[:3] == [("DeadLetter", "XSCL-C012")] * 3
    assert isinstance(items[-1], Document) and items[-1].xml == "<ok/>"
    for item in items[3:5]:  # entities are never expanded, nothing is read from disk
        assert isinstance(item, Document)
        assert "aaaa" not in item.xml and "root:" not in item.xml
    truncated = list(
        iter_xml_files([tmp_path / "1-truncated.xml"], XmlFileOptions("S", record_tag="b"))
    )
    assert [type(i).__name__ for i in truncated] == ["Document", "DeadLetter"]


@pytest.mark.parametrize("record_tag", [None, "b"])
def test_an_unreadable_file_is_a_dead_letter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, record_tag: str | None
) -> None:
    """Unreadable, simulated (root reads everything): reading the file fails with EACCES."""
    import errno

    import xscl.connectors.xmlfiles as xmlfiles

    path = tmp_path / "locked.xml"
    path.write_text("<a><b>x</b></a>")

    def denied(*_args: object, **_kwargs: object) -> None:
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr(Path, "read_bytes", denied)
    monkeypatch.setattr(xmlfiles.etree, "iterparse", denied)
    (item,) = iter_xml_files([path], XmlFileOptions("S", record_tag=record_tag))
    assert isinstance(item, DeadLetter)
    assert (item.source, item.stream, item.code) == (str(path), "S", "XSCL-C012")
    assert item.reason.startswith("cannot read file: ") and "Permission denied" in item.reason


def test_xscl_poll_reads_xml_files_into_the_spool(tmp_path: Path) -> None:
    """Issue 36, deliverable 4: ``xmlfiles`` was wired to no command; ``poll --xml`` reads
    folders of XML files (one document per file or per record), bad files dead-lettered."""
    import json

    from xscl.cli.main import main
    from xscl.connectors.spool import SpoolReader

    folder = tmp_path / "books"
    folder.mkdir()
    (folder / "a.xml").write_text("<book><id>b1</id><at>2006-06-01T10:00:00Z</at></book>")
    (folder / "bad.xml").write_text("<book>")
    spool = tmp_path / "spool"
    argv = ["poll", "--xml", "--stream", "books", "--spool", str(spool), "--json"]
    assert main([*argv, "--docid-path", "id", "--ts-path", "at", str(folder)]) == 0
    ((_, doc),) = SpoolReader(spool).read(0, 1)
    assert (doc.stream, doc.docid, doc.ts) == ("books", "b1", "2006-06-01T10:00:00Z")
    (letter,) = [json.loads(t) for t in (spool / "deadletter.jsonl").read_text().splitlines()]
    assert (letter["source"], letter["code"]) == (str(folder / "bad.xml"), "XSCL-C012")
    records = tmp_path / "records.xml"
    records.write_text("<all><r><n>1</n></r><r><n>2</n></r></all>")
    assert main([*argv, "--record", "r", str(records)]) == 0
    assert [d.docid for _, d in SpoolReader(spool).read(1, 3)] == ["records.xml#1", "records.xml#2"]
    assert main(["poll", "--record", "r", "--spool", str(spool), str(records)]) == 2
