"""The fast record builder (``xscl.engine.records``) equals the straightforward construction.

The straightforward construction is the definition: ``result_id`` over the join
variables' nodes, values from R_doc, and ``QueryOutput.build_xml`` (which walks
the embeddings and builds the XML with lxml). Every match of random workloads,
and documents whose ids need JSON escaping, must give byte-identical records.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pytest
from hypothesis import given

from tests.profiles import examples
from tests.workloads import Workload, seeded_workload, workloads
from xscl.connectors.document import Document
from xscl.engine import LocalEngine, ResultRecord, result_id
from xscl.engine.matcher import Match
from xscl.engine.output import DocumentTrees
from xscl.engine.state import DocState
from xscl.lang.parser import parse_queries


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


def check_every_match(text: str, docs: Sequence[Document]) -> int:
    """Feed ``docs`` one by one; compare both constructions on each one's matches."""
    engine = LocalEngine(parse_queries(text))
    compared = 0
    delivered: set[tuple[str, str]] = set()
    for seq, d in enumerate(docs):
        if (d.stream, d.docid) in delivered:
            continue  # a re-delivery: the engine ignores it (the first delivery wins)
        delivered.add((d.stream, d.docid))
        rows = engine.stage1.evaluate_rows(d.stream, d.docid, d.ts_micros, d.xml)
        state = DocState.from_rows(d.stream, d.docid, d.ts_micros, d.xml, -seq, rows)
        for match in engine.matches(state):
            assert engine.record(match) == plain_record(engine, match)
            compared += 1
        engine.process([d])
    return compared


@examples(80)
@given(workload=workloads())
def test_fast_records_equal_plain_records(workload: Workload) -> None:
    check_every_match(workload.text, workload.docs)


def test_ids_needing_json_escapes_give_the_same_records() -> None:
    _, workload = seeded_workload(7, lambda w: check_every_match(w.text, w.docs) > 5)
    odd = ['q"uote', "back\\slash", "é-ünïcode", "tab\there", "ctl\x01", "line\u2028sep"]
    docs = [replace(d, docid=f"{odd[i % len(odd)]}{i}") for i, d in enumerate(workload.docs)]
    docs += [replace(d, docid=d.docid + "-again", ts_micros=d.ts_micros + 1) for d in docs]
    assert check_every_match(workload.text, docs) > 0


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
