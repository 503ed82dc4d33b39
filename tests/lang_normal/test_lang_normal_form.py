"""Value-join normal form: the rules of spec 3.3/3.5 and thesis 6.3-6.4 on concrete queries."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import elementpath
import pytest

from tests.workloads import seeded_workload
from xscl.errors import XsclValidationError
from xscl.lang.ast import Block, ComparisonPredicate, NodeTest, RelPath, Step, StringLiteral
from xscl.lang.normal_form import (
    NormalEquality,
    NormalOp,
    NormalQuery,
    VarDef,
    canonical_variables,
    function_namespaces,
    normalize,
)
from xscl.lang.normal_form.order_predicates import order_steps
from xscl.lang.parser import parse_queries, parse_query

ROOT = Path(__file__).resolve().parents[2]
THESIS = """
Q1: S//book->x1[./author->x2][./title->x3]
    FOLLOWED BY {x2=x5 AND x3=x6, 1h} S//blog->x4[./author->x5][./title->x6];
Q2: S//book->x1[./author->x2][./category->x7]
    FOLLOWED BY {x2=x5 AND x7=x8, 1d} S//blog->x4[./author->x5][./category->x8];
Q3: S//blog->x4[./author->x5][./title->x6]
    FOLLOWED BY {x5=x5' AND x6=x6', 7d} S//blog->x4'[./author->x5'][./title->x6'];
