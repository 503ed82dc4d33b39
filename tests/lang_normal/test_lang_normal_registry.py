"""QueryRegistry: atomic per-query registration, normal forms, the PUBLISH graph."""

from __future__ import annotations

import pickle

import pytest

from xscl.lang.normal_form import normalize
from xscl.lang.parser import parse_query
from xscl.lang.registry import QueryRegistry

FILE = """
Q1: S//book->x1[./author->x2][./title->x3]
    FOLLOWED BY {x2=x5 AND x3=x6, 1h} S//blog->x4[./author->x5][./title->x6] PUBLISH Promo;
Q2: SELECT a FROM Promo//result->r[./var->a] PUBLISH Digest;
Q3: Digest JOIN {TRUE, 1d} Promo
"""


def test_add_text_registers_normalises_and_orders() -> None:
    registry = QueryRegistry(streams={"S"})
    added, errors = registry.add(FILE, source_name="subs.xscl")
    assert errors == []
    assert [q.qid for q in added] == ["Q1", "Q2", "Q3"] == [q.qid for q in registry.queries()]
    assert registry.normal("Q1") == normalize(registry.get("Q1"))
    assert registry.publishers() == {"Promo": ("Q1",), "Digest": ("Q2",)}
    assert registry.publish_graph() == {"Q1": ("Q2", "Q3"), "Q2": ("Q3",), "Q3": ()}
    assert registry.topological_order() == ("Q1", "Q2", "Q3")
    assert "Q2" in registry and len(registry) == 3 and next(iter(registry)).qid == "Q1"


def test_topological_order_puts_publishers_first_whatever_the_registration_order() -> None:
    registry = QueryRegistry()
    registry.add([parse_query("R: P//x"), parse_query("W: S//y PUBLISH P")])
    assert registry.topological_order() == ("W", "R")


def test_bad_queries_leave_the_registry_untouched() -> None:
    registry = QueryRegistry(streams={"S"})
    registry.add("A: S//a->x PUBLISH P")
    before = registry.queries()
    added, errors = registry.add(
        "A: S//dup; B: SELECT y FROM S//b->x; C: Unknown//c;"
        " D: P//d PUBLISH S2; E: S2//e; F: oops[",
        source_name="more.xscl",
    )
    assert [q.qid for q in added] == ["D", "E"]
    assert sorted(e.code for e in errors) == [
        "XSCL-P003", "XSCL-V002", "XSCL-V004", "XSCL-V007",
    ]  # fmt: skip
    assert all(e.source == "more.xscl" for e in errors)
    assert registry.queries() == (*before, *added)
    assert registry.get("A") == before[0]


def test_cycle_through_registered_queries_is_rejected() -> None:
    registry = QueryRegistry()
    registry.add("A: P1//x PUBLISH P2")
    added, errors = registry.add("B: P2//y PUBLISH P1")
    assert added == [] and [e.code for e in errors] == ["XSCL-V005"]
    assert [q.qid for q in registry.queries()] == ["A"]


def test_remove_checks_dependents() -> None:
    registry = QueryRegistry(streams={"S"})
    registry.add(FILE)
    with pytest.raises(ValueError, match="Q2"):
        registry.remove("Q1")
    assert len(registry) == 3
    removed = registry.remove("Q1", cascade=True)
    assert [q.qid for q in removed] == ["Q1", "Q2", "Q3"] and len(registry) == 0
    with pytest.raises(KeyError):
        registry.remove("Q1")


def test_remove_without_catalog_and_reuse_of_the_id() -> None:
    registry = QueryRegistry()
    registry.add(FILE)
    assert [q.qid for q in registry.remove("Q2")] == ["Q2"]
    with pytest.raises(KeyError):
        registry.normal("Q2")
    added, errors = registry.add("Q2: S//new")
    assert errors == [] and registry.get("Q2") == added[0]


def test_registry_pickles_and_shares_definitions() -> None:
    registry = QueryRegistry(streams={"S"})
    registry.add(FILE)
    registry.add("Q4: S//book->b[./author->a] JOIN {a=c, 1h} S//blog[./author->c]")
    copy = pickle.loads(pickle.dumps(registry))
    assert copy.queries() == registry.queries()
    assert copy.normal_queries() == registry.normal_queries()
    shared = copy.shared_variables()
    book_author = registry.normal("Q1").variable("x2").definition
    assert shared[book_author] == [("Q1", "x2"), ("Q4", "a")]
