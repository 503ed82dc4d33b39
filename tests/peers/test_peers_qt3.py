"""W3C's QT3 XPath cases through both engines' function predicates (``tests/peers/qt3.py``).

Under the ``ci`` profile a fixed sample of ``CI_CASES`` cases runs (seed 2009), under
``deep`` every case (about 4,400); the known differences are ``known/qt3.txt`` (from
QT3's expected results, in both engines) and ``known/qt3-engines.txt`` (between the
engines). Any other difference fails, and so does a listed case that no longer differs.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.peers.known import compare, read_known
from tests.peers.qt3 import load_cases, run
from tests.profiles import deep, sample

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "qt3-subset"
CI_CASES = 1_500
#: Cases left out of the ``ci`` sample for their time alone (they run under ``deep``).
SLOW = {
    "cbcl-count-001": "counts a sequence of 3 billion items: 3-4 s in elementpath",
    "fn-distinct-values-2": "distinct values of a million items: 11-16 s in elementpath",
}

pytestmark = [
    pytest.mark.shared_data,
    pytest.mark.skipif(not DATA.is_dir(), reason=f"shared test data absent: {DATA}"),
]


def test_qt3_cases_give_the_suites_results_in_both_engines() -> None:
    every = list(load_cases(DATA))
    assert len(every) > 4_000  # what the subset holds that XSCL can run
    cases = every if deep() else sample([c for c in every if c.name not in SLOW], CI_CASES)
    outcomes = run(cases)
    local, reference = outcomes["local"], outcomes["reference"]
    ran = {c.name for c in cases}

    disagree = {name for name in ran if local[name] != reference[name]}
    new, stale = compare(disagree, ran, read_known("qt3-engines.txt"))
    assert not new, f"the engines disagree: {[(n, local[n], reference[n]) for n in new]}"
    assert not stale, f"the engines agree now, drop from known/qt3-engines.txt: {stale}"

    differing = {c.name for c in cases if reference[c.name] not in c.expected}
    new, stale = compare(differing, ran, read_known("qt3.txt"))
    assert not new, f"differences from QT3 not in known/qt3.txt: {new}"
    assert not stale, f"no longer differ, drop from known/qt3.txt: {stale}"
    assert sum(reference[c.name] == "holds" for c in cases) > len(cases) // 2


def test_the_known_differences_name_cases_of_the_suite() -> None:
    names = {c.name for c in load_cases(DATA)}
    for known in ("qt3.txt", "qt3-engines.txt"):
        assert set(read_known(known)) <= names, known
    assert set(SLOW) <= names


def test_the_language_doc_names_known_differences_only() -> None:
    """docs/language.md's "What differs from XPath 2.0" names QT3 cases of the list."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "language.md").read_text("utf-8")
    section = doc.split("**What differs from XPath 2.0.**", 1)[1].split("\n## ", 1)[0]
    known = read_known("qt3.txt")
    named = {n for n in re.findall(r"`([A-Za-z][\w-]*-\d+[a-z]?|Literals\d+)`", section)}
    assert named and named <= set(known), sorted(named - set(known))
