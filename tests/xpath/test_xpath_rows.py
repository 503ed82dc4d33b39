"""One document's rows: a document rejected midway leaves nothing behind, unread
definitions change nothing, each string value is given once per node."""

from __future__ import annotations

import pytest

from xscl.errors import XmlDocumentError
from xscl.lang.ast import Block, NodeTest, Step
from xscl.lang.normal_form.model import VarDef
from xscl.xpath import Stage1

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


def test_a_document_rejected_midway_changes_nothing_for_the_next_ones() -> None:
    """An entity reference deep in the tree is found after rows were made: the document
    raises, and the documents around it get exactly a fresh Stage 1's rows."""
    stage = _stage()
    got = {}
    for stream, docid, ts, xml in DOCS:
        if docid == "bad":
            with pytest.raises(XmlDocumentError) as caught:
                stage.evaluate_rows(stream, docid, ts, xml)
            assert caught.value.code == "XSCL-X005"
            continue
        got[docid] = stage.evaluate_rows(stream, docid, ts, xml)
        assert got[docid] == _stage().evaluate_rows(stream, docid, ts, xml)
    assert not got["other-stream"].values  # no definitions on T
    assert (1, 2, "0", "2") in got["good-2"].bindings
    assert (1, 3, "0", "2/@id") in got["good-2"].bindings
    assert (2, "2", "four") in got["good-2"].r_doc()
    assert (3, "1/@id", "1") in got["good-1"].r_doc()


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
        stage.evaluate_rows("S", "d", 1, xml)  # fill the lazy DFA
    got = []
    for stage in (lean, full):
        rows = stage.evaluate_rows("S", "d", 1, xml)
        got.append({(stage.definition(var), node, strval) for var, node, strval in rows.r_doc()})
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
    rows = stage.evaluate_rows("S", "d", 1, b'<r><a id="1">x<b/>y</a><a id="2"/></r>')
    nodes = [node for node, _strval in rows.values]
    assert len(nodes) == len(set(nodes))
    assert set(nodes) == {"1", "3", "1/@id", "3/@id", "1/text()[1]", "1/text()[2]"}
    assert len(set(rows.value_nodes)) == len(rows.value_nodes) == 12
    assert {node for _var, node in rows.value_nodes} == set(nodes)
    by_var = {(var, node): strval for var, node, strval in rows.r_doc()}
    assert by_var[(ids[1], "1")] == "xy"
    assert by_var[(ids[3], "3/@id")] == by_var[(ids[2], "3/@id")] == "2"
    assert by_var[(ids[5], "1/text()[2]")] == "y"
    assert {node for _var, node in rows.matches} == {"1/@id", "3/@id"}
