"""The NFC shortcut of ``PredicateEvaluator.element_value`` (``nfc_text``).

When the root's raw string value passes the NFC quick check (``normalize``
returns its argument itself), every element's value, a substring of it, is
NFC too and skips normalisation; otherwise each value is normalised on its own.
"""

from __future__ import annotations

import unicodedata

from xscl.lang.ast import Block, ComparisonPredicate, NodeTest, RelPath, Step, StringLiteral
from xscl.lang.normal_form.model import VarDef
from xscl.xpath import Stage1
from xscl.xpath.predicates import PredicateEvaluator
from xscl.xpath.safe_parse import parse_document


def _own(op: str, literal: str) -> tuple[ComparisonPredicate, ...]:
    return (ComparisonPredicate(RelPath(()), op, StringLiteral(literal)),)  # type: ignore[arg-type]


def _path(*steps: Step) -> VarDef:
    return VarDef(Block("S", steps))


def test_identity_means_the_quick_check_passed() -> None:
    """What the shortcut relies on: ``normalize`` returns a new object unless the
    quick check says YES, even for text that is NFC after the full check."""
    nfc_but_maybe = "x\u0301"  # NFC (no precomposed x-acute) but quick check MAYBE
    assert unicodedata.normalize("NFC", nfc_but_maybe) == nfc_but_maybe
    assert unicodedata.normalize("NFC", nfc_but_maybe) is not nfc_but_maybe
    clean = "caf\u00e9 \u201cquoted\u201d"
    assert unicodedata.normalize("NFC", clean) is clean


def test_flag_follows_the_roots_text() -> None:
    clean = parse_document("<a><b>caf\u00e9</b><c>\u00e9t\u00e9</c></a>".encode())
    evaluator = PredicateEvaluator(clean)
    assert evaluator.element_value(clean) == "caf\u00e9\u00e9t\u00e9"
    assert evaluator.nfc_text
    assert [evaluator.element_value(child) for child in clean] == ["caf\u00e9", "\u00e9t\u00e9"]
    decomposed = parse_document("<a><b>cafe\u0301</b><c>x\u0301</c></a>".encode())
    evaluator = PredicateEvaluator(decomposed)
    assert evaluator.element_value(decomposed) == "caf\u00e9x\u0301"
    assert not evaluator.nfc_text
    assert [evaluator.element_value(child) for child in decomposed] == ["caf\u00e9", "x\u0301"]
    # a child evaluated before the root does not set the flag
    evaluator = PredicateEvaluator(clean)
    assert evaluator.element_value(clean[0]) == "caf\u00e9"
    assert not evaluator.nfc_text


def test_values_and_predicates_with_and_without_the_shortcut() -> None:
    """The root is tested on its own value first (a self predicate), so its text
    decides whether the children's values are normalised one by one."""
    a, b = NodeTest("element", "a"), NodeTest("element", "b")
    root_test = _path(Step("//", a, predicates=_own(">=", "")))
    b_values = _path(Step("//", b))
    b_cafe = _path(Step("//", b, predicates=_own("=", "caf\u00e9")))
    stage = Stage1()
    ids = [stage.register(d) for d in (root_test, b_values, b_cafe)]
    for var in ids:
        stage.require_value(var)
    docs = {
        # root text NFC: the children skip normalisation
        "<a><b>caf\u00e9</b><b> \u00e9 </b></a>": ["caf\u00e9", "\u00e9"],
        # root text not NFC: each child is normalised on its own
        "<a><b>cafe\u0301</b><b>caf\u00e9</b></a>": ["caf\u00e9", "caf\u00e9"],
    }
    first = {}
    for _ in range(2):  # cold and warm caches
        for xml, expected in docs.items():
            rows = stage.evaluate_rows("S", "d", 1, xml.encode())
            assert first.setdefault(xml, rows) == rows
            values = dict(rows.values)
            got = sorted(values[node] for var, node in rows.value_nodes if var == ids[1])
            assert got == sorted(expected)
            cafe = {node for var, node in rows.value_nodes if var == ids[2]}
            assert cafe == {node for var, node in rows.value_nodes if var == ids[1]} & {
                node for node, value in values.items() if value == "caf\u00e9"
            }
            assert cafe
