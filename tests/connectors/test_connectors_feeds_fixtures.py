"""Normalisation checked against fixtures that state their own expectations.

Each file in ``fixtures/`` starts with an XML comment (like feedparser's tests) holding
``Description:`` and ``Expect:`` lines. An ``Expect:`` line is ``LHS == VALUE`` or
``LHS contains VALUE``:

* ``items`` / ``failed`` / ``bozo`` / ``well_formed``: counts and flags of the feed;
* ``N.field``: the N-th item (1-based) of the ``normalized`` form: ``docid``, ``ts``
  or a child path of the canonical ``<item>`` (``title``, ``channel/title``...);
  repeated children are joined with `` | ``; an empty VALUE means "absent";
* ``N.raw``: the N-th item's ``raw`` XML.

VALUE may use XML character references (``&#233;``) to stay ASCII. In
``sha256:{source}|title|content`` the docid's hash rule is spelled out.
"""

from __future__ import annotations

import hashlib
import html
import re
from pathlib import Path

import pytest
from lxml import etree

from xscl.connectors.feeds import FORMS, FeedResult, parse_feed

FIXTURES = Path(__file__).resolve().parent / "fixtures"
FIRST_SEEN = 1_714_521_600_000_000  # 2024-05-01T00:00:00Z
_EXPECT = re.compile(r"^Expect:[ \t]*(?P<lhs>\S+)[ \t]+(?P<op>==|contains)[ \t]?(?P<rhs>.*)$", re.M)


def _expectations(data: bytes) -> list[tuple[str, str, str]]:
    comment = data[data.index(b"<!--") + 4 : data.index(b"-->")].decode("ascii")
    assert "Description:" in comment
    found = [
        (m["lhs"], m["op"], html.unescape(m["rhs"].strip())) for m in _EXPECT.finditer(comment)
    ]
    assert found, "fixture states no expectation"
    return found


def _field(xml: str, path: str) -> str:
    item = etree.fromstring(xml)
    assert item.tag == "item"
    return " | ".join(el.text or "" for el in item.findall(path))


def _check(path: Path) -> int:
    data = path.read_bytes()
    source = str(path)
    results: dict[str, FeedResult] = {
        form: parse_feed(data, source=source, stream="S", form=form, first_seen_micros=FIRST_SEEN)
        for form in FORMS
    }
    norm = results["normalized"]
    flags = {
        "items": str(norm.recovered),
        "failed": str(norm.failed),
        "bozo": str(norm.bozo).lower(),
        "well_formed": str(norm.well_formed).lower(),
    }
    checked = 0
    for lhs, op, rhs in _expectations(data):
        if lhs in flags:
            actual = flags[lhs]
        else:
            index, _, name = lhs.partition(".")
            doc = norm.documents[int(index) - 1]
            if name == "docid":
                actual = doc.docid
                if rhs.startswith("sha256:{source}|"):
                    _, title, content = rhs.split("|")
                    text = f"{source}\n{title}\n{content}"
                    rhs = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
            elif name == "ts":
                actual = doc.ts
            elif name == "raw":
                actual = results["raw"].documents[int(index) - 1].xml
                assert results["raw"].documents[int(index) - 1].docid == doc.docid
            else:
                actual = _field(doc.xml, name)
        if op == "==":
            assert actual == rhs, f"{path.name}: {lhs}: {actual!r} != {rhs!r}"
        else:
            assert rhs in actual, f"{path.name}: {lhs}: {rhs!r} not in {actual!r}"
        checked += 1
    return checked


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.xml")))
def test_fixture_expectations(name: str) -> None:
    assert _check(FIXTURES / name) >= 4


def test_fixture_set_covers_the_formats() -> None:
    names = {p.name for p in FIXTURES.glob("*.xml")}
    assert {
        "rss091.xml",
        "rss10_rdf.xml",
        "rss20_categories_guid.xml",
        "atom_authors_base.xml",
        "bozo_rss.xml",
    } <= names


def test_normalized_layout_order_and_no_whitespace() -> None:
    data = (FIXTURES / "atom_authors_base.xml").read_bytes()
    doc = parse_feed(data, source="a", stream="S", first_seen_micros=0).documents[0]
    item = etree.fromstring(doc.xml)
    tags = [child.tag for child in item]
    order = [
        "title",
        "link",
        "id",
        "author",
        "author",
        "category",
        "category",
        "summary",
        "content",
        "published",
        "updated",
        "channel",
    ]
    assert tags == order
    assert "\n" not in doc.xml
    channel = item.find("channel")
    assert channel is not None and [c.tag for c in channel] == ["title", "link"]


def test_both_forms_read_the_declared_encoding() -> None:
    """Issue 36 defect 4: one document, one text. feedparser "repairs" text that reads
    as UTF-8 taken for Latin-1; the declaration wins in both forms. Only the C1 controls
    differ (the fixture says why)."""
    data = (FIXTURES / "latin1_declared_utf8_bytes.xml").read_bytes()
    forms = {
        form: parse_feed(data, source="f", stream="S", form=form, first_seen_micros=0)
        for form in FORMS
    }
    raw = etree.fromstring(forms["raw"].documents[0].xml)
    normalized = etree.fromstring(forms["normalized"].documents[0].xml)
    declared = "caf\u00c3\u00a9 cr\u00c3\u00a8me"
    assert raw.findtext("title") == normalized.findtext("title") == declared
    assert raw.findtext("description") == "\x93quoted\x94"
    assert normalized.findtext("summary") == "\u201cquoted\u201d"
