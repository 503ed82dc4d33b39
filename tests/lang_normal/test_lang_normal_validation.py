"""Validation (spec 5): every error code, with its query id, position and expectation."""

from __future__ import annotations

import pickle
from decimal import Decimal

import pytest

from xscl.errors import XsclValidationError
from xscl.lang.ast import (
    Block,
    Equality,
    FunctionPredicate,
    JoinOp,
    NodeTest,
    Query,
    Span,
    Step,
    Window,
)
from xscl.lang.parser import parse_queries, parse_query
from xscl.lang.validation import publish_cycles, strongly_connected, validate, validate_all


def codes(errors: list[XsclValidationError]) -> list[str]:
    return [e.code for e in errors]


def only(errors: list[XsclValidationError]) -> XsclValidationError:
    assert len(errors) == 1, errors
    return errors[0]


def test_valid_query_has_no_error() -> None:
    query = parse_query("Q1: S//a->x[./b->y] JOIN {x=z, 1h} T//c->z PUBLISH out")
    assert validate(query, streams={"S", "T"}) == []


def test_v001_unbound_join_variable_points_at_the_variable() -> None:
    text = "Q1: S//a->x JOIN {x=y, 1s}\n   T//b[./c->z]"
    (query,) = parse_queries(text)
    error = only(validate(query, text=text))
    assert (error.code, error.qid, error.line, error.column) == ("XSCL-V001", "Q1", 1, 21)
    assert "'y'" in error.message
    assert error.expected == ("x", "z")
    assert error.excerpt.splitlines()[1] == " " * 20 + "^"
    assert isinstance(error, ValueError)


def test_v001_caret_is_under_the_variable_not_followed_by() -> None:
    """The caret used to point at FOLLOWED; now at each unbound variable, on its own line."""
    text = "Q1: S//a->x\n  FOLLOWED BY {x = y1 AND\n               w = y, 1h}\n  T//b->y"
    (query,) = parse_queries(text)
    errors = validate(query, text=text)
    assert [(e.code, e.line, e.column) for e in errors] == [
        ("XSCL-V001", 2, 20),  # y1
        ("XSCL-V001", 3, 16),  # w
    ]
    assert errors[0].excerpt == "  FOLLOWED BY {x = y1 AND\n" + " " * 19 + "^"
    assert errors[1].excerpt == "               w = y, 1h}\n" + " " * 15 + "^"


def test_v002_unbound_select_variable_points_at_the_query() -> None:
    text = "Q0: S//a->x;\nQ2: SELECT x, w FROM S//b->x"
    error = only(validate(parse_queries(text)[1]))
    assert (error.code, error.qid, error.line, error.column) == ("XSCL-V002", "Q2", 2, 1)
    assert error.expected == ("x",)


def test_v003_variable_bound_twice_points_at_second_binding() -> None:
    text = "Q3: S//a->x JOIN {x=x, 1s} T//b[./c->x]"
    error = only(validate(parse_query(text)))
    assert (error.code, error.line, error.column) == ("XSCL-V003", 1, text.index("/c->x") + 1)
    assert "block 1" in error.message


def test_v003_within_one_block() -> None:
    error = only(validate(parse_query("SELECT x FROM S//a->x[./b->x]")))
    assert error.code == "XSCL-V003"


def test_v004_unknown_stream_only_with_a_catalog() -> None:
    text = "Q4: S//a->x JOIN {x=z, 1s}\n  Nope//b->z"
    query = parse_query(text)
    assert validate(query) == []  # batch mode: every stream is accepted
    error = only(validate(query, streams={"S"}))
    assert (error.code, error.line, error.column) == ("XSCL-V004", 2, 3)
    assert error.expected == ("S",)
    assert validate(query, streams={"S"}, published={"Nope": "other"}) == []


def test_v012_the_composite_events_stream_is_reserved() -> None:
    """The Spark job's composite events travel as ``xscl.composite``: a query may
    neither read it nor PUBLISH to it (the error points at the block, or the query)."""
    text = "Q12: S//a->x JOIN {x=z, 1s}\n  xscl.composite//b->z"
    error = only(validate(parse_query(text)))
    assert (error.code, error.line, error.column) == ("XSCL-V012", 2, 3)
    error = only(validate(parse_query("Q12: S//a PUBLISH xscl.composite")))
    assert (error.code, error.line, error.column) == ("XSCL-V012", 1, 1)


def test_v005_query_reading_its_own_publish_stream() -> None:
    error = only(validate(parse_query("Q5: S//a->x JOIN {TRUE, 1s} P//b PUBLISH P")))
    assert (error.code, error.line, error.column) == ("XSCL-V005", 1, 29)


def test_v006_predicate_uses_a_later_block() -> None:
    text = "Q6: S//a->x JOIN {x=z, 1s} T//b->y FOLLOWED BY {y=z, 1s} U//c->z"
    error = only(validate(parse_query(text)))
    assert (error.code, error.column) == ("XSCL-V006", 21)  # the z of {x=z
    assert error.expected == ("x", "y")


def test_v008_unknown_prefix_in_a_hand_built_query() -> None:
    step = Step("//", NodeTest("element", "entry", "atom"), "e", span=Span(1, 2, 1))
    query = Query("Q8", (Block("S", (step,)),), select=("e",))
    error = only(validate(query))
    assert (error.code, error.line, error.column) == ("XSCL-V008", 1, 2)
    assert error.expected == ("xml:",)
    declared = Query("Q8", (Block("S", (step,)),), select=("e",), namespaces=(("atom", "urn:a"),))
    assert validate(declared) == []


