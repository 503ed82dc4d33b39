"""String values and literal comparisons (spec sections 1 and 3.1).

A node's value is its XPath 1.0 string value, Unicode NFC-normalised, with
leading/trailing XML whitespace (space, tab, CR, LF) stripped.  Comparisons
against a string literal use exact equality or code-point order; against a
numeric literal both sides are compared as decimal numbers, and a value that
is not a number (XPath 1.0 ``Number`` lexical form: optional ``-``, digits with
an optional fraction, no exponent, no ``+``) makes every operator false,
``!=`` included.
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
_NUMBER = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)\Z")


def normalize(raw: str) -> str:
    """NFC-normalise ``raw`` and strip leading/trailing XML whitespace."""
    if not raw.isascii():
        raw = unicodedata.normalize("NFC", raw)
    return raw.strip(XML_WHITESPACE)


def parse_number(value: str) -> Decimal | None:
    """The number a normalised value denotes, or None if it is not an XPath number."""
    if not _NUMBER.match(value):
        return None
    try:
        return Decimal(value)
    except InvalidOperation:  # pragma: no cover - the regex admits only valid decimals
        return None


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
