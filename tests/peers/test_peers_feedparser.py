"""feedparser's ``Expect:`` lines held against our normalized item, not only feedparser.

Every file of feedparser's ``tests/wellformed`` (but ``http/``, whose expectations are
about HTTP headers) whose expectation holds for the installed feedparser is read as
``xscl poll`` reads it, and the expectation is evaluated against our normalized items
shown in feedparser's shape (``tests/peers/feedparser_expect.py``). Expectations about
what the normalized item does not hold raise ``KeyError``/``AttributeError`` and are
not evaluated; every other must hold, except the known differences of
``known/feedparser.txt``, each with its reason. A new difference fails, and so does a
listed one that went away.
"""

from __future__ import annotations

import io
from pathlib import Path

import feedparser
import pytest

from tests.peers.feedparser_expect import as_feedparser, expectation, safe_eval
from tests.peers.feeds import normalized_items
from tests.peers.known import compare, read_known

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
WELLFORMED = DATA / "feedparser-tests" / "wellformed"


def _holds_for_feedparser(expect: str, data: bytes) -> bool:
    """The expectation holds for the installed feedparser (not newer, not about HTTP)
    and is one ``safe_eval`` evaluates (no call but ``len`` and the dicts' own)."""
    try:
        return safe_eval(expect, feedparser.parse(io.BytesIO(data)))
    except (ValueError, NameError, KeyError, AttributeError, IndexError, TypeError):
        return False


@pytest.mark.shared_data
@pytest.mark.skipif(not WELLFORMED.is_dir(), reason=f"shared test data absent: {WELLFORMED}")
def test_feedparser_expectations_hold_for_our_normalized_items() -> None:
    differing: set[str] = set()
    checked: set[str] = set()
    for path in sorted(WELLFORMED.rglob("*.xml")):
        if path.parent.name == "http":
            continue
        name = path.relative_to(WELLFORMED).as_posix()
        expect = expectation(path)
        if not _holds_for_feedparser(expect, path.read_bytes()):
            continue
        items, result = normalized_items(path)
        try:
            holds = safe_eval(expect, as_feedparser(items, result))
        except (KeyError, AttributeError):
            continue  # about a field the normalized item does not hold
        except IndexError:
            holds = False  # an item feedparser has and we do not
        checked.add(name)
        if not holds:
            differing.add(name)
    new, stale = compare(differing, checked, read_known("feedparser.txt"))
    assert not new, f"expectations failing on our items, not in known/feedparser.txt: {new}"
    assert not stale, f"hold now, drop from known/feedparser.txt: {stale}"
    assert len(checked) > 700 and len(checked) - len(differing) > 450
