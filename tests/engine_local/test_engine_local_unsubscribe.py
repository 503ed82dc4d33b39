"""Removing queries gives their Stage 1 work back; the others' results do not change."""

from __future__ import annotations

from xscl.engine import LocalEngine
from xscl.lang.parser import parse_queries

KEEP = "keep: S//item->i[./author->a] JOIN {a = b, INF} S//item->j[./author->b];"
GONE = (
    "gone1: S//entry->e[./link/@href->h] FOLLOWED BY {h = g, 1d} S//item->k[./link->g];\n"
    "gone2: S//item->i[./title->t][./author->x] JOIN {t = u AND x = y, INF} "
    "S//item->j[./title->u][./author->y];"
)
DOCS = [
    ("S", f"d{i}", i * 1_000_000,
     f"<item><title>t{i % 2}</title><author>a{i % 3}</author><link>l{i}</link></item>")
    for i in range(8)
]


def test_removed_queries_release_stage1_and_the_rest_is_unchanged() -> None:
    alone = LocalEngine(parse_queries(KEEP))
    before = dict(alone.stage1.registered)
    rows = [alone.stage1.evaluate_rows(*doc) for doc in DOCS]  # what KEEP needs of Stage 1
    expected = sorted(r.result_id for r in alone.process(DOCS))
    assert expected

    engine = LocalEngine(parse_queries(KEEP + "\n" + GONE))
    assert len(engine.stage1.registered) > len(before)
    assert engine.remove_query("gone1") and engine.remove_query("gone2")
    assert engine.stage1.registered == before  # same ids: registered first
    assert [engine.stage1.evaluate_rows(*doc) for doc in DOCS] == rows  # no requirement left
    assert sorted(r.result_id for r in engine.process(DOCS)) == expected

    # Adding a removed query again works and shares what it can.
    engine.add_query(next(iter(parse_queries(GONE))))
    assert len(engine.stage1.registered) > len(before)
    engine.remove_query("gone1")
    assert engine.stage1.registered == before
    assert [engine.stage1.evaluate_rows(*doc) for doc in DOCS] == rows

