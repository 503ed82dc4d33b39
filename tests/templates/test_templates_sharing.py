"""Join graph, graph minor and template sharing (thesis 6.4.1-6.4.2, spec 3.5)."""

from __future__ import annotations

import pytest

from xscl.lang.ast import Block, NodeTest, PathPredicate, RelPath, Step
from xscl.lang.normal_form import normalize
from xscl.lang.normal_form.model import VarDef
from xscl.lang.parser import parse_query
from xscl.templates import (
    assign_template,
    build_join_graph,
    reduce_join_graph,
)

THESIS = {
    "Q1": "S//book->x1[./author->x2][./title->x3] FOLLOWED BY {x2=x5 AND x3=x6, 1h} "
    "S//blog->x4[./author->x5][./title->x6]",
    "Q2": "S//book->x1[./author->x2][./category->x7] FOLLOWED BY {x2=x5 AND x7=x8, 1d} "
    "S//blog->x4[./author->x5][./category->x8]",
    "Q3": "S//blog->x4[./author->x5][./title->x6] FOLLOWED BY {x5=x5' AND x6=x6', 7d} "
    "S//blog->x4'[./author->x5'][./title->x6']",
}


def template_of(text: str, qid: str = "q"):  # type: ignore[no-untyped-def]
    return assign_template(normalize(parse_query(text, qid=qid)))


def test_join_graph_of_thesis_q1() -> None:
    graph = build_join_graph(normalize(parse_query(THESIS["Q1"], qid="Q1")))
    assert [n.name for n in graph.nodes] == ["#doc0", "x1", "x2", "x3", "#doc1", "x4", "x5", "x6"]
    assert set(graph.structural) == {
        ("#doc0", "x1"),
        ("x1", "x2"),
        ("x1", "x3"),
        ("#doc1", "x4"),
        ("x4", "x5"),
        ("x4", "x6"),
    }
    assert {frozenset(e) for e in graph.value} == {frozenset(("x2", "x5")), frozenset(("x3", "x6"))}
    reduced = reduce_join_graph(graph)
    assert [n.name for n in reduced.nodes] == ["x1", "x2", "x3", "x4", "x5", "x6"]


def test_thesis_queries_share_one_template_with_table_6_4a_rows() -> None:
    assignments = {qid: template_of(text, qid) for qid, text in THESIS.items()}
    templates = {a.template for a in assignments.values()}
    assert len(templates) == 1
    assert assignments["Q1"].names == ("x1", "x2", "x3", "x4", "x5", "x6")
    assert assignments["Q2"].names == ("x1", "x2", "x7", "x4", "x5", "x8")
    assert assignments["Q3"].names == ("x4", "x5", "x6", "x4'", "x5'", "x6'")
    assert assignments["Q2"].windows == (86_400_000_000,)


@pytest.mark.parametrize(
    "other",
    [
        # variable names differ
        "S//item->p[./author->q][./title->r] FOLLOWED BY {q=u AND r=w, 2h} "
        "S//post->t[./author->u][./title->w]",
        # tree-pattern shapes below the LCA differ (deeper paths, // axes, filters)
        "S//book->x1[./meta/author->x2][.//title->x3][./price] FOLLOWED BY {x2=x5 AND x3=x6, 1h} "
        "S//blog->x4[./by/author->x5][./head/title->x6]",
        # unjoined branches and ancestors above the LCA are dropped
        "S/shop/book->x1[./isbn][./author->x2][./title->x3][./publisher->x9] "
        "FOLLOWED BY {x2=x5 AND x3=x6, 1h} S//blog->x4[./author->x5][./title->x6][./tag->x0]",
        # SELECT-only variables (kept by the normal form) are dropped by the minor
        "SELECT x9 FROM S//book->x1[./author->x2][./title->x3][./publisher->x9] "
        "FOLLOWED BY {x2=x5 AND x3=x6, 1h} S//blog->x4[./author->x5][./title->x6]",
        # equalities written in the other order
        "S//book->x1[./author->x2][./title->x3] FOLLOWED BY {x6=x3 AND x5=x2, 1h} "
        "S//blog->x4[./author->x5][./title->x6]",
    ],
)
def test_queries_that_differ_below_the_template_share_it(other: str) -> None:
    assert template_of(other).template == template_of(THESIS["Q1"]).template


