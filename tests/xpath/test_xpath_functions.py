"""Function predicates: namespaces from the normal form, and the regex guard.

A query written with ``DECLARE NAMESPACE atom = ...`` and a prefixed name
inside a function predicate is normalised by ``xscl.lang.normal_form`` (which
renames the prefix ``n0`` and records it in a leading ``(:xmlns ...:)``
comment) and evaluated by Stage 1: the prefixed name must select the Atom
element only.  Registration refuses regex patterns that could backtrack
exponentially or that a document could supply.
"""

from __future__ import annotations

import pytest

from xscl.lang.ast import Block, FunctionPredicate, NodeTest, Step
from xscl.lang.normal_form import normalize
from xscl.lang.normal_form.model import VarDef
from xscl.lang.parser import parse_queries
from xscl.xpath import Stage1, Stage1Error
from xscl.xpath.functions import nested_quantifier

ATOM = "http://www.w3.org/2005/Atom"

QUERY = (
    f'DECLARE NAMESPACE atom = "{ATOM}";\n'
    "Q1: S//atom:entry->e[contains(atom:title, 'x')]/atom:id->i "
    "JOIN {i = g, 1h} T//item/guid->g\n"
)

FEED = f"""<feed xmlns="{ATOM}" xmlns:o="urn:other">
  <entry><title>a box</title><id>1</id></entry>
  <entry><title>plain</title><id>2</id></entry>
  <entry><o:title>x marks</o:title><title>none</title><id>3</id></entry>
</feed>"""


def test_prefixed_names_in_function_predicates_use_the_declared_namespace() -> None:
    (query,) = parse_queries(QUERY)
    normal = normalize(query)
    (id_var,) = [v for v in normal.blocks[0].variables if v.name == "i"]
    (predicate,) = id_var.definition.path.steps[0].predicates
    assert isinstance(predicate, FunctionPredicate)
    assert "n0:title" in predicate.expression  # the normal form's canonical prefix
    stage = Stage1()
    var = stage.register(id_var.definition)
    stage.require_value(var)
    rows = stage.evaluate_rows("S", "d", 1, FEED)
    assert stage.counters["function_errors"] == 0
    # entry 1 has an Atom title with 'x'; entry 3's 'x' is in another namespace
    assert [strval for _node, strval in rows.values] == ["1"]


def _with_function(expression: str) -> VarDef:
    step = Step("//", NodeTest("element", "a"), predicates=(FunctionPredicate(expression),))
    return VarDef(Block("S", (step,)))


@pytest.mark.parametrize(
    "expression",
    [
        "matches(string(.), '^(a+)+$')",
        "replace(string(.), '(\\w*x)*', '')",
        "tokenize(string(.), '((ab)+c)*')",
        "matches(string(.), string(@pattern))",
    ],
)
def test_dangerous_regexes_are_refused_at_registration(expression: str) -> None:
    stage = Stage1()
    with pytest.raises(Stage1Error) as caught:
        stage.register(_with_function(expression))
    assert caught.value.code == "XSCL-X012"
    assert stage.registered == {}


def test_safe_regexes_register_and_evaluate() -> None:
    stage = Stage1()
    var = stage.register(_with_function("matches(string(.), '^(ab)+[0-9]{2,}$')"))
    stage.require_nodes(var)
    rows = stage.evaluate_rows("S", "d", 1, "<r><a>abab12</a><a>ab1</a></r>")
    assert [node for _var, node in rows.matches] == ["1"]


@pytest.mark.parametrize(
    ("pattern", "nested"),
    [
        ("^(a+)+$", True),
        ("(x+){2,5}", True),
        ("(a{2,})*", True),
        ("((a+)b)*", True),
        ("^[0-9]+$", False),
        ("(ab)+", False),
        ("(a{2})+", False),
        ("(a*)?", False),
        ("[(a+)]+", False),
        ("a\\(b+\\)+", False),
        ("(\\d{3}-)+", False),
    ],
)
def test_nested_quantifier_detection(pattern: str, nested: bool) -> None:
    assert nested_quantifier(pattern) is nested
