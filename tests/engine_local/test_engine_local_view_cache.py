"""The view cache forgets evicted documents completely (thesis 6.5, Algorithm 5's inverse).

Removing documents, one at a time or in bulk, must leave exactly the slices a
cache that never saw them would compute, and no empty slice behind: a long run
that evicts by watermark (or a driver that drops held documents) would otherwise
keep one entry per string value it ever saw.
"""

from __future__ import annotations

import random

import pytest

from xscl.engine.state import DocState
from xscl.engine.view_cache import ViewCache
from xscl.xpath import DocumentRows

VALUES = ["a", "b", "c", "d", "e"]


def _doc(n: int, rng: random.Random) -> DocState:
    nodes = [str(i) for i in range(rng.randint(1, 4))]
    values = [(node, rng.choice(VALUES)) for node in nodes]
    rows = DocumentRows(values, [(rng.randint(1, 3), node) for node in nodes], [], [])
    return DocState.from_rows("S", f"d{n}", n, "<x/>", n, rows)


def _slices(cache: ViewCache, docs: list[DocState]) -> dict[str, dict[int, list[tuple[str, str]]]]:
    found = cache.lookup(VALUES, docs)
    return {
        s: {var: sorted((d.docid, node) for d, node in entries) for var, entries in part.items()}
        for s, part in found.items()
    }


@pytest.mark.parametrize("bulk", [False, True])
@pytest.mark.parametrize("seed", range(8))
def test_removing_documents_leaves_what_a_fresh_cache_would_hold(seed: int, bulk: bool) -> None:
    rng = random.Random(seed)
    docs = [_doc(n, rng) for n in range(12)]
    cache = ViewCache()
    for doc in docs:
        cache.add(doc)
    gone = rng.sample(docs, 7)
    if bulk:
        cache.remove_many(gone)
    else:
        for doc in gone:
            cache.remove(doc)
    kept = [d for d in docs if d not in gone]
    fresh = ViewCache()
    for doc in kept:
        fresh.add(doc)
    assert _slices(cache, kept) == _slices(fresh, kept)
    assert cache.rows == fresh.rows
    cache.remove_many(kept)
    assert (cache.entries, cache.rows) == (0, 0)  # no empty slice left behind
