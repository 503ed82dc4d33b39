"""Our normalized item against gofeed's and fastfeedparser's expected JSON, per field.

Every fixture of ``gofeed-testdata`` that states items (its RSS and Atom parsers'
output) and every ``feeds-kagi-integration`` feed with fastfeedparser's ``.json`` is
read as ``xscl poll`` reads it; each field the peer states (title, link, id, authors,
categories, summary, content, published, updated) must equal ours
(``tests/peers/feeds.py`` says how both are put side by side), except the known
differences of ``known/gofeed.txt`` and ``known/fastfeedparser.txt``, each with its
reason. A new difference fails, and so does a listed one that went away.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.peers.feeds import (
    differing_fields,
    fastfeedparser_item,
    gofeed_item,
    normalized_items,
)
from tests.peers.known import compare, read_known

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
GOFEED = DATA / "gofeed-testdata"
KAGI = DATA / "feeds-kagi-integration"


def _skip_without(folder: Path) -> pytest.MarkDecorator:
    return pytest.mark.skipif(not folder.is_dir(), reason=f"shared test data absent: {folder}")


@pytest.mark.shared_data
@_skip_without(GOFEED)
def test_gofeed_fields_equal_ours_but_for_known_differences() -> None:
    differing: set[str] = set()
    ran: set[str] = set()
    fields = 0
    for kind, key in (("rss", "items"), ("atom", "entries")):
        for expected in sorted((GOFEED / kind).glob("*.json")):
            entries = json.loads(expected.read_text(encoding="utf-8")).get(key) or []
            if not entries:
                continue  # a fixture about the feed's own fields
            name = f"{kind}/{expected.stem}.xml"
            want = [gofeed_item(entry, kind) for entry in entries]
            ours, _result = normalized_items(expected.with_suffix(".xml"))
            fields += sum(len(w) for w in want)
            ran.update(f"{name} {field}" for w in want for field in w)
            differing.update(f"{name} {field}" for field in differing_fields(want, ours))
    new, stale = compare(differing, ran, read_known("gofeed.txt"))
    assert not new, f"differences from gofeed not in known/gofeed.txt: {new}"
    assert not stale, f"no longer differ, drop from known/gofeed.txt: {stale}"
    assert fields > 140 and len(ran) > 2 * len(differing)


@pytest.mark.shared_data
@_skip_without(KAGI)
def test_fastfeedparser_fields_equal_ours_but_for_known_differences() -> None:
    differing: set[str] = set()
    ran: set[str] = set()
    for expected in sorted(KAGI.glob("*.json")):
        feed = expected.with_suffix(".xml")
        if not feed.is_file():  # json_feed_sample: a JSON Feed, which xscl does not read
            continue
        want = [fastfeedparser_item(e) for e in json.loads(expected.read_text())["entries"]]
        ours, _result = normalized_items(feed)
        ran.update(f"{feed.name} {field}" for field in ("items", *want[0]))
        differing.update(f"{feed.name} {field}" for field in differing_fields(want, ours))
    new, stale = compare(differing, ran, read_known("fastfeedparser.txt"))
    assert not new, f"differences from fastfeedparser not in known/fastfeedparser.txt: {new}"
    assert not stale, f"no longer differ, drop from known/fastfeedparser.txt: {stale}"
    assert len(ran) > 5 * len(differing)
