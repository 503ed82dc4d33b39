"""Atom (RFC 4287) rules the feed validator checks, as a test oracle for written feeds.

Each rule reports what feedvalidator reports, under its message name and with its
``parent``/``element`` parameters, so the rules themselves are checked against the
validator's own test cases (each fixture says in an ``Expect:`` comment what it
expects): ``test_spark_atom_rules.py``. The rules kept are the ones a feed writer can
break: required and repeated elements, date formats, identifiers, links.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import NamedTuple

from lxml import etree

ATOM = "http://www.w3.org/2005/Atom"
_A = f"{{{ATOM}}}"

#: The messages these rules give; a fixture expecting another one is not about them.
MESSAGES = frozenset(
    {
        "MissingElement",
        "DuplicateElement",
        "InvalidRFC3339Date",
        "UnexpectedWhitespace",
        "MissingContentOrAlternate",
        "DuplicateAtomLink",
        "DuplicateEntries",
        "InvalidURN",
        "InvalidTAG",
        "NotBlank",
    }
)
#: Messages feedvalidator gives as warnings (a "no error" fixture may have them).
WARNINGS = frozenset({"DuplicateEntries"})

_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|([+-])(\d{2}):(\d{2}))\Z"
)
_URN = re.compile(
    r"urn:[a-zA-Z0-9][a-zA-Z0-9-]{1,31}:([a-zA-Z0-9()+,.:=@;$_!*'-]|%[0-9A-Fa-f]{2})+\Z",
    re.IGNORECASE,
)
_TAG = re.compile(
    r"tag:([a-z0-9._-]+@)?[a-z0-9.-]+,(\d{4})(-(\d{2})(-(\d{2}))?)?:"
    r"[0-9a-zA-Z;/?:@&=+$._!~*'()%,-]*(#[0-9a-zA-Z;/?:@&=+$._!~*'()%,-]*)?\Z",
    re.IGNORECASE,
)
#: Elements that appear at most once in a feed or an entry.
_ONCE = ("id", "title", "updated", "subtitle", "summary", "content", "published", "rights",
         "icon", "logo", "generator", "source")  # fmt: skip
#: Elements whose text is a URI or a date: no surrounding whitespace.
_NO_SPACE = ("id", "updated", "published", "icon", "logo")
#: Elements that must hold something (text, markup, or a ``src``).
_NOT_BLANK = ("id", "title", "subtitle", "summary", "content", "generator")


class Finding(NamedTuple):
    """One message: its name and where (feedvalidator's ``parent``/``element``)."""

    message: str
    parent: str
    element: str


def check_feed(data: bytes) -> list[Finding]:
    """Every finding of the rules for one Atom document (a feed or a lone entry)."""
    root = etree.fromstring(data, etree.XMLParser(resolve_entities=False, no_network=True))
    found: list[Finding] = []
    if root.tag == _A + "entry":
        _check_container(root, "entry", found)
        return found
    if root.tag != _A + "feed":
        return found
    _check_container(root, "feed", found)
    feed_author = root.find(_A + "author") is not None
    seen: set[tuple[str, str]] = set()
    for entry in root.iterfind(_A + "entry"):
        _check_container(entry, "entry", found)
        source = entry.find(_A + "source")
        if source is not None:
            _check_container(source, "source", found)
        has_author = entry.find(_A + "author") is not None or (
            source is not None and source.find(_A + "author") is not None
        )
        if not feed_author and not has_author:
            found.append(Finding("MissingElement", "entry", "author"))
        key = (entry.findtext(_A + "id") or "", entry.findtext(_A + "updated") or "")
        if key in seen:
            found.append(Finding("DuplicateEntries", "entry", "id"))
        seen.add(key)
    return found


def _check_container(node: etree._Element, name: str, found: list[Finding]) -> None:
    """The rules of a feed, an entry or an entry's source."""
    if name != "source":
        for required in ("id", "title", "updated"):
            if node.find(_A + required) is None:
                found.append(Finding("MissingElement", name, required))
    for once in _ONCE:
        if len(node.findall(_A + once)) > 1:
            found.append(Finding("DuplicateElement", name, once))
    for child in node:
        if not isinstance(child.tag, str) or not child.tag.startswith(_A):
            continue
        local = child.tag[len(_A) :]
        text = child.text or ""
        if local in _NO_SPACE and text != text.strip():
            found.append(Finding("UnexpectedWhitespace", name, local))
        if local in ("updated", "published") and not _is_rfc3339(text.strip()):
            found.append(Finding("InvalidRFC3339Date", name, local))
        if local == "id":
            _check_id(text.strip(), name, found)
        blank = not "".join(str(t) for t in child.itertext()).strip() and not len(child)
        if local in _NOT_BLANK and blank and child.get("src") is None:
            found.append(Finding("NotBlank", name, local))
        if local in ("author", "contributor"):
            _check_person(child, local, found)
        if local == "category" and not (child.get("term") or "").strip():
            found.append(Finding("NotBlank", "category", "term"))
    links = node.findall(_A + "link")
    alternates = [(ln.get("type"), ln.get("hreflang")) for ln in links
                  if ln.get("rel", "alternate") == "alternate"]  # fmt: skip
    if len(alternates) != len(set(alternates)):
        found.append(Finding("DuplicateAtomLink", name, "link"))
    if name == "entry" and node.find(_A + "content") is None and not alternates:
        found.append(Finding("MissingContentOrAlternate", "feed", "entry"))


def _check_person(person: etree._Element, kind: str, found: list[Finding]) -> None:
    """An author or contributor: one non-blank name, at most one uri and email."""
    names = person.findall(_A + "name")
    if not names:
        found.append(Finding("MissingElement", kind, "name"))
    elif not (names[0].text or "").strip():
        found.append(Finding("NotBlank", kind, "name"))
    for once in ("name", "uri", "email"):
        if len(person.findall(_A + once)) > 1:
            found.append(Finding("DuplicateElement", kind, once))
    uri = person.findtext(_A + "uri")
    if uri is not None and uri != uri.strip():
        found.append(Finding("UnexpectedWhitespace", kind, "uri"))


def _check_id(text: str, parent: str, found: list[Finding]) -> None:
    lowered = text.lower()
    if lowered.startswith("urn:") and not _URN.match(text):
        found.append(Finding("InvalidURN", parent, "id"))
    if lowered.startswith("tag:") and not _valid_tag(text):
        found.append(Finding("InvalidTAG", parent, "id"))


def _valid_tag(text: str) -> bool:
    match = _TAG.match(text)
    if match is None:
        return False
    month, day = match.group(4), match.group(6)
    try:
        datetime(int(match.group(2)), int(month or 1), int(day or 1))
    except ValueError:
        return False
    return True


def _is_rfc3339(text: str) -> bool:
    match = _RFC3339.match(text)
    if match is None:
        return False
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    try:
        datetime(year, month, day, hour, minute, min(second, 59))
    except ValueError:
        return False
    if second > 60:
        return False
    if match.group(9) is not None:
        return int(match.group(10)) < 24 and int(match.group(11)) < 60
    return True
