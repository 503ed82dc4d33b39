"""The literal index answers exactly what one ``compare`` per literal answers (spec 3.1)."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from tests.profiles import examples
from xscl.lang.ast import NumberLiteral, StringLiteral
from xscl.xpath.literal_index import LiteralIndex
from xscl.xpath.strings import compare, parse_number

OPS = ["=", "!=", "<", "<=", ">", ">="]
# numbers of spec 3.1 (signs, exponents, INF) and values that are not numbers
NUMERIC_WORDS = [
    "+1", "1e1", "25E-1", "-.3e1", "1.", "INF", "+INF", "-INF", "NaN",
    "1,000", "\uff11",
]
WORDS = st.sampled_from(
    ["", "a", "b", "ab", "B", "caf\u00e9", "1", "10", "2.5", "-3", "x y", *NUMERIC_WORDS]
)
NUMBERS = st.sampled_from(["0", "1", "2.5", "-3", "10", "1.0", "-1000000"]).map(Decimal)


@examples(100)
@given(
    entries=st.lists(st.tuples(st.sampled_from(OPS), WORDS), max_size=12),
    values=st.lists(WORDS, max_size=3),
)
def test_string_literals_match_compare(entries: list[tuple[str, str]], values: list[str]) -> None:
    index = LiteralIndex([(op, lit, i) for i, (op, lit) in enumerate(entries)])
    out: list[int] = []
    index.collect(values, out)
    expected = {
        i
        for i, (op, lit) in enumerate(entries)
        if any(compare(v, op, StringLiteral(lit)) for v in values)  # type: ignore[arg-type]
    }
    assert set(out) == expected


@examples(100)
@given(
    entries=st.lists(st.tuples(st.sampled_from(OPS), NUMBERS), max_size=12),
    values=st.lists(WORDS, max_size=3),
)
def test_number_literals_match_compare(
    entries: list[tuple[str, Decimal]], values: list[str]
) -> None:
    index = LiteralIndex([(op, lit, i) for i, (op, lit) in enumerate(entries)])
    numbers = [n for n in map(parse_number, values) if n is not None]
    out: list[int] = []
    index.collect(numbers, out)
    expected = {
        i
        for i, (op, lit) in enumerate(entries)
        if any(compare(v, op, NumberLiteral(lit)) for v in values)  # type: ignore[arg-type]
    }
    assert set(out) == expected
