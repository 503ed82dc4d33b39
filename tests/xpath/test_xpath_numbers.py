"""Which normalised values are numbers for Stage 1 (spec 3.1), and how they compare."""

from __future__ import annotations

from decimal import Decimal

import pytest

from tests.number_spellings import (
    COMPARISONS,
    NOT_NUMBERS,
    NUMBERS,
    huge_exponents_still_compare,
)
from xscl.lang.ast import NumberLiteral
from xscl.xpath.strings import compare, parse_number


@pytest.mark.parametrize(("value", "number"), NUMBERS)
def test_numbers(value: str, number: Decimal) -> None:
    assert parse_number(value) == number


@pytest.mark.parametrize("value", NOT_NUMBERS)
def test_not_numbers(value: str) -> None:
    assert parse_number(value) is None
    for op in ("=", "!=", "<", "<=", ">", ">="):
        assert not compare(value, op, NumberLiteral(Decimal(5)))  # type: ignore[arg-type]


def test_huge_exponents_still_compare() -> None:
    huge_exponents_still_compare(parse_number)


@pytest.mark.parametrize(("value", "op", "literal", "expected"), COMPARISONS)
def test_numeric_comparisons(value: str, op: str, literal: str, expected: bool) -> None:
    assert compare(value, op, NumberLiteral(Decimal(literal))) is expected  # type: ignore[arg-type]


def test_infinities_equal_themselves_and_sort_outside_finite_values() -> None:
    inf, neg = parse_number("INF"), parse_number("-INF")
    assert inf == parse_number("+INF") and neg == parse_number("-INF")
    values = ["3", "INF", "-1e308", "-INF", "1e308", ".5"]
    ordered = sorted(values, key=lambda v: parse_number(v))  # type: ignore[arg-type, return-value]
    assert ordered == ["-INF", "-1e308", ".5", "3", "1e308", "INF"]
