"""Spec 3.1's number spellings, shared by the tests of each engine's own number parser.

Each list says what it expects: ``NUMBERS`` are values that are numbers, with the
exact decimal each denotes; ``NOT_NUMBERS`` are values that are not numbers (which
``Decimal()`` or ``float()`` would partly accept). The reference and Stage 1 keep
separate parsers (the reference shares no code with the engine); their tests share
this table, so both are held to the same spellings.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

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

#: (value, operator, numeric literal, whether the comparison holds)
COMPARISONS = [
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
]


def huge_exponents_still_compare(parse_number: Callable[[str], Decimal | None]) -> None:
    """Exponents ``Decimal()`` cannot hold (past about 10**18) are clamped, not errors."""
    big = parse_number("1e" + "9" * 40)
    tiny = parse_number("-1e-" + "9" * 40)
    assert big is not None and tiny is not None
    assert big > Decimal("9" * 1000) and big != Decimal("Infinity")
    assert Decimal("-0." + "0" * 1000 + "1") < tiny < 0
    assert parse_number("0e" + "9" * 40) == 0
