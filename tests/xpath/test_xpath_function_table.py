"""Registered function predicates stay compiled: no cache, no cliff (issue 34).

Before, ``compile_function`` was an LRU of 4,096 expressions: past it every
document recompiled every expression.  Now a definition holds its compiled
template while it is registered, so evaluating documents compiles nothing,
however many distinct predicates there are.
"""

from __future__ import annotations

import pytest

from xscl.lang.ast import Block, FunctionPredicate, NodeTest, Step
from xscl.lang.normal_form.model import VarDef
from xscl.xpath import Stage1, Stage1Error
from xscl.xpath.functions import compilation_count

ITEMS = [
    "<rss><channel><item><title>Rust 1.80 released</title><category>a</category>"
    "<category>b</category></item><item><title>word4999 and more</title></item>"
    f"<item><title>Weekly {n}</title></item></channel></rss>"
    for n in range(5)
]


def _definition(expression: str) -> VarDef:
    step = Step("//", NodeTest("element", "item"), predicates=(FunctionPredicate(expression),))
    return VarDef(Block("F", (step,)))


def _expression_of(definition: VarDef) -> str:
    (predicate,) = definition.path.steps[0].predicates
    assert isinstance(predicate, FunctionPredicate)
    return predicate.expression


def _expressions() -> list[str]:
    """More than 4,096 distinct function predicates, of a few shapes."""
    keywords = [f"contains(title, 'word{n}')" for n in range(5000)]
    regexes = [f"matches(title, '^weekly {n}$', 'i')" for n in range(5)]
    others = ["starts-with(lower-case(title), 'rust')", "contains(category, 'a')"]
    return keywords + regexes + others


def test_no_compilation_per_document_past_4096_predicates() -> None:
    stage = Stage1()
    var_ids = [stage.register(_definition(e)) for e in _expressions()]
    for var_id in var_ids:
        stage.require_nodes(var_id)
    assert len(stage.functions) == 5007
    assert stage.functions.template_count == 4  # keywords, regexes, the two others
    after_registration = compilation_count()
    matched = {var for xml in ITEMS for var, _node in stage.evaluate_rows("F", "d", 0, xml).matches}
    assert compilation_count() == after_registration
    by_expression = {_expression_of(stage.definition(v)) for v in matched}
    assert by_expression == {
        *(f"contains(title, 'word{n}')" for n in (4, 49, 499, 4999)),
        "starts-with(lower-case(title), 'rust')",
        *(f"matches(title, '^weekly {n}$', 'i')" for n in range(5)),
    }
    # two category children: a type error, false and counted, as before
    assert stage.counters["function_errors"] == len(ITEMS)


def test_unregistering_releases_the_compiled_predicates() -> None:
    stage = Stage1()
    definitions = [_definition(e) for e in _expressions()[:50]]
    for definition in definitions:
        stage.register(definition)
    stage.register(definitions[0])  # a second use of one definition
    for definition in definitions:
        stage.unregister(definition)
    assert len(stage.functions) == 1
    stage.unregister(definitions[0])
    assert len(stage.functions) == 0 and stage.functions.template_count == 0


@pytest.mark.parametrize(
    "expression",
    ["matches(title, '\\bword\\b')", "matches(title, '(?i)rust')", "matches(., 'a(?=b)')",
     "matches(., 'rust', 'q')"],
)
def test_invalid_regexes_are_refused_at_stage1_registration(expression: str) -> None:
    stage = Stage1()
    with pytest.raises(Stage1Error) as caught:
        stage.register(_definition(expression))
    assert caught.value.code == "XSCL-X012"
    assert stage.registered == {} and len(stage.functions) == 0
