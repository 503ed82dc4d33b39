"""Comparison of a node value with a literal (spec/XSCL.md section 3.1).

* The node value is normalised (NFC, outer XML whitespace stripped).
* String literal: the literal is NFC-normalised (not stripped); ``=``/``!=``
  compare exactly, ``<``/``<=``/``>``/``>=`` in Unicode code-point order.
* Numeric literal: the value must be a number, else the comparison is false
  (for ``!=`` too). A number is the lexical space of ``xs:double`` minus ``NaN``:
  ``[+-]?(([0-9]+(\\.[0-9]*)?|\\.[0-9]+)([eE][+-]?[0-9]+)?|INF)`` over ASCII
  digits only (so no ``NaN``, ``inf``/``Infinity``, hex, thousands separators,
  ``1_000`` or digits of other scripts, all of which ``Decimal()`` and
  ``float()`` would take). Finite values and the literal are compared exactly
  as decimals (no binary floating point); ``INF``/``+INF`` is positive and
  ``-INF`` negative infinity, beyond every finite value and equal to itself.
"""

from __future__ import annotations

import operator
import re
import unicodedata
from collections.abc import Callable
from decimal import MAX_EMAX, MAX_PREC, MIN_EMIN, Context, Decimal
from typing import Any

from xscl.lang.ast import CompareOp, LiteralValue, NumberLiteral, StringLiteral
from xscl.reference.xmltree import normalize_value

#: Exact arithmetic for ``scaleb``: precision as large as any mantissa, exponent
#: range as wide as Decimal allows.
_WIDE = Context(prec=MAX_PREC, Emax=MAX_EMAX, Emin=MIN_EMIN)

_SIGN = r"(?P<sign>[+-]?)"
_MANTISSA = r"(?P<mantissa>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
_EXPONENT = r"(?:[eE](?P<exponent>[+-]?[0-9]+))?"
_NUMBER = re.compile(f"{_SIGN}(?:{_MANTISSA}{_EXPONENT}|(?P<inf>INF))", re.ASCII)

#: The largest exponent magnitude kept as written. ``Decimal()`` cannot hold an
#: exponent much past 10**18; any exponent of magnitude >= 10**17 puts a nonzero
#: value beyond every literal a query can spell, so the reference clamps there.
_MAX_EXPONENT = 10**17


def parse_number(value: str) -> Decimal | None:
    """The number a normalised value spells, or None when it is not a number."""
    m = _NUMBER.fullmatch(value)
    if m is None:
        return None
    negative = m.group("sign") == "-"
    if m.group("inf"):
        return Decimal("-Infinity" if negative else "Infinity")
    mantissa = Decimal(m.group("mantissa"))
    if not mantissa:
        return Decimal(0)
    exponent_text = m.group("exponent") or "0"
    digits = exponent_text.lstrip("+-").lstrip("0")
    if len(digits) > len(str(_MAX_EXPONENT)):
        exponent = _MAX_EXPONENT
    else:
        exponent = min(int(digits or "0"), _MAX_EXPONENT)
    if exponent_text.startswith("-"):
        exponent = -exponent
    number = mantissa.scaleb(exponent, _WIDE)
    return number.copy_negate() if negative else number  # exact, unlike unary minus


_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def _apply(op: CompareOp, left: Decimal | str, right: Decimal | str) -> bool:
    return bool(_OPERATORS[op](left, right))


def compare_value(raw_value: str, op: CompareOp, literal: LiteralValue) -> bool:
    """Whether a node whose string value is ``raw_value`` satisfies ``op literal``."""
    value = normalize_value(raw_value)
    if isinstance(literal, NumberLiteral):
        number = parse_number(value)
        if number is None:
            return False
        return _apply(op, number, literal.value)
    assert isinstance(literal, StringLiteral)
    return _apply(op, value, unicodedata.normalize("NFC", literal.value))
