"""``Stage1.spec`` / ``Stage1.from_spec``: a rebuilt Stage 1 (as on a Spark executor).

It must survive pickling and produce exactly the witnesses of the original, with
the same var ids, also after definitions were unregistered (holes in the ids).
"""

from __future__ import annotations

import pickle

from xscl.engine import LocalEngine
from xscl.lang.parser import parse_queries
from xscl.xpath import Stage1

QUERIES = """
A: S//item->i[./title->t] FOLLOWED BY {t = u, 1d} S//item->j[./title->u];
B: S//item->i[./author->a] JOIN {a = b, INF} S//item->j[./author->b];
C: S//entry->e[./link/@href->h] JOIN {h = g, INF} S//item->k[./link->g];
"""

DOC = (
    "<rss><channel><item><title>x</title><author>a</author><link>l</link></item>"
    "<item><title>y</title><author>a</author></item></channel></rss>"
)


def _rows(stage1: Stage1) -> tuple[list[dict[str, object]], ...]:
    batch = stage1.evaluate("S", "d", 1, DOC)
    return (
        batch.values.to_pylist(),
        batch.value_nodes.to_pylist(),
        batch.matches.to_pylist(),
        batch.bindings.to_pylist(),
    )


def test_rebuilt_stage1_gives_identical_witnesses_after_pickling() -> None:
    engine = LocalEngine(parse_queries(QUERIES))
    engine.remove_query("C")  # leaves unregistered ids behind
    original = engine.stage1
    rebuilt = Stage1.from_spec(pickle.loads(pickle.dumps(original.spec())))
    assert rebuilt.registered == original.registered
    assert rebuilt.spec() == original.spec()
    assert _rows(rebuilt) == _rows(original)
    assert _rows(original)[0], "the queries require values: the comparison is not empty"


def test_evaluate_rows_equals_the_arrow_relations() -> None:
    """The engine's Arrow-free path gives exactly the rows of ``evaluate``."""
    engine = LocalEngine(parse_queries(QUERIES))
    stage1 = engine.stage1
    docs = [
        DOC,
        "<feed xmlns='http://www.w3.org/2005/Atom'><entry><link href='h1'/>"
        "<link xml:lang='en' href='h2'/></entry></feed>",
        "<item><title/><author> a </author><link>l</link><link>l</link></item>",
    ]
    for xml in docs:
        batch = stage1.evaluate("S", "d", 1, xml)
        rows = stage1.evaluate_rows("S", "d", 1, xml)
        assert rows.values == [(r["node"], r["strval"]) for r in batch.values.to_pylist()]
        assert rows.value_nodes == [(r["var"], r["node"]) for r in batch.value_nodes.to_pylist()]
        assert rows.matches == [(r["var"], r["node"]) for r in batch.matches.to_pylist()]
        assert rows.bindings == [
            (r["var1"], r["var2"], r["node1"], r["node2"]) for r in batch.bindings.to_pylist()
        ]
        assert rows.values or rows.matches