@pytest.mark.parametrize(
    "other",
    [
        # JOIN instead of FOLLOWED BY
        "S//book->x1[./author->x2][./title->x3] JOIN {x2=x5 AND x3=x6, 1h} "
        "S//blog->x4[./author->x5][./title->x6]",
        # the two joins on one side meet at a single leaf
        "S//book->x1[./author->x2] FOLLOWED BY {x2=x5 AND x2=x6, 1h} "
        "S//blog->x4[./author->x5][./title->x6]",
        # a third value join
        "S//book->x1[./author->x2][./title->x3][./cat->x7] FOLLOWED BY "
        "{x2=x5 AND x3=x6 AND x7=x8, 1h} S//blog->x4[./author->x5][./title->x6][./cat->x8]",
    ],
)
def test_structurally_different_queries_get_different_templates(other: str) -> None:
    assert template_of(other).template != template_of(THESIS["Q1"]).template


def test_sides_are_not_interchangeable() -> None:
    left_star = template_of("S/a[./b->x][./c->y] FOLLOWED BY {x=z AND y=z, 1h} S/d->z")
    right_star = template_of("S/d->z FOLLOWED BY {z=x AND z=y, 1h} S/a[./b->x][./c->y]")
    assert left_star.template != right_star.template
    assert left_star.template.blocks == (0, 0, 0, 1)
    assert right_star.template.blocks == (0, 1, 1, 1)


def test_dropped_select_branch_is_folded_into_the_kept_definition() -> None:
    assignment = template_of("SELECT z FROM S//a[./b->x][./c->z] JOIN {x=y, 1h} S//d->y")
    assert assignment.names == ("x", "y")
    (x_def, _y_def) = assignment.definitions
    first = x_def.path.steps[0]
    # x must still sit under an `a` that has a `c` child: [./c] folded onto the `a` step
    assert first.predicates == (PathPredicate(RelPath((Step("/", NodeTest("element", "c")),))),)


def test_contraction_of_single_child_chains() -> None:
    assignment = template_of(
        "S/r->x0[./m->x1[./l->x2]][./n->x3[./k->x4]] JOIN {x2=y AND x4=y, 1h} S/d->y"
    )
    # x1 and x3 have one child each and join nothing: contracted; x0 is the LCA
    assert assignment.names == ("x0", "x2", "x4", "y")
    assert assignment.template.parents == (-1, 0, 0, -1)


def test_block_without_joins_keeps_its_document_node() -> None:
    assignment = template_of("S/a->x[./b] FOLLOWED BY {TRUE, 1h} T/c[./d->y]")
    assert assignment.template.documents == (True, True)
    assert assignment.names == ("#doc0", "#doc1")
    assert assignment.definitions[1] == VarDef(
        Block(
            "T",
            (
                Step(
                    "/",
                    NodeTest("element", "c"),
                    predicates=(PathPredicate(RelPath((Step("/", NodeTest("element", "d")),))),),
                ),
            ),
        )
    )


def test_chains_of_three_blocks() -> None:
    a = template_of("S/a->x FOLLOWED BY {x=y, 1h} S/b->y JOIN {y=z, 2h} S/c->z")
    b = template_of("S/a->p FOLLOWED BY {p=q, 5h} S/b->q JOIN {q=r, INF} S/c[./e->r]")
    c = template_of("S/a->x FOLLOWED BY {x=y, 1h} S/b->y JOIN {x=z, 2h} S/c->z")
    assert a.template == b.template
    assert a.template.kinds == ("FOLLOWED BY", "JOIN")
    assert a.template != c.template
