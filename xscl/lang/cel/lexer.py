"""Tokens of CEL (docs/cel.md section 2.1), scanned on demand at a position.

The parser asks for the token at its position instead of tokenizing the whole
file first, so a bad character in one query never hides the queries around it,
and stream names (which may hold ``.`` and ``-``, like XSCL's) are read with
their own rule where the grammar expects a stream.

>>> s = Scanner("FILTER{Price >= 83}(Stock) -- a comment")
>>> [s.token_at(p).text for p in (0, 6, 7, 13)]
['FILTER', '{', 'Price', '>=']
>>> s.skip_space(26)
39
>>> s.stream_name_at(0)
('FILTER', 6)
"""

from __future__ import annotations

import re
from typing import Literal, NamedTuple

__all__ = ["KEYWORDS", "UNITS", "UNIT_HINTS", "Failure", "Scanner", "Token"]

#: Reserved words (case-insensitive): never attribute, stream or function names.
KEYWORDS = frozenset(
    {
        "SELECT", "FROM", "PUBLISH", "FILTER", "NEXT", "FOLD", "UNION", "AS",
        "AND", "OR", "NOT", "TRUE", "FALSE", "DUR", "DECLARE", "STREAM",
    }
)  # fmt: skip

#: Microseconds per duration unit, keyed lower-case (a unit is matched in any case:
#: ``1 Day``, ``3 HOURS``): the short units and the words the thesis writes, singular
#: and plural (``52 weeks``, Example 5). docs/cel.md 2.1 lists them.
_MICROS = {
    "us": 1,
    "ms": 1_000,
    "s": 1_000_000,
    "m": 60_000_000,
    "h": 3_600_000_000,
    "d": 86_400_000_000,
}
_SPELLINGS = {
    "us": ("microsecond", "microseconds"),
    "ms": ("millisecond", "milliseconds"),
    "s": ("sec", "secs", "second", "seconds"),
    "m": ("min", "mins", "minute", "minutes"),
    "h": ("hour", "hours"),
    "d": ("day", "days"),
}
UNITS: dict[str, int] = {
    **_MICROS,
    "week": 7 * _MICROS["d"],
    "weeks": 7 * _MICROS["d"],
    **{word: _MICROS[unit] for unit, words in _SPELLINGS.items() for word in words},
}

#: The units an unknown one's error lists (each also singular or plural, in any case).
UNIT_HINTS = ("us", "ms", "s", "sec", "m", "min", "h", "d", "seconds", "minutes", "hours",
              "days", "weeks")  # fmt: skip

TokenKind = Literal["number", "ident", "string", "decorator", "op", "end"]

_SPACE = re.compile(r"(?:\s+|--[^\n]*)+")
_TOKEN = re.compile(
    r"(?P<number>[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)"
    r"|(?P<ident>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<string>'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\")"
    r"|(?P<decorator>\$[12]?(?![0-9A-Za-z_]))"
    r"|(?P<op><=|>=|!=|<>|[≤≥≠=<>+\-*/(){},;.:])"
)
_STREAM = re.compile(r"[A-Za-z_](?:[A-Za-z0-9_.]|-(?!-))*")
#: Operators written another way (the thesis prints ≥; SQL writes <>).
OPERATOR_SPELLINGS = {"≤": "<=", "≥": ">=", "≠": "!=", "<>": "!="}


class Token(NamedTuple):
    """One token: its kind, its text as written, and where it starts and ends."""

    kind: TokenKind
    text: str
    start: int
    end: int

    @property
    def upper(self) -> str:
        """The text upper-cased (keywords are case-insensitive)."""
        return self.text.upper()


class Failure(Exception):
    """Internal to the CEL front end: a located problem (code, message, offset, what was
    expected) before it becomes an ``XsclError`` with line, column and query id."""

    def __init__(
        self, code: str, message: str, offset: int, expected: tuple[str, ...] = ()
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.offset = offset
        self.expected = expected


class Scanner:
    """Reads tokens of one source text at given offsets (results cached per offset)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._cache: dict[int, Token] = {}

    def skip_space(self, pos: int) -> int:
        """The offset of the next token at or after ``pos`` (past spaces and comments)."""
        m = _SPACE.match(self.text, pos)
        return m.end() if m else pos

    def token_at(self, pos: int) -> Token:
        """The token starting at ``pos`` (which must be a token start); raises ``Failure``."""
        token = self._cache.get(pos)
        if token is not None:
            return token
        text = self.text
        if pos >= len(text):
            token = Token("end", "", pos, pos)
        else:
            m = _TOKEN.match(text, pos)
            if m is None:
                ch = text[pos]
                if ch in "'\"":
                    raise Failure(
                        "CEL-P002", "unterminated string literal", pos, (f"closing {ch}",)
                    )
                if ch == "$":
                    raise Failure(
                        "CEL-P011",
                        "invalid decorator: only $1, $2 and $ (hierarchical decorators "
                        "such as $1.$1.x are not CEL; the renaming of section 4.2 names them)",
                        pos,
                        ("$1.attribute", "$2.attribute", "$.attribute"),
                    )
                raise Failure("CEL-P001", f"unexpected character {ch!r}", pos)
            kind = m.lastgroup
            assert kind is not None
            token = Token(kind, m.group(), pos, m.end())  # type: ignore[arg-type]
        self._cache[pos] = token
        return token

    def stream_name_at(self, pos: int) -> tuple[str, int] | None:
        """A stream name (``[A-Za-z_][A-Za-z0-9_.-]*``, no ``--``) at ``pos`` and its end."""
        m = _STREAM.match(self.text, pos)
        return (m.group(), m.end()) if m else None
