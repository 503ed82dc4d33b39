"""Which normalised values are numbers for the reference (spec 3.1), and how they compare.

The same table as ``tests/xpath/test_xpath_numbers.py``, kept separate: the
reference has its own parser of numbers and must not share Stage 1's.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from xscl.lang.ast import NumberLiteral
from xscl.lang.parser import parse_query
from xscl.reference import evaluate_query, make_document
from xscl.reference.compare import compare_value, parse_number

NUMBERS = [
    ("7", Decimal(7)),
    ("+7", Decimal(7)),
    ("-0.5", Decimal("-0.5")),
    ("7.", Decimal(7)),
    (".5", Decimal("0.5")),
    ("-.5", Decimal("-0.5")),
    ("1e3", Decimal(1000)),
    ("2.5E-2", Decimal("0.025")),
    ("+1E+0003", Decimal(1000)),
    ("-0", Decimal(0)),
    ("007", Decimal(7)),
    ("1." + "0" * 50 + "1", Decimal("1." + "0" * 50 + "1")),  # exact, whatever the precision
    ("-1." + "0" * 50 + "1", Decimal("-1." + "0" * 50 + "1")),
    ("INF", Decimal("Infinity")),
    ("+INF", Decimal("Infinity")),
    ("-INF", Decimal("-Infinity")),
]

NOT_NUMBERS = [
    "", "NaN", "nan", "+NaN", "inf", "Inf", "Infinity", "-infinity", "INFINITY", "INF5",
    "1,000", "1_000", "0x10", "$5", "5$", "1 000", "+", "-", ".", "e3", "1e", "1e+", "1e3.5",
    "--1", "+-1", "1..2", "\uff17", "\u0667", "\u0967", "7\u0301", "\u00b2",
]  # fmt: skip


@pytest.mark.parametrize(("value", "number"), NUMBERS)
def test_numbers(value: str, number: Decimal) -> None:
    assert parse_number(value) == number


@pytest.mark.parametrize("value", NOT_NUMBERS)
def test_not_numbers(value: str) -> None:
    assert parse_number(value) is None
    for op in ("=", "!=", "<", "<=", ">", ">="):
        assert not compare_value(value, op, NumberLiteral(Decimal(5)))  # type: ignore[arg-type]


def test_whitespace_is_stripped_before_parsing() -> None:
    assert compare_value(" \t12\n ", "=", NumberLiteral(Decimal(12)))
    assert not compare_value("\u00a012", "=", NumberLiteral(Decimal(12)))  # NBSP is no XML space


def test_huge_exponents_still_compare() -> None:
    big = parse_number("1e" + "9" * 40)
    tiny = parse_number("-1e-" + "9" * 40)
    assert big is not None and tiny is not None
    assert big > Decimal("9" * 1000) and big != Decimal("Infinity")
    assert Decimal("-0." + "0" * 1000 + "1") < tiny < 0
    assert parse_number("0e" + "9" * 40) == 0


@pytest.mark.parametrize(
    ("value", "op", "literal", "expected"),
    [
        ("INF", ">", "5", True),
        ("INF", "=", "5", False),
        ("INF", "!=", "5", True),
        ("-INF", "<", "-1" + "0" * 308, True),
        ("+INF", ">=", "1" + "0" * 400, True),
        ("1e3", "=", "1000", True),
        ("1e3", "=", "1000.000", True),
        ("2.5E-2", "<", "0.03", True),
        ("+7", "=", "7", True),
        ("7.", ">=", "7", True),
        (".5", "<", "1", True),
        ("0.1", "=", "0.1", True),
        ("0.30000000000000001", "=", "0.3", False),
    ],
)
def test_numeric_comparisons(value: str, op: str, literal: str, expected: bool) -> None:
    assert compare_value(value, op, NumberLiteral(Decimal(literal))) is expected  # type: ignore[arg-type]


def test_infinities_equal_themselves() -> None:
    assert parse_number("INF") == parse_number("+INF") == Decimal("Infinity")
    assert parse_number("-INF") == Decimal("-Infinity")
    ordered = [parse_number(v) for v in ("-INF", "-1e308", "1e308", "INF")]
    assert ordered == sorted(ordered)  # type: ignore[type-var]


@pytest.mark.parametrize(
    ("predicate", "docids"),
    [
        ("[./p > 5]", ["inf", "exp", "plus"]),
        ("[./p < -1000]", ["neginf"]),
        ("[./p = 1000]", ["exp"]),
        ("[./p != 1000]", ["inf", "neginf", "plus", "dot"]),  # NaN, 1,000, ... never
        ("[./p <= 0.5]", ["neginf", "dot"]),
    ],
)
def test_blocks_with_numeric_literals(predicate: str, docids: list[str]) -> None:
    values = {
        "inf": "INF", "neginf": "-INF", "exp": "1e3", "plus": "+7", "dot": ".5",
        "nan": "NaN", "comma": "1,000", "hex": "0x10", "wide": "\uff17", "empty": "",
    }  # fmt: skip
    docs = [
        make_document("S", d, i, f"<item><p>{v}</p></item>")
        for i, (d, v) in enumerate(values.items())
    ]
    records = evaluate_query(parse_query(f"S/item{predicate}"), docs)
    assert sorted(r.docs[0].docid for r in records) == sorted(docids)
