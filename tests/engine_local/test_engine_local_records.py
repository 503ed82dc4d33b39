"""The fast record builder (``xscl.engine.records``) equals the straightforward construction.

The straightforward construction is the definition: ``result_id`` over the join
variables' nodes, values from R_doc, and ``QueryOutput.build_xml`` (which walks
the embeddings and builds the XML with lxml). Every match of random workloads,
and documents whose ids need JSON escaping, must give byte-identical records.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xscl.engine import LocalEngine, ResultRecord, result_id
from xscl.engine.matcher import Match
from xscl.engine.output import DocumentTrees
from xscl.engine.state import DocState
from xscl.lang.parser import parse_queries

sys.path.insert(0, str(Path(__file__).resolve().parent))
from workloads import Doc, random_workload


def plain_record(engine: LocalEngine, match: Match) -> ResultRecord:
    """A record built step by step, without any of the fast path's caches."""
    row, docs, nodes = match
    template = row.template
    joined = sorted({m for edge in template.value_edges for m in edge})
    join_nodes = {row.names[m]: nodes[m] for m in joined}
    values = {row.names[m]: docs[template.blocks[m]].values.get(nodes[m], "") for m in joined}
    ts = [d.ts for d in docs]
    return ResultRecord(
        query=row.qid,
        result_id=result_id(row.qid, [(d.stream, d.docid) for d in docs], join_nodes),
        docs=tuple((d.stream, d.docid, d.ts) for d in docs),
        nodes=tuple(sorted(join_nodes.items())),
        values=tuple(sorted(values.items())),
        built_xml=engine.outputs[row.qid].build_xml(docs, join_nodes, DocumentTrees()),
        start_micros=min(ts),
        end_micros=max(ts),
    )


def check_every_match(text: str, docs: list[Doc]) -> int:
    """Feed ``docs`` one by one; compare both constructions on each one's matches."""
    engine = LocalEngine(parse_queries(text))
    compared = 0
    for seq, d in enumerate(docs):
        rows = engine.stage1.evaluate_rows(d.stream, d.docid, d.ts_micros, d.xml)
        state = DocState.from_rows(d.stream, d.docid, d.ts_micros, d.xml, -seq, rows)
        for match in engine.matches(state):
            assert engine.record(match) == plain_record(engine, match)
            compared += 1
        engine.process([d])
    return compared


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**9), numbers=st.booleans())
def test_fast_records_equal_plain_records(seed: int, numbers: bool) -> None:
    text, docs = random_workload(seed, queries=5, documents=7, numbers=numbers)
    check_every_match(text, docs)


def test_ids_needing_json_escapes_give_the_same_records() -> None:
    text, docs = random_workload(7, queries=6, documents=8)
    odd = ['q"uote', "back\\slash", "é-ünïcode", "tab\there", "ctl\x01", "line\u2028sep"]
    docs = [replace(d, docid=f"{odd[i % len(odd)]}{i}") for i, d in enumerate(docs)]
    docs += [replace(d, docid=d.docid + "-again", ts_micros=d.ts_micros + 1) for d in docs]
    assert check_every_match(text, docs) > 0


def test_a_record_given_in_pieces_equals_the_record_given_whole() -> None:
    fields = {
        "query": "Q",
        "result_id": "0" * 32,
        "docs": (("S", "d1", 0),),
        "nodes": (("x", "1"),),
        "values": (("x", "v"),),
        "start_micros": 0,
        "end_micros": 0,
    }
    pieces = ResultRecord(**fields, xml_parts=('<result query="Q">', "<a>v</a>", "</result>"))
    whole = ResultRecord(**fields, built_xml='<result query="Q"><a>v</a></result>')
    assert pieces.xml == whole.xml and pieces == whole and hash(pieces) == hash(whole)
    assert pieces.to_json_line() == whole.to_json_line()
    assert pieces != ResultRecord(**fields, built_xml="<result/>")
    with pytest.raises(ValueError, match="exactly one"):
        ResultRecord(**fields)
    with pytest.raises(ValueError, match="exactly one"):
        ResultRecord(**fields, built_xml="<r/>", xml_parts=("<r/>",))
