"""The sharing groups' oracle (``sharing.keys``): union-find equals a breadth-first search,
and a query's keys are its template, its definitions and the published streams it touches."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tests.profiles import examples
from xscl.lang.normal_form import normalize
from xscl.lang.parser import parse_queries
from xscl.service.compiled.table import CompiledQuery
from xscl.service.sharing.keys import DEFINITION, STREAM, TEMPLATE, groups, query_keys
from xscl.service.sharing.summary import in_process
from xscl.templates import assign_template


def _searched(pairs: list[tuple[int, str]]) -> set[frozenset[int]]:
    """Connected components by breadth-first search over the bipartite graph."""
    neighbours: dict[object, set[object]] = {}
    for vertex, key in pairs:
        neighbours.setdefault(("v", vertex), set()).add(("k", key))
        neighbours.setdefault(("k", key), set()).add(("v", vertex))
    seen: set[object] = set()
    out: set[frozenset[int]] = set()
    for start in neighbours:
        if start in seen or start[0] != "v":  # type: ignore[index]
            continue
        component, frontier = set(), [start]
        seen.add(start)
        while frontier:
            node = frontier.pop()
            component.add(node)
            for other in neighbours[node] - seen:
                seen.add(other)
                frontier.append(other)
        out.add(frozenset(n[1] for n in component if n[0] == "v"))  # type: ignore[index]
    return out


@examples(100)
@given(st.lists(st.tuples(st.integers(0, 20), st.sampled_from("abcdefghij")), max_size=40))
def test_union_find_equals_a_search(pairs: list[tuple[int, str]]) -> None:
    found = groups(pairs)
    assert {frozenset(g) for g in found} == _searched(pairs)
    assert sum(map(len, found)) == len({v for v, _ in pairs})  # each vertex once


def _compiled(text: str) -> list[CompiledQuery]:
    return [CompiledQuery(n, assign_template(n)) for n in map(normalize, parse_queries(text))]


def test_a_query_shares_its_template_definitions_and_published_streams() -> None:
    publisher, reader, other = _compiled(
        "p: S//a->x JOIN {x=y, 1h} T//b->y PUBLISH P;"
        "r: P//c->x FOLLOWED BY {x=y, 1h} T//b->y;"
        "o: U//c->x FOLLOWED BY {x=y, 1h} V//b->y;"
    )
    published = frozenset({"P"})
    kinds = [kind for kind, _ in query_keys(publisher, published)]
    assert kinds == [TEMPLATE, DEFINITION, DEFINITION, STREAM]
    assert (STREAM, "P") in query_keys(reader, published)
    # T is read by both but published by none: reading it shares nothing
    assert [k for k in query_keys(other, published) if k[0] == STREAM] == []
    # r meets p through P and T//b's definition; o shares r's template
    pairs = [(q.qid, k) for q in (publisher, reader, other) for k in query_keys(q, published)]
    assert [sorted(g) for g in groups(pairs)] == [["o", "p", "r"]]


def test_the_in_process_summary_counts_and_orders_the_groups() -> None:
    summary = in_process(
        _compiled(
            "a: S//a->x JOIN {x=y, 1h} T//b->y;"
            "b: S//a->x JOIN {x=y, 2h} W//b->y;"
            "c: X//a->x[./k->u] FOLLOWED BY {x=y AND u=v, 1h} Y//b->y[./k->v];"
        ),
        top=1,
    )
    assert (summary.queries, summary.templates, summary.groups, summary.singletons) == (3, 2, 2, 1)
    assert summary.published_streams == 0 and summary.rounds is None
    (largest,) = summary.largest
    assert (largest.size, largest.templates, largest.definitions, largest.qids) == (
        2, 1, 3, ("a", "b"),
    )  # fmt: skip
    assert "sharing groups                2  (1 of one query)" in summary.lines()