"""


def d(path: str, namespaces: tuple[tuple[str, str], ...] = ()) -> VarDef:
    """The expected definition written as an XSCL block without bindings (order-insensitive)."""
    block = parse_query(path, namespaces=namespaces).blocks[0]
    return VarDef(Block(block.stream, order_steps(block.steps)))


def norm(text: str, namespaces: tuple[tuple[str, str], ...] = ()) -> NormalQuery:
    return normalize(parse_query(text, namespaces=namespaces))


def defs(normal: NormalQuery) -> dict[str, VarDef]:
    return {v.name: v.definition for b in normal.blocks for v in b.variables}


# --- the thesis's queries (spec section 2) -------------------------------------------


def test_thesis_q1_tree_definitions_and_joins() -> None:
    q1 = normalize(parse_queries(THESIS)[0])
    left, right = q1.blocks
    assert (left.root, [v.name for v in left.variables]) == ("x1", ["x1", "x2", "x3"])
    assert left.edges == (("x1", "x2"), ("x1", "x3"))
    assert (right.root, right.edges) == ("x4", (("x4", "x5"), ("x4", "x6")))
    assert defs(q1) == {
        "x1": d("S//book"),
        "x2": d("S//book/author"),
        "x3": d("S//book/title"),
        "x4": d("S//blog"),
        "x5": d("S//blog/author"),
        "x6": d("S//blog/title"),
    }
    assert not any(v.generated for b in q1.blocks for v in b.variables)
    assert q1.equalities == (NormalEquality("x2", "x5", 0, 1), NormalEquality("x3", "x6", 0, 1))
    assert q1.ops == (NormalOp("FOLLOWED BY", 3_600_000_000),)
    assert q1.join_variables == {"x2", "x3", "x5", "x6"}
    assert left.exists == d("S//book[./author][./title]")
    assert left.first_step == d("S//book") == q1.variable("x1").definition


def test_thesis_queries_share_definitions() -> None:
    q1, q2, q3 = parse_queries(THESIS)
    shared = canonical_variables([q1, q2, q3])
    assert shared[d("S//book/author")] == [("Q1", "x2"), ("Q2", "x2")]
    assert shared[d("S//book")] == [("Q1", "x1"), ("Q2", "x1")]
    assert shared[d("S//blog")] == [("Q1", "x4"), ("Q2", "x4"), ("Q3", "x4"), ("Q3", "x4'")]
    assert shared[d("S//blog/author")] == [
        ("Q1", "x5"), ("Q2", "x5"), ("Q3", "x5"), ("Q3", "x5'"),
    ]  # fmt: skip
    assert shared[d("S//book/category")] == [("Q2", "x7")]
    # Q3's two blocks are the same pattern: same shapes, same definitions.
    n3 = normalize(q3)
    assert [v.definition for v in n3.blocks[0].variables] == [
        v.definition for v in n3.blocks[1].variables
    ]
    assert n3.ops == (NormalOp("FOLLOWED BY", 7 * 86_400_000_000),)


def test_model_docstring_example() -> None:
    n = norm("S//book->x1[./author->x2][./price] FOLLOWED BY {x2=y, 1h} S//blog[./author->y]")
    assert defs(n) == {
        "x1": d("S//book[./price]"),
        "x2": d("S//book[./price]/author"),
        "y": d("S//blog/author"),
    }
    assert n.blocks[0].edges == (("x1", "x2"),)
    assert (n.blocks[1].root, n.blocks[1].edges) == ("y", ())
    assert n.blocks[1].first_step == d("S//blog")


# --- existential bindings (spec 3.3) -------------------------------------------------


def test_unjoined_binding_becomes_a_filter() -> None:
    n = norm("S//book->b[./price->p][./author->a] JOIN {a=c, 1h} S//x[./c->c]")
    assert [v.name for v in n.blocks[0].variables] == ["b", "a"]
    assert defs(n)["b"] == d("S//book[./price]")
    assert defs(n)["a"] == d("S//book[./price]/author")
    with pytest.raises(KeyError):
        n.variable("p")


def test_select_keeps_a_variable() -> None:
    n = norm("SELECT p FROM S//book[./price->p][./author->a] JOIN {a=c, 1h} S//x[./c->c]")
    block = n.blocks[0]
    assert block.root == "_b0_0"
    assert {v.name for v in block.variables} == {"_b0_0", "p", "a"}
    assert defs(n)["p"] == d("S//book/price")
    assert defs(n)["_b0_0"] == d("S//book")


def test_block_without_variables_that_matter_is_an_existence_test() -> None:
    n = norm("S//book->b[./price->p] JOIN {TRUE, 10s} T//x->x")
    for block in n.blocks:
        assert (block.root, block.variables, block.edges) == (None, (), ())
    assert n.blocks[0].exists == d("S//book[./price]")
    assert n.blocks[0].first_step == d("S//book[./price]")
    assert n.equalities == () and n.ops == (NormalOp("JOIN", 10_000_000),)


def test_block_with_no_step_is_the_root_element() -> None:
    n = norm("SELECT x FROM S JOIN {TRUE, INF} T//item->x")
    first = n.blocks[0]
    assert first.exists == VarDef(Block("S", ())) and first.exists.path.steps == ()
    assert (first.first_step, first.root) == (None, None)
    assert n.ops == (NormalOp("JOIN", None),)
    assert defs(n) == {"x": d("T//item")}


# --- generated branching variables -----------------------------------------------------


def test_generated_variable_at_branching_point() -> None:
    n = norm(
        "S//book[./author->a][./title->t] JOIN {a=x AND t=y, 1h} S//blog[./author->x][./title->y]"
    )
    b0, b1 = n.blocks
    assert (b0.root, b0.edges) == ("_b0_0", (("_b0_0", "a"), ("_b0_0", "t")))
    assert (b1.root, b1.edges) == ("_b1_0", (("_b1_0", "x"), ("_b1_0", "y")))
    assert n.variable("_b0_0").generated and not n.variable("a").generated
    assert defs(n)["_b0_0"] == d("S//book")
    assert defs(n)["a"] == d("S//book/author")


def test_generated_names_skip_user_names() -> None:
    n = norm("S//book[./author->_b0_0][./title->t] JOIN {_b0_0=x AND t=y, 1h} S//x[./a->x][./t->y]")
    assert n.blocks[0].root == "_b0_1"
    assert not n.variable("_b0_0").generated


def test_branching_inside_predicates_and_continuation_filter() -> None:
    n = norm("S//a[./b[./c->x][./d->y]]/e JOIN {x=u AND y=v, 1h} T//r[./u->u][./v->v]")
    assert defs(n)["_b0_0"] == d("S//a[./e]/b")
    assert defs(n)["x"] == d("S//a[./e]/b/c")
    assert n.blocks[0].edges == (("_b0_0", "x"), ("_b0_0", "y"))


def test_nested_generated_variables_and_dropped_branches() -> None:
    n = norm(
        "S//a[./b->x]/c[./d->y][./e->z] JOIN {x=p AND y=q AND z=r, 1h} T//t[./p->p][./q->q][./r->r]"
    )
    b0 = n.blocks[0]
    assert [v.name for v in b0.variables] == ["_b0_0", "x", "_b0_1", "y", "z"]
    assert b0.edges == (("_b0_0", "x"), ("_b0_0", "_b0_1"), ("_b0_1", "y"), ("_b0_1", "z"))
    assert defs(n)["_b0_1"] == d("S//a/c")  # [./b] leads to x: dropped
    assert defs(n)["y"] == d("S//a/c/d")


def test_variables_bound_inside_predicates_join_the_tree() -> None:
    n = norm("SELECT x1, x2 FROM S//book->x1[./author->x2]")
    assert defs(n) == {"x1": d("S//book"), "x2": d("S//book/author")}
    assert n.blocks[0].edges == (("x1", "x2"),)


# --- compared paths (spec 3.1) ---------------------------------------------------------


def test_binding_inside_compared_path_carries_the_comparison() -> None:
    n = norm("SELECT y FROM S//b[./c->y = 'x']")
    expected = d("S//b/c")
    last = expected.path.steps[-1]
    comparison = ComparisonPredicate(RelPath(()), "=", StringLiteral("x"))
    compared = Step(last.axis, last.test, None, (comparison,))
    assert defs(n)["y"] == VarDef(Block("S", (*expected.path.steps[:-1], compared)))
    assert defs(n)["y"] == d("S//b/c[. = 'x']")


def test_binding_in_the_middle_of_a_compared_path() -> None:
    assert defs(norm("SELECT y FROM S//b[./a->y/b = 'x']"))["y"] == d("S//b/a[./b = 'x']")


def test_two_bindings_in_one_compared_path() -> None:
    n = norm("SELECT y, z FROM S//b[./a->y/b->z >= 3]")
    assert defs(n) == {"y": d("S//b/a"), "z": d("S//b/a/b[. >= 3]")}
    assert n.blocks[0].edges == (("y", "z"),)


def test_compared_path_with_unjoined_binding_is_a_filter() -> None:
    n = norm("SELECT t FROM S//item[./price->p > 10][./title->t]")
    assert defs(n)["t"] == d("S//item[./price > 10]/title")


# --- axes and node tests ----------------------------------------------------------------


def test_descendant_attribute_and_text_steps() -> None:
    n = norm("SELECT h, t, l FROM S//item[.//@href->h][title/text()->t][@lang->l]")
    assert defs(n)["h"] == d("S//item//@href")
    assert defs(n)["t"] == d("S//item/title/text()")
    assert defs(n)["l"] == d("S//item/@lang")
    assert defs(n)["_b0_0"] == d("S//item")


def test_implicit_child_axis_and_dot_slash_are_the_same() -> None:
    assert defs(norm("SELECT a FROM S/rss/channel[author->a]")) == defs(
        norm("SELECT a FROM S/rss/channel[./author->a]")
    )


def test_wildcard_steps_and_filters_on_every_step() -> None:
    n = norm("SELECT v FROM S/*[@type = 'x']//entry[./id]/value->v[. != '']")
    assert defs(n)["v"] == d("S/*[@type = 'x']//entry[./id]/value[. != '']")


# --- canonical order --------------------------------------------------------------------


def test_predicates_are_ordered_and_deduplicated() -> None:
    a = norm("SELECT x FROM S//book[./title][./author = 'Ann'][./title][.]/isbn->x")
    b = norm("SELECT x FROM S//book[./author = 'Ann'][./title]/isbn->x")
    assert defs(a) == defs(b)
    book = defs(a)["x"].path.steps[0]
    assert len(book.predicates) == 2


def test_rewrites_do_not_depend_on_predicate_order() -> None:
    a = norm("S//a[./p][./b->x][./c->y] JOIN {x=u AND y=v, 1s} T//t[./v->v][./u->u]")
    b = norm("S//a[./c->y][./b->x][./p] JOIN {y=v AND x=u, 1s} T//t[./u->u][./v->v]")
    assert a.blocks == b.blocks and a.equalities == b.equalities


# --- namespaces ---------------------------------------------------------------------------


ATOM = "http://www.w3.org/2005/Atom"


def test_prefixes_are_replaced_by_their_uri() -> None:
    n1 = norm("SELECT t FROM S//a:entry/a:title->t", (("a", ATOM),))
    n2 = norm("SELECT t FROM S//atom:entry/atom:title->t", (("atom", ATOM),))
    n3 = norm("SELECT t FROM S//a:entry/a:title->t", (("a", "urn:other"),))
    assert defs(n1) == defs(n2) != defs(n3)
    step = defs(n1)["t"].path.steps[-1]
    assert step.test == NodeTest("element", "title", "{" + ATOM + "}")
    assert defs(norm("SELECT t FROM S//entry/title->t")) != defs(n1)  # any-namespace test


def test_xml_prefix_is_always_bound() -> None:
    step = defs(norm("SELECT l FROM S//item/@xml:lang->l"))["l"].path.steps[-1]
    assert step.test.prefix == "{http://www.w3.org/XML/1998/namespace}"


def test_function_predicates_get_canonical_prefixes() -> None:
    n1 = norm("SELECT e FROM S//e->e[contains(a:title, 'a:b')]", (("a", ATOM),))
    n2 = norm("SELECT e FROM S//e->e[contains(z:title, 'a:b')]", (("z", ATOM),))
    n3 = norm("SELECT e FROM S//e->e[contains(a:title, 'a:b')]", (("a", "urn:x"),))
    assert defs(n1) == defs(n2) != defs(n3)
    (predicate,) = defs(n1)["e"].path.steps[0].predicates
    expression = predicate.expression  # type: ignore[union-attr]
    assert expression == f"(:xmlns n0=\"{ATOM}\":) contains(n0:title, 'a:b')"
    namespaces = function_namespaces(expression)
    assert namespaces == {"n0": ATOM}
    elementpath.XPath2Parser(namespaces=namespaces).parse(expression)
    unprefixed = norm("SELECT e FROM S//e->e[starts-with(@href, 'https')]")
    (plain,) = defs(unprefixed)["e"].path.steps[0].predicates
    assert plain.expression == "starts-with(@href, 'https')"  # type: ignore[union-attr]
    assert function_namespaces(plain.expression) == {}  # type: ignore[union-attr]


# --- equalities and operators ------------------------------------------------------------------


def test_equalities_are_oriented_deduplicated_and_sorted() -> None:
    n = norm(
        "S//a[./p->p][./q->q] JOIN {u=p AND p=u AND q=p AND p=p, 1ms} T//b[./u->u] "
        "FOLLOWED BY {w=q AND u=w, 2m} U//c->w"
    )
    assert n.equalities == (
        NormalEquality("p", "p", 0, 0),  # kept: p must have a non-empty value
        NormalEquality("p", "q", 0, 0),
        NormalEquality("p", "u", 0, 1),
        NormalEquality("q", "w", 0, 2),
        NormalEquality("u", "w", 1, 2),
    )
    assert n.ops == (NormalOp("JOIN", 1_000), NormalOp("FOLLOWED BY", 120_000_000))
    assert n.block_of("w") == 2


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("S//a->x JOIN {x=y, 1s} T//b->z", "XSCL-V001"),
        ("SELECT y FROM S//a->x", "XSCL-V002"),
        ("S//a->x[./b->x] JOIN {x=z, 1s} T//b->z", "XSCL-V003"),
        ("S//a->x JOIN {x=z, 1s} T//b->y JOIN {y=z, 1s} U//c->z", "XSCL-V006"),
    ],
)
def test_normalize_rejects_invalid_queries(text: str, code: str) -> None:
    with pytest.raises(XsclValidationError) as info:
        norm(text)
    assert info.value.code == code


def test_normalize_is_pure() -> None:
    query = parse_queries(THESIS)[0]
    before = repr(query)
    normalize(query)
    assert repr(query) == before


_NORMAL_FORMS = """
import json, sys
from xscl.lang.normal_form import normalize
from xscl.lang.parser import parse_queries
for text in json.load(sys.stdin):
    for n in map(normalize, parse_queries(text)):
        print(repr((n.qid, n.blocks, n.equalities, n.ops)))
