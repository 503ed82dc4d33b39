"""The executor side of Stage 1: ``witness_batch`` rows read back equal local evaluation.

Runs without a SparkSession: ``WitnessTask`` is exactly what ``mapInArrow`` calls on
an executor, here fed one Arrow batch of spool-shaped rows directly.
"""

from __future__ import annotations

import pickle

import pyarrow as pa

from xscl.engine import LocalEngine
from xscl.lang.parser import parse_queries
from xscl.spark_plugin.witness_task import WitnessTask, read_witness
from xscl.xpath import Stage1Error

QUERIES = (
    "a: S//item->i[./title->t][./author->x] JOIN {t = u AND x = y, INF} "
    "S//item->j[./title->u][./author->y];\n"
    "b: S//item->i[./link/@href->h] FOLLOWED BY {h = g, 1d} S//entry->k[./id->g];"
)
DOCS = [
    ("S", "d1", 1, "<item><title>T</title><author>A</author><link href='h'/></item>"),
    ("S", "d2", 2, "<item><title>T</title><author>A</author><author>B</author></item>"),
    ("S", "bad", 3, "<item><title>T</item>"),
]


def test_executor_rows_read_back_as_the_local_witnesses() -> None:
    engine = LocalEngine(parse_queries(QUERIES))
    task = pickle.loads(pickle.dumps(WitnessTask(engine.stage1.spec(), "v1")))
    batch = pa.RecordBatch.from_pylist(
        [
            {"offset": n, "stream": s, "docid": d, "ts": t, "xml": x}
            for n, (s, d, t, x) in enumerate(DOCS)
        ]
    )
    (out,) = list(task(iter([batch])))
    rows = out.to_pylist()
    assert [r["offset"] for r in rows] == [0, 1, 2]
    for row, (stream, docid, ts, xml) in zip(rows[:2], DOCS[:2], strict=True):
        expected = engine.stage1.evaluate(stream, docid, ts, xml).rows()
        assert read_witness(row) == expected
        assert expected.values and expected.bindings
    rejected = read_witness(rows[2])
    assert isinstance(rejected, Stage1Error) and rejected.code.startswith("XSCL-X")
