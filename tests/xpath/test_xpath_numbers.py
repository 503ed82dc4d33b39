"""Which normalised values are numbers for Stage 1 (spec 3.1), and how they compare."""

from __future__ import annotations

from decimal import Decimal

import pytest

from xscl.lang.ast import NumberLiteral
from xscl.xpath.strings import compare, parse_number

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
        assert not compare(value, op, NumberLiteral(Decimal(5)))  # type: ignore[arg-type]


def test_huge_exponents_still_compare() -> None:
    """Exponents Decimal() cannot hold (past about 10**18) are clamped, not errors."""
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
        ("0.1", "=", "0.1", True),  # exact decimals, no binary rounding
        ("0.30000000000000001", "=", "0.3", False),
    ],
)
def test_numeric_comparisons(value: str, op: str, literal: str, expected: bool) -> None:
    assert compare(value, op, NumberLiteral(Decimal(literal))) is expected  # type: ignore[arg-type]


def test_infinities_equal_themselves_and_sort_outside_finite_values() -> None:
    inf, neg = parse_number("INF"), parse_number("-INF")
    assert inf == parse_number("+INF") and neg == parse_number("-INF")
    values = ["3", "INF", "-1e308", "-INF", "1e308", ".5"]
    ordered = sorted(values, key=lambda v: parse_number(v))  # type: ignore[arg-type, return-value]
    assert ordered == ["-INF", "-1e308", ".5", "3", "1e308", "INF"]
