"""Comparison of a node value with a literal (spec/XSCL.md section 3.1).

* The node value is normalised (NFC, outer XML whitespace stripped).
* String literal: the literal is NFC-normalised (not stripped); ``=``/``!=``
  compare exactly, ``<``/``<=``/``>``/``>=`` in Unicode code-point order.
* Numeric literal: the value must be a number, else the comparison is false
  (for ``!=`` too). Accepted number syntax (decision): an optional sign, digits
  with an optional fraction or a leading-dot fraction, an optional exponent:
  ``[+-]?(\\d+(\\.\\d*)?|\\.\\d+)([eE][+-]?\\d+)?`` (ASCII digits only; no NaN,
  INF, hex or thousands separators). Values and literal are compared exactly as
  decimals (no binary floating point).
"""

from __future__ import annotations

import operator
import re
import unicodedata
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

from xscl.lang.ast import CompareOp, LiteralValue, NumberLiteral, StringLiteral
from xscl.reference.xmltree import normalize_value

_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def parse_number(value: str) -> Decimal | None:
    """The number a normalised value spells, or None when it is not a number."""
    if not _NUMBER.fullmatch(value):
        return None
    try:
        return Decimal(value)
    except InvalidOperation:  # pragma: no cover - the regex only admits valid decimals
        return None


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
