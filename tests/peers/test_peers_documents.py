"""Documents that must parse: feedvalidator's RSS cases and the W3C XML suite's valid ones.

* **feedvalidator** ``rss/``, ``rss20/``, ``rss11/``: each case is read as ``xscl poll``
  reads it, in both forms. Both forms give the same documents (one document, one
  docid, two forms), and a well-formed case gives one document per item element and
  no dead letter, except ``known/feedvalidator.txt``.
* **xmlconf** (XML 1.0, 5th edition) ``valid`` cases: each document, as text (decoded
  as its byte order mark or declaration says, as a JSON Lines envelope carries it), is
  accepted by Stage 1 (``--engine local`` and the Spark job) and by the reference, or
  refused by both with one code, as ``known/xmlconf.txt`` lists with its reason.

``tests/xpath/test_xpath_hostile.py`` holds the suite's not-well-formed cases.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.peers.known import compare, read_known
from xscl.connectors.feeds import FORMS, parse_feed
from xscl.errors import XmlDocumentError
from xscl.reference.xmltree import parse_xml
from xscl.xpath.safe_parse import check_depth, parse_document

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
FEEDVALIDATOR = DATA / "feedvalidator-testcases"
XMLCONF = DATA / "xmlconf-w3c" / "xmlconf"


@pytest.mark.shared_data
@pytest.mark.skipif(not FEEDVALIDATOR.is_dir(), reason=f"shared test data absent: {FEEDVALIDATOR}")
def test_feedvalidator_rss_cases_give_one_document_per_item() -> None:
    differing: set[str] = set()
    cases: set[str] = set()
    folders = [FEEDVALIDATOR / d for d in ("rss", "rss20", "rss11")]
    for path in sorted(p for folder in folders for p in folder.rglob("*.xml")):
        name = path.relative_to(FEEDVALIDATOR).as_posix()
        data = path.read_bytes()
        forms = {
            form: parse_feed(data, source=name, stream="S", form=form, first_seen_micros=0)
            for form in FORMS
        }
        raw, normalized = forms["raw"], forms["normalized"]
        docids = [d.docid for d in normalized.documents]
        assert [d.docid for d in raw.documents] == docids, name
        cases.add(name)
        if normalized.well_formed and (
            len(docids) != normalized.raw_items or raw.dead_letters or normalized.dead_letters
        ):
            differing.add(name)
    new, stale = compare(differing, cases, read_known("feedvalidator.txt"))
    assert not new, f"cases not read as their items, not in known/feedvalidator.txt: {new}"
    assert not stale, f"read as their items now, drop from known/feedvalidator.txt: {stale}"
    assert len(cases) > 550


def _applies(tag: str) -> bool:
    """A valid case of XML 1.0, 5th edition."""
    if 'VERSION="1.1"' in tag or "XML1.1" in tag:
        return False
    edition = re.search(r'EDITION\s*=\s*"([^"]+)"', tag)
    return edition is None or "5" in edition.group(1).split()


def _valid_cases() -> dict[str, Path]:
    cases: dict[str, Path] = {}
    for catalog in XMLCONF.rglob("*.xml"):
        text = catalog.read_text(encoding="utf-8", errors="replace")
        for tag in re.findall(r"<TEST\b[^>]*>", text):
            uri = re.search(r'URI\s*=\s*"([^"]+)"', tag)
            if re.search(r'TYPE\s*=\s*"valid"', tag) is None or uri is None or not _applies(tag):
                continue
            path = (catalog.parent / uri.group(1)).resolve()
            if path.is_file():  # xmltest/ is not shipped: its entries are skipped
                cases[path.relative_to(XMLCONF.resolve()).as_posix()] = path
    return cases


def _text(data: bytes) -> str:
    """The document as text: UTF-16 by its byte order mark, else its declared encoding."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16")
    declared = re.match(rb"""<\?xml[^>]*encoding\s*=\s*["']([^"']+)""", data)
    return data.decode(declared.group(1).decode("ascii") if declared else "utf-8").lstrip("\ufeff")


def _outcome(parse: Callable[[str], object], text: str) -> str:
    try:
        parse(text)
    except XmlDocumentError as error:
        return error.code
    return "accepted"


def _stage1(text: str) -> None:
    check_depth(parse_document(text))


@pytest.mark.shared_data
@pytest.mark.skipif(not XMLCONF.is_dir(), reason=f"shared test data absent: {XMLCONF}")
def test_w3c_valid_documents_are_accepted_by_every_engine() -> None:
    cases = _valid_cases()
    assert len(cases) > 500
    refused: set[str] = set()
    for name, path in cases.items():
        text = _text(path.read_bytes())
        local, reference = _outcome(_stage1, text), _outcome(parse_xml, text)
        assert local == reference, (name, local, reference)
        if local != "accepted":
            refused.add(name)
    new, stale = compare(refused, set(cases), read_known("xmlconf.txt"))
    assert not new, f"valid documents refused, not in known/xmlconf.txt: {new}"
    assert not stale, f"accepted now, drop from known/xmlconf.txt: {stale}"
