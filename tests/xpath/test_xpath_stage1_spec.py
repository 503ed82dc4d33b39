"""``Stage1.spec`` / ``Stage1.from_spec``: a rebuilt Stage 1 (as on a Spark executor).

It must survive pickling and produce exactly the witnesses of the original, with
the same var ids, also after definitions were unregistered (holes in the ids).
"""

from __future__ import annotations

import pickle

from xscl.engine import LocalEngine
from xscl.lang.parser import parse_queries
from xscl.xpath import DocumentRows, Stage1

QUERIES = """
A: S//item->i[./title->t] FOLLOWED BY {t = u, 1d} S//item->j[./title->u];
B: S//item->i[./author->a] JOIN {a = b, INF} S//item->j[./author->b];
C: S//entry->e[./link/@href->h] JOIN {h = g, INF} S//item->k[./link->g];
"""

DOC = (
    "<rss><channel><item><title>x</title><author>a</author><link>l</link></item>"
    "<item><title>y</title><author>a</author></item></channel></rss>"
)


def _rows(stage1: Stage1) -> DocumentRows:
    return stage1.evaluate_rows("S", "d", 1, DOC)


def test_rebuilt_stage1_gives_identical_witnesses_after_pickling() -> None:
    engine = LocalEngine(parse_queries(QUERIES))
    engine.remove_query("C")  # leaves unregistered ids behind
    original = engine.stage1
    rebuilt = Stage1.from_spec(pickle.loads(pickle.dumps(original.spec())))
    assert rebuilt.registered == original.registered
    assert rebuilt.spec() == original.spec()
    assert _rows(rebuilt) == _rows(original)
    assert _rows(original).values, "the queries require values: the comparison is not empty"
