"""String values and literal comparisons (spec sections 1 and 3.1).

A node's value is its XPath 1.0 string value, Unicode NFC-normalised, with
leading/trailing XML whitespace (space, tab, CR, LF) stripped.  Comparisons
against a string literal use exact equality or code-point order; against a
numeric literal both sides are compared as numbers, and a value that is not a
number makes every operator false, ``!=`` included.

A value is a number when it is in the lexical space of ``xs:double`` other
than ``NaN`` (spec 3.1): an optional sign, ASCII digits with an optional
fraction (``7``, ``+7``, ``-0.5``, ``7.``, ``.5``), an optional exponent
(``1e3``, ``2.5E-2``), or ``INF``, ``+INF``, ``-INF``.  The pattern is explicit
because ``Decimal()`` (like ``float()``) also takes ``NaN``, ``Infinity``,
``1_000`` and digits of other scripts, none of which are numbers here.
Finite values are exact decimals (``1e3 = 1000``); ``INF`` is
``Decimal('Infinity')``, so it sorts above every finite value (the literal
index bisects over decimals and infinities alike).
"""

from __future__ import annotations

import operator
import re
import unicodedata
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

from xscl.lang.ast import CompareOp, LiteralValue, NumberLiteral

XML_WHITESPACE = " \t\r\n"
_NUMBER = re.compile(r"([+-]?)(?:([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE]([+-]?)[0-9]+)?|INF)")
#: An exponent ``Decimal()`` rejects (past about 10**18) is clamped to this: the
#: value still compares with every literal a query can spell (far fewer than
#: 10**17 digits) as the unclamped one would.
_EXPONENT_LIMIT = 10**17


def normalize(raw: str) -> str:
    """NFC-normalise ``raw`` and strip leading/trailing XML whitespace."""
    if not raw.isascii():
        raw = unicodedata.normalize("NFC", raw)
    return raw.strip(XML_WHITESPACE)


def parse_number(value: str) -> Decimal | None:
    """The number a normalised value denotes, or None if it is not a number (spec 3.1)."""
    m = _NUMBER.fullmatch(value)
    if m is None:
        return None
    sign, digits, exponent_sign = m.groups()
    if digits is None:
        return Decimal(sign + "Infinity")
    try:
        return Decimal(value)
    except InvalidOperation:  # an exponent beyond Decimal's range (about 10**18)
        return Decimal(f"{sign}{digits}E{exponent_sign or '+'}{_EXPONENT_LIMIT}")


OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def compare(value: str, op: CompareOp, literal: LiteralValue) -> bool:
    """Whether normalised ``value`` ``op`` ``literal`` holds (spec 3.1)."""
    if isinstance(literal, NumberLiteral):
        number = parse_number(value)
        if number is None:
            return False
        return OPERATORS[op](number, literal.value)
    return OPERATORS[op](value, literal.value)
