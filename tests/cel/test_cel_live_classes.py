"""A running job's CEL classes after registry events (``events.live_classes``, docs/cel.md 10.7)."""

from __future__ import annotations

from xscl.events.live_classes import SubscribedCel
from xscl.events.partitioning import partition_classes
from xscl.lang.cel.parser import parse_file
from xscl.lang.cel.validation import validate

DECLARE = "DECLARE STREAM S(a, b);\nDECLARE STREAM T(a, b);\n"
FILE = DECLARE + (
    "x: SELECT a, b FROM S NEXT{$2.a = $1.a} S PUBLISH P;\n"
    "y: FROM P NEXT{$2.a = $1.a} T;\n"
    "g: SELECT a, b FROM S NEXT{$2.b > $1.b} T PUBLISH G"
)


def _first() -> SubscribedCel:
    live, errors = SubscribedCel.empty({}).subscribed(1, parse_file(FILE), "first.cel", FILE)
    assert not errors
    return live


def test_the_first_event_forms_the_classes_of_the_whole_file() -> None:
    live = _first()
    program, _ = validate(parse_file(FILE))
    assert [c.key_class for c in live.classes] == partition_classes(program)
    assert [c.name for c in live.classes] == ["1.0", "1.1"]
    assert live.classes[0].group_keys(3) == ["1.0:0", "1.0:1", "1.0:2"]
    assert live.classes[1].group_keys(3) == ["1.1:0"]


def test_new_queries_form_new_classes_or_join_the_class_they_read() -> None:
    text = "z: FROM P NEXT{$2.a = $1.a AND $2.b > $1.b} S;\nh: FROM G NEXT T;\nn: FROM T NEXT T"
    live, errors = _first().subscribed(2, parse_file(text), "more.cel", text)
    assert not errors
    classes = {c.name: c.key_class for c in live.classes}
    assert classes["1.0"].queries == ("x", "y", "z")
    assert classes["1.0"].keys == {"P": "a", "S": "a", "T": "a"}
    assert classes["1.1"].queries == ("g", "h") and classes["1.1"].keys is None
    assert classes["2.0"].queries == ("n",)


def test_a_query_that_cannot_keep_a_keyed_class_keys_is_cel_s005_and_changes_nothing() -> None:
    first = _first()
    text = "bad: FROM P NEXT{$2.b = $1.b} S;\nfine: FROM S NEXT{$2.a = $1.a} S"
    live, errors = first.subscribed(2, parse_file(text), "more.cel", text)
    assert [(e.code, e.qid) for e in errors] == [("CEL-S005", "bad")]
    assert "partitioned by P.a, S.a, T.a" in str(errors[0])
    assert live.ids() == ["x", "y", "g", "fine"]
    assert [c for c in live.classes if c.name.startswith("1.")] == list(first.classes)


def test_a_query_that_links_two_running_classes_is_cel_s005() -> None:
    text = "both: FROM P NEXT G"
    live, errors = _first().subscribed(2, parse_file(text), "more.cel", text)
    assert [(e.code, e.qid) for e in errors] == [("CEL-S005", "both")]
    assert "links the running classes 1.0, 1.1" in str(errors[0])
    assert live.ids() == ["x", "y", "g"]


def test_readers_of_a_rejected_query_stream_are_rejected_too() -> None:
    text = "q: SELECT a, b FROM P NEXT{$2.b = $1.b} S PUBLISH Q;\nr: FROM Q NEXT S"
    live, errors = _first().subscribed(2, parse_file(text), "more.cel", text)
    assert [(e.code, e.qid) for e in errors] == [("CEL-S005", "q"), ("CEL-S005", "r")]
    assert live.ids() == ["x", "y", "g"]


def test_taken_ids_and_redeclared_streams() -> None:
    text = "DECLARE STREAM S(a, c);\nx: FROM T NEXT T;\nw: FROM FILTER{b = 1}(T)"
    live, errors = _first().subscribed(2, parse_file(text), "more.cel", text)
    assert sorted(e.code for e in errors) == ["CEL-S001", "CEL-S002"]
    assert live.ids() == ["x", "y", "g", "w"]


def test_unsubscribe_keeps_a_class_name_and_keys_and_drops_an_empty_class() -> None:
    first = _first()
    assert first.unsubscribe_problem(["x"]) is not None  # y reads P
    assert first.unsubscribe_problem(["nope"]) is not None
    after = first.unsubscribed(["y", "g"])
    assert [(c.name, c.key_class.queries, c.key_class.keys) for c in after.classes] == [
        ("1.0", ("x",), {"P": "a", "S": "a", "T": "a"})
    ]
    assert after.classes[0].key_class.reads == frozenset({"S"})
    assert "G" not in after.program.published


def test_a_query_subscribed_again_records_its_new_event() -> None:
    first = _first()
    again, errors = first.unsubscribed(["g"]).subscribed(3, parse_file(FILE), "again.cel", FILE)
    assert [e.code for e in errors] == ["CEL-S001", "CEL-S001"]  # x and y are running
    assert again.events == {"x": 1, "y": 1, "g": 3}
    assert again.class_of("g") is not None and again.class_of("g").name == "3.0"  # type: ignore[union-attr]
