"""Batches of documents: rows stay with their document, a document rejected midway leaves none.

``evaluate_many`` appends rows column-wise into one builder; a document that
fails after some of its rows were appended (an entity reference deep in the
tree) must be rolled back completely, and every row must carry its own
document's key.  The batch must equal the concatenation of per-document
evaluations.
"""

from __future__ import annotations

from typing import Any

from xscl.lang.ast import Block, NodeTest, Step
from xscl.lang.normal_form.model import VarDef
from xscl.xpath import Stage1, WitnessBatch, r_doc_rows

DOCS = [
    ("S", "good-1", 10, b'<r><a id="1">one</a><b>x</b></r>'),
    ("S", "bad", 20, b'<!DOCTYPE r [<!ENTITY e "x">]><r><a id="2">two</a><b>&e;</b></r>'),
    ("S", "good-2", 30, b'<r><a id="3">three</a><a id="4">four</a></r>'),
    ("T", "other-stream", 40, b"<r><a>t</a></r>"),
]


def _stage() -> Stage1:
    stage = Stage1()
    root = stage.register(VarDef(Block("S", (Step("/", NodeTest("element", "r")),))))
    a = stage.register(
        VarDef(
            Block("S", (Step("/", NodeTest("element", "r")), Step("//", NodeTest("element", "a"))))
        )
    )
    attr = stage.register(
        VarDef(
            Block(
                "S",
                (
                    Step("/", NodeTest("element", "r")),
                    Step("/", NodeTest("element", "a")),
                    Step("/", NodeTest("attribute", "id")),
                ),
            )
        )
    )
    for var in (root, a, attr):
        stage.require_value(var)
        stage.require_nodes(var)
    stage.require_pair(root, a)
    stage.require_pair(root, attr)
    return stage


def _rows(batch: WitnessBatch) -> dict[str, list[dict[str, Any]]]:
    return {
        name: sorted(
            getattr(batch, name).to_pylist(),
            key=lambda r: sorted((k, str(v)) for k, v in r.items()),
        )
        for name in ("docs", "values", "value_nodes", "matches", "bindings")
    }


def test_batch_equals_per_document_evaluation_and_rejected_documents_leave_no_rows() -> None:
    stage = _stage()
    batch = stage.evaluate_many(DOCS)
    assert [(e.docid, e.code) for e in batch.errors] == [("bad", "XSCL-X005")]
    singles = []
    for stream, docid, ts, xml in DOCS:
        if docid != "bad":
            singles.append(_stage().evaluate(stream, docid, ts, xml))
    assert _rows(batch) == _rows(WitnessBatch.concat(singles))
    docids = set(batch.values.column("docid").to_pylist())
    assert docids == {"good-1", "good-2"}
    pairs = {(r["docid"], r["node1"], r["node2"]) for r in batch.bindings.to_pylist()}
    assert ("good-2", "0", "2") in pairs and ("good-2", "0", "2/@id") in pairs
    values = {(r["docid"], r["var"], r["node"]): r["strval"] for r in r_doc_rows(batch)}
    assert values[("good-2", 2, "2")] == "four"
    assert values[("good-1", 3, "1/@id")] == "1"


def _el(axis: str, name: str) -> Step:
    return Step(axis, NodeTest("element", name))  # type: ignore[arg-type]


def test_definitions_nobody_reads_change_nothing() -> None:
    """Trie nodes without a needed emission at or below them are never matched (liveness)."""
    read = [
        VarDef(Block("S", (_el("//", "a"),))),
        VarDef(Block("S", (_el("/", "r"), _el("//", "a"), Step("/", NodeTest("attribute", "id"))))),
    ]
    unread = [
        VarDef(Block("S", (_el("/", "r"), _el("/", "a")))),  # a prefix of a read one
        VarDef(Block("S", (_el("//", "b"),))),
        VarDef(Block("S", (_el("//", "a"), _el("//", "b")))),
    ]
    lean, full = Stage1(), Stage1()
    for stage, defs in ((lean, read), (full, unread + read)):
        ids = [stage.register(d) for d in defs]
        for var in ids[-len(read) :]:
            stage.require_value(var)
    xml = b'<r><a id="1"><b/><a id="2">x</a></a><b>y</b></r>'
    for stage in (lean, full):
        stage.evaluate("S", "d", 1, xml)  # fill the lazy DFA
    got = []
    for stage in (lean, full):
        batch = stage.evaluate("S", "d", 1, xml)
        got.append(
            {(stage.definition(r["var"]), r["node"], r["strval"]) for r in r_doc_rows(batch)}
        )
    assert got[0] == got[1] and len(got[0]) == 4


def test_string_values_are_emitted_once_per_node() -> None:
    """``values`` has one row per node, however many value-required vars bind it (issue 3)."""
    stage = Stage1()
    defs = [
        VarDef(Block("S", (_el("//", "a"),))),
        VarDef(Block("S", (_el("/", "r"), _el("/", "a")))),
        VarDef(Block("S", (Step("//", NodeTest("attribute", "id")),))),
        VarDef(Block("S", (_el("//", "a"), Step("/", NodeTest("attribute", "id"))))),
        VarDef(Block("S", (_el("//", "a"), Step("/", NodeTest("text"))))),
        VarDef(Block("S", (_el("/", "r"), _el("/", "a"), Step("/", NodeTest("text"))))),
    ]
    ids = [stage.register(d) for d in defs]
    for var in ids:
        stage.require_value(var)
    stage.require_nodes(ids[2])  # a var required both ways: matches and value_nodes
    docs = [("S", f"d{i}", i, b'<r><a id="1">x<b/>y</a><a id="2"/></r>') for i in range(2)]
    batch = stage.evaluate_many(docs)
    keys = [(r["docid"], r["node"]) for r in batch.values.to_pylist()]
    assert len(keys) == len(set(keys))
    expected_nodes = {"1", "3", "1/@id", "3/@id", "1/text()[1]", "1/text()[2]"}
    assert set(keys) == {(d, n) for d in ("d0", "d1") for n in expected_nodes}
    members = {(r["docid"], r["var"], r["node"]) for r in batch.value_nodes.to_pylist()}
    assert len(members) == batch.value_nodes.num_rows == 2 * 12
    assert {(d, n) for d, _, n in members} == set(keys)
    by_var = {(r["docid"], r["var"], r["node"]): r["strval"] for r in r_doc_rows(batch)}
    assert by_var[("d1", ids[1], "1")] == "xy"
    assert by_var[("d0", ids[3], "3/@id")] == by_var[("d0", ids[2], "3/@id")] == "2"
    assert by_var[("d1", ids[5], "1/text()[2]")] == "y"
    assert {r["node"] for r in batch.matches.to_pylist()} == {"1/@id", "3/@id"}
