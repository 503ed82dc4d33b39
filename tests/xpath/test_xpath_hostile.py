"""Hostile and broken input never crashes Stage 1 and is counted with a stable code.

Covers ../shared/data/xml-attacks (billion laughs, quadratic blowup, external
entities: nothing is expanded or fetched), the not-well-formed cases of the
W3C XML conformance suite (xmltest/ entries are absent and skipped), the
malformed real feeds and feedparser's illformed set, invalid UTF-8, truncated
documents and 10,000-deep nesting.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from xscl.lang.ast import Block, NodeTest, Step
from xscl.lang.normal_form.model import VarDef
from xscl.xpath import ParseLimits, Stage1, Stage1Error

CODES = {
    "XSCL-X001",
    "XSCL-X002",
    "XSCL-X003",
    "XSCL-X004",
    "XSCL-X005",
}


def _stage() -> Stage1:
    stage = Stage1()
    for steps in [
        (Step("//", NodeTest("wildcard")),),
        (Step("//", NodeTest("text")),),
        (Step("//", NodeTest("attribute", "id")),),
        (),
    ]:
        stage.require_value(stage.register(VarDef(Block("S", steps))))
    return stage


def _run(stage: Stage1, docs: list[tuple[str, bytes]]) -> tuple[list[str], dict[str, str]]:
    """Evaluate each; return (the good documents' strings, {docid: error code})."""
    values: list[str] = []
    errors: dict[str, str] = {}
    for i, (name, xml) in enumerate(docs):
        try:
            rows = stage.evaluate_rows("S", name, i, xml)
        except Stage1Error as exc:
            errors[name] = exc.code
        else:
            values.extend(strval for _node, strval in rows.values)
    assert set(errors.values()) <= CODES
    return values, errors


@pytest.mark.shared_data
def test_xml_attacks_never_expand_entities(shared_data: Path) -> None:
    files = sorted((shared_data / "xml-attacks").rglob("*.x*"))
    assert len(files) >= 15
    stage = _stage()
    docs = [(str(p.relative_to(shared_data)), p.read_bytes()) for p in files]
    values, errors = _run(stage, docs)
    for name in [
        "xml-attacks/defusedxml/xmlbomb.xml",
        "xml-attacks/defusedxml/xmlbomb2.xml",
        "xml-attacks/defusedxml/quadratic.xml",
        "xml-attacks/defusedxml/cyclic.xml",
        "xml-attacks/defusedxml/external.xml",
        "xml-attacks/defusedxml/external_file.xml",
        "xml-attacks/elementpath/external_entity.xml",
        "xml-attacks/elementpath/with_entity.xml",
    ]:
        assert errors[name] == "XSCL-X005", name
    assert len(docs) - len(errors) >= 8  # plain documents and unused declarations are fine
    assert not any("lol" in v for v in values)


def _applies(tag: str) -> bool:
    """Cases a non-validating XML 1.0 (5th edition) parser that reads no external
    entity must reject: XML 1.1-only cases, cases that are errors only in editions
    1-4, and errors hidden in external parameter entities are left out."""
    if 'VERSION="1.1"' in tag or "XML1.1" in tag:
        return False
    edition = re.search(r'EDITION\s*=\s*"([^"]+)"', tag)
    if edition is not None and "5" not in edition.group(1).split():
        return False
    return re.search(r'ENTITIES\s*=\s*"(parameter|both)"', tag) is None


def _not_wf_cases(root: Path) -> list[Path]:
    cases: set[Path] = set()
    for catalog in root.rglob("*.xml"):
        text = catalog.read_text(encoding="utf-8", errors="replace")
        if "<TEST" not in text:
            continue
        for tag in re.findall(r"<TEST\b[^>]*>", text):
            if re.search(r'TYPE\s*=\s*"not-wf"', tag) is None or not _applies(tag):
                continue
            uri = re.search(r'URI\s*=\s*"([^"]+)"', tag)
            if uri is None:
                continue
            path = (catalog.parent / uri.group(1)).resolve()
            if path.is_file():  # xmltest/ is not shipped: skip its entries
                cases.add(path)
    return sorted(cases)


#: The W3C not-well-formed cases Stage 1 accepts, and why: libxml2 lets a byte order
#: mark win over an encoding declaration that contradicts it (the document is read in
#: the BOM's encoding, which is what it is written in).
W3C_ACCEPTED = {
    "eduni/misc/007.xml",  # hst-lhs-007: UTF-8 BOM, declared iso-8859-1
    "eduni/misc/008.xml",  # hst-lhs-008: UTF-16 BOM, declared utf-8
}


@pytest.mark.shared_data
def test_w3c_not_well_formed_cases_are_rejected(shared_data: Path) -> None:
    root = (shared_data / "xmlconf-w3c" / "xmlconf").resolve()
    cases = {p.relative_to(root).as_posix(): p for p in _not_wf_cases(root)}
    assert len(cases) == 540
    stage = _stage()
    _good, errors = _run(stage, [(name, p.read_bytes()) for name, p in cases.items()])
    assert set(cases) - set(errors) == W3C_ACCEPTED


@pytest.mark.shared_data
def test_malformed_feeds_are_counted(shared_data: Path) -> None:
    index = (shared_data / "feeds-index.tsv").read_text(encoding="utf-8").splitlines()[1:]
    malformed = [line.split("\t")[0] for line in index if line.split("\t")[2] != "yes"]
    assert len(malformed) == 45
    illformed = sorted((shared_data / "feedparser-tests" / "illformed").rglob("*.xml"))
    docs = [(p, (shared_data / p).read_bytes()) for p in malformed]
    docs += [(str(p), p.read_bytes()) for p in illformed]
    stage = _stage()
    _good, errors = _run(stage, docs)
    assert set(malformed) <= set(errors)


def test_invalid_utf8_truncated_and_deep_documents() -> None:
    stage = _stage()
    real = b'<item a="1"><title>caf\xc3\xa9 &amp; <![CDATA[x]]></title><!--c--><b id="7"/></item>'
    docs: list[tuple[str, bytes]] = [
        ("utf8", b"<a>\xff\xfe</a>"),
        ("utf8-attr", b'<a b="\xc3"/>'),
        ("empty", b""),
        ("text", b"just text"),
        ("two-roots", b"<a/><b/>"),
        ("deep", b"<a>" * 10_000 + b"</a>" * 10_000),
        ("ok", real),
    ]
    docs += [(f"trunc{i}", real[:i]) for i in range(1, len(real))]
    _values, errors = _run(stage, docs)
    assert len(docs) - len(errors) == 1 and "ok" not in errors
    assert errors["utf8"] == "XSCL-X004"
    assert errors["deep"] == "XSCL-X003"
    assert all(errors[f"trunc{i}"] for i in range(1, len(real)))


def test_configured_limits_are_enforced() -> None:
    stage = Stage1(ParseLimits(max_bytes=100, max_depth=3))
    stage.require_value(stage.register(VarDef(Block("S", (Step("//", NodeTest("wildcard")),)))))
    with pytest.raises(Stage1Error) as big:
        stage.evaluate_rows("S", "d", 0, b"<a>" + b"x" * 200 + b"</a>")
    assert big.value.code == "XSCL-X002"
    with pytest.raises(Stage1Error) as deep:
        stage.evaluate_rows("S", "d", 0, b"<a><b><c><d/></c></b></a>")
    assert deep.value.code == "XSCL-X003"
    assert len(stage.evaluate_rows("S", "d", 0, b"<a><b><c/></b></a>").values) == 3
    # A stream without definitions still checks its documents.
    with pytest.raises(Stage1Error):
        stage.evaluate_rows("T", "d", 0, b"<a><b><c><d/></c></b></a>")
