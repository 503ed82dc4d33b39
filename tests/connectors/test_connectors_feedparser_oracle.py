"""feedparser's own ``wellformed`` tests as an oracle for our feedparser call path.

Each file states ``Expect:`` as a Python expression over feedparser's result. We run a
fixed sample of the rss/atom/atom10/rdf ones through ``feedparser_parse`` (the one
call the connectors make) and evaluate the expression safely
(``tests/peers/feedparser_expect.safe_eval``). ``tests/peers/test_peers_feedparser.py``
holds the same expectations against our normalized items.
"""

from __future__ import annotations

import io
import random
from pathlib import Path

import feedparser
import pytest

from tests.peers.feedparser_expect import expectation, safe_eval
from xscl.connectors.feeds import feedparser_parse

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
WELLFORMED = DATA / "feedparser-tests" / "wellformed"
SAMPLE = 200
#: Cases about HTML sanitizing and relative-URI rewriting *inside HTML content*, which
#: ``feedparser_parse`` turns off on purpose (see its docstring: 3x faster; the engine
#: matches text). Every other case must hold.
HTML_REWRITING_CASES = {
    "atom/relative_uri.xml",
    "atom/relative_uri_inherit.xml",
    "atom/relative_uri_inherit_2.xml",
    "atom10/missing_quote_in_attr.xml",
    "atom10/qna.xml",
    "atom10/relative_uri.xml",
    "atom10/relative_uri_inherit.xml",
    "atom10/relative_uri_inherit_2.xml",
    "atom10/tag_in_attr.xml",
    "rss/item_description_br.xml",
    "rss/item_description_br_shorttag.xml",
    "rss/item_description_not_a_doctype.xml",
}
def _cases() -> list[Path]:
    if not WELLFORMED.is_dir():
        return []
    files = sorted(
        p for d in ("rss", "atom", "atom10", "rdf") for p in (WELLFORMED / d).glob("*.xml")
    )
    return random.Random(2009).sample(files, min(SAMPLE, len(files)))


def test_safe_eval_refuses_code() -> None:
    with pytest.raises(ValueError):
        safe_eval("__import__('os').system('true')", {})
    with pytest.raises(ValueError):
        safe_eval("feed.__class__", {"feed": {}})
    assert safe_eval("not bozo and len(entries) == 0", {"bozo": False, "entries": []})


@pytest.mark.shared_data
@pytest.mark.skipif(not WELLFORMED.is_dir(), reason=f"shared test data absent: {WELLFORMED}")
def test_feedparser_expectations_hold_through_our_call_path() -> None:
    cases = _cases()
    assert len(cases) == SAMPLE
    failures, upstream_newer, checked = [], [], 0
    for path in cases:
        name = f"{path.parent.name}/{path.name}"
        if name in HTML_REWRITING_CASES:
            continue
        data = path.read_bytes()
        if not safe_eval(expectation(path), feedparser.parse(io.BytesIO(data))):
            upstream_newer.append(name)  # the test is newer than the installed feedparser
            continue
        checked += 1
        if not safe_eval(expectation(path), feedparser_parse(data)):
            failures.append(name)
    assert not failures, f"{len(failures)}/{checked} expectations fail: {failures}"
    assert checked >= SAMPLE - len(HTML_REWRITING_CASES) - 10, (checked, upstream_newer)
