"""Which normalised values are numbers for the reference (spec 3.1), and how they compare.

The table (``tests/number_spellings.py``) is the one Stage 1's tests use; the
parsers stay separate: the reference must not share Stage 1's.
"""

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
from xscl.lang.parser import parse_query
from xscl.reference import evaluate_query, make_document
from xscl.reference.compare import compare_value, parse_number


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
    huge_exponents_still_compare(parse_number)


@pytest.mark.parametrize(("value", "op", "literal", "expected"), COMPARISONS)
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