"""


def test_normal_forms_are_the_same_in_other_processes() -> None:
    """Processes with other hash seeds (other set and dict orders) print the same normal
    forms of the thesis's and generated queries as this one."""
    texts = [THESIS, *(seeded_workload(seed)[1].text for seed in range(8))]
    here = "".join(
        repr((n.qid, n.blocks, n.equalities, n.ops)) + "\n"
        for text in texts
        for n in map(normalize, parse_queries(text))
    )
    for seed in ("0", "1", "4242"):
        env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=str(ROOT))
        done = subprocess.run(
            [sys.executable, "-c", _NORMAL_FORMS], input=json.dumps(texts), env=env,
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        assert done.stdout == here, f"PYTHONHASHSEED={seed}"


def test_function_text_rewrite_spares_literals_axes_and_undeclared_prefixes() -> None:
    from xscl.lang.normal_form.qualify_namespaces import qualify_function_text

    odd = 'urn:x(":)"%'
    bound = {"p": odd, "q": "urn:q"}
    text = "child::p:a = 'p:a' and fn:exists(q:b/p:c) (: p:x :)"
    qualified = qualify_function_text(text, bound)
    body = qualified.split(":) ", 2)[-1]
    assert body == "child::n0:a = 'p:a' and fn:exists(n1:b/n0:c) (: p:x :)"
    assert function_namespaces(qualified) == {"n0": odd, "n1": "urn:q"}
    assert qualify_function_text(qualified, bound) == qualified  # idempotent
    elementpath.XPath2Parser(namespaces=function_namespaces(qualified)).parse(qualified)


def test_a_self_equality_is_kept_as_a_join_variable() -> None:
    """``x = x`` makes x a join variable that must have a non-empty value (spec 3.2/3.3)."""
    from xscl.lang.normal_form import normalize
    from xscl.lang.normal_form.model import NormalEquality
    from xscl.lang.parser import parse_query

    nq = normalize(parse_query("S//a->x[./b->y] JOIN {x=x AND y=z AND z=y, 1h} S//c->z"))
    assert NormalEquality("x", "x", 0, 0) in nq.equalities
    assert NormalEquality("y", "z", 0, 1) in nq.equalities
    assert len(nq.equalities) == 2
    assert nq.join_variables == {"x", "y", "z"}


def test_string_literals_are_put_in_nfc() -> None:
    """Values are compared NFC (spec 3.1): a decomposed literal is the composed one's
    definition, so the engines match both spellings of a value and share the variable."""
    decomposed = norm("S//a->x[./b = 'cafe\u0301'] JOIN {x = y, 1s} T//c->y")
    composed = norm("S//a->x[./b = 'caf\u00e9'] JOIN {x = y, 1s} T//c->y")
    assert defs(decomposed) == defs(composed)
    assert defs(composed)["x"] == d("S//a[./b = 'caf\u00e9']")


def test_function_text_renames_a_prefix_after_the_minus_operator() -> None:
    """Issue 36 defect 1: after ``)``, a digit or a space, ``-`` is XPath's minus and the
    name after it starts a QName; inside a name (``a-b:c``) it is part of the prefix."""
    from xscl.lang.normal_form.qualify_namespaces import qualify_function_text

    bound = {"a": ATOM, "a-b": "urn:ab"}
    assert qualify_function_text("sum(a:n)-a:m = 0", bound).endswith(" sum(n0:n)-n0:m = 0")
    assert qualify_function_text("5-a:m = 2", bound).endswith(" 5-n0:m = 2")
    assert qualify_function_text("x -a:m", bound).endswith(" x -n0:m")
    assert qualify_function_text("a-b:c", bound).endswith(" n0:c")
    assert function_namespaces(qualify_function_text("a-b:c", bound)) == {"n0": "urn:ab"}
    assert qualify_function_text("$a:v + 1", bound) == "$a:v + 1"  # a variable's name


def test_function_text_keeps_nested_xpath_comments_whole() -> None:
    """Issue 36 defect 3: a quote inside a nested comment opens no string."""
    from xscl.lang.normal_form.qualify_namespaces import qualify_function_text

    text = "true() (: it's (: a:x :) ' :) and exists(a:b) and 'y' = 'y'"
    qualified = qualify_function_text(text, {"a": ATOM})
    assert qualified.endswith(" true() (: it's (: a:x :) ' :) and exists(n0:b) and 'y' = 'y'")
    elementpath.XPath2Parser(namespaces=function_namespaces(qualified)).parse(qualified)