@pytest.mark.parametrize(
    "expression",
    ["contains(./title, ", "frob:thing(.)", "1 +* 2"],
)
def test_v009_function_predicate_is_not_xpath2(expression: str) -> None:
    predicates = (FunctionPredicate(expression),)
    step = Step("//", NodeTest("element", "a"), "x", predicates, Span(1, 3, 2))
    error = only(validate(Query("Q9", (Block("S", (step,)),), select=("x",))))
    assert (error.code, error.column) == ("XSCL-V009", 3)
    assert error.expected == ("an XPath 2.0 expression",)


def test_xpath2_functions_and_declared_prefixes_are_accepted() -> None:
    text = (
        "SELECT x FROM S//a->x[matches(lower-case(./t), '^s')]"
        "[ends-with(@href, '.xml')][exists(p:id)]"
    )
    assert validate(parse_query(text, namespaces=(("p", "urn:p"),))) == []


def test_errors_pickle() -> None:
    (error,) = validate(parse_query("SELECT y FROM S//a->x"))
    assert pickle.loads(pickle.dumps(error)) == error


# --- several queries ---------------------------------------------------------------------


def test_validate_all_rejects_only_bad_queries() -> None:
    queries = parse_queries("A: S//a->x; B: SELECT y FROM S//b->x; C: T//c")
    good, errors = validate_all(queries)
    assert [q.qid for q in good] == ["A", "C"]
    assert [(e.code, e.qid) for e in errors] == [("XSCL-V002", "B")]


def test_duplicate_query_id() -> None:
    a, b = parse_query("A: S//a"), parse_query("A: T//b")
    good, errors = validate_all([a, b])
    assert good == [a]
    assert [(e.code, e.qid) for e in errors] == [("XSCL-V007", "A")]
    good, errors = validate_all([b], registered=[a])
    assert (good, codes(errors)) == ([], ["XSCL-V007"])


def test_two_cycle_rejects_both_and_spares_the_rest() -> None:
    text = "A: P1//x PUBLISH P2; B: P2//y PUBLISH P1; C: S//z PUBLISH P3; D: P3//w"
    good, errors = validate_all(parse_queries(text), streams={"S"})
    assert [q.qid for q in good] == ["C", "D"]
    assert sorted((e.code, e.qid) for e in errors) == [("XSCL-V005", "A"), ("XSCL-V005", "B")]
    assert "A -> B" in errors[0].message


def test_three_cycle() -> None:
    text = "A: R3//x PUBLISH R1; B: R1//y PUBLISH R2; C: S JOIN {TRUE, 1s} R2//z PUBLISH R3"
    good, errors = validate_all(parse_queries(text))
    assert good == []
    cycle = {e.qid: e for e in errors}
    assert set(cycle) == {"A", "B", "C"} and all(e.code == "XSCL-V005" for e in errors)
    assert (cycle["C"].line, cycle["C"].column) == (1, text.index("R2//z") + 1)


def test_self_cycle_in_validate_all() -> None:
    good, errors = validate_all(parse_queries("A: P//x PUBLISH P; B: P//y"))
    assert [q.qid for q in good] == ["B"]
    assert [(e.code, e.qid) for e in errors] == [("XSCL-V005", "A")]


def test_cycle_with_a_registered_query_rejects_only_the_new_one() -> None:
    registered = parse_queries("A: P1//x PUBLISH P2")
    good, errors = validate_all(parse_queries("B: P2//y PUBLISH P1"), registered=registered)
    assert good == [] and [(e.code, e.qid) for e in errors] == [("XSCL-V005", "B")]


def test_unknown_streams_cascade_through_publish() -> None:
    text = "A: Missing//a PUBLISH P; B: P//b PUBLISH R; C: R//c; D: S//d PUBLISH R2; E: R2//e"
    good, errors = validate_all(parse_queries(text), streams={"S"})
    assert [q.qid for q in good] == ["D", "E"]
    assert sorted((e.code, e.qid) for e in errors) == [
        ("XSCL-V004", "A"), ("XSCL-V004", "B"), ("XSCL-V004", "C"),
    ]  # fmt: skip


def test_publish_cycles_and_components() -> None:
    queries = parse_queries("A: B//x PUBLISH A; B: A//y PUBLISH B; C: A//z")
    cycles = publish_cycles(queries)
    assert set(cycles) == {"A", "B"} and cycles["A"] == ("B", ["A", "B"])
    assert sorted(map(sorted, strongly_connected({"1": ["2"], "2": ["1"], "3": ["1"]}))) == [
        ["1", "2"],
        ["3"],
    ]


def test_hand_built_query_without_spans_still_names_the_query() -> None:
    op = JoinOp("JOIN", (Equality("x", "nope"),), Window(Decimal(1)))
    query = Query("H", (Block("S", (Step("/", NodeTest("element", "a"), "x"),)), Block("T")), (op,))
    error = only(validate(query))
    assert (error.code, error.qid, error.line, error.column) == ("XSCL-V001", "H", None, None)


def test_any_failure_of_the_xpath_library_is_v009_of_that_query_only() -> None:
    """Issue 36 defect 2: ``count(empty-sequence())`` makes elementpath recurse without
    end; the query is refused with V009 and the others stay valid."""
    from xscl.lang.parser import parse_queries
    from xscl.lang.validation import validate_all

    text = "Q1: S/d[true()];\nBAD: S/d[count(empty-sequence()) >= 0];\nQ3: S/d[exists(.)];\n"
    valid, errors = validate_all(parse_queries(text), text=text)
    assert [q.qid for q in valid] == ["Q1", "Q3"]
    assert [(e.code, e.qid, e.line) for e in errors] == [("XSCL-V009", "BAD", 2)]
    assert "RecursionError" in errors[0].message
