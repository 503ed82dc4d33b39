"""The Atom rules of ``atom_rules`` agree with the feed validator's own test cases.

Each fixture of ``../shared/data/feedvalidator-testcases/atom`` says in an ``Expect:``
comment what the validator reports for it: ``Name{parent:..,element:..}`` (reported
there), ``!Name{...}`` (not reported), ``ValidURN``/``ValidTAG`` (the id is fine) or
``!Error`` (no error at all). Fixtures about other messages, and the few that are
not well-formed XML, are not about these rules.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from lxml import etree

sys.path.insert(0, str(Path(__file__).resolve().parent))
from atom_rules import MESSAGES, WARNINGS, check_feed

FIXTURES = (
    Path(__file__).resolve().parents[2]
    / ".."
    / "shared"
    / "data"
    / ("feedvalidator-testcases/atom")
)
_EXPECT = re.compile(r"Expect:\s*(!?)(\w+)(?:\{([^}]*)\})?")


def _about_these_rules(path: Path) -> bool:
    match = _EXPECT.search(path.read_text(encoding="utf-8", errors="replace"))
    if match is None:
        return False
    name = match.group(2)
    if name == "Error":
        return match.group(1) == "!"
    return name in MESSAGES or name.replace("Valid", "Invalid", 1) in MESSAGES


CASES = (
    sorted(p for p in FIXTURES.rglob("*.xml") if _about_these_rules(p)) if FIXTURES.is_dir() else []
)


def test_the_fixtures_are_there() -> None:
    if not FIXTURES.is_dir():
        pytest.skip(f"shared test data not found at {FIXTURES} (../shared/data from the repo root)")
    assert len(CASES) > 300


@pytest.mark.parametrize("path", CASES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_rules_report_what_the_validator_expects(path: Path) -> None:
    data = path.read_bytes()
    match = _EXPECT.search(data.decode("utf-8", "replace"))
    assert match is not None
    negated, name, params = match.group(1) == "!", match.group(2), match.group(3)
    try:
        found = check_feed(data)
    except etree.XMLSyntaxError:
        pytest.skip("not well-formed XML: the validator's XML layer, not these rules")
    where = dict(p.split(":", 1) for p in params.split(",")) if params else {}
    if name == "Error":
        assert {f.message for f in found} <= WARNINGS, found
        return
    if name.startswith("Valid"):
        name, negated = name.replace("Valid", "Invalid", 1), True
    hit = any(
        f.message == name
        and where.get("parent", f.parent) == f.parent
        and where.get("element", f.element) == f.element
        for f in found
    )
    assert hit != negated, found
