"""Static checks of a function predicate: it compiles, and its regexes are accepted.

Run by the query validation (``xscl check``, ``subscribe``, ``serve``), so a
predicate is never silently false on every document because of how it is
written (spec section 3.1):

* ``XSCL-V009``: elementpath's XPath 2.0 parser rejects the expression;
* ``XSCL-V010``: a regex function's pattern or flags are refused
  (:func:`xscl.lang.regex_rules.regex_problem`: not XPath regex syntax, an
  invalid flag, exponential backtracking) or the pattern is not a string
  literal.

Each problem carries the offset in the expression where it is, so the error
points at the pattern's offending character.

>>> code, message, offset = function_problem("matches(title, 'rust(?i)')")
>>> code, offset, message.endswith("invalid '(?...)' extension notation at position 4")
('XSCL-V010', 20, True)
>>> function_problem("contains(title,")[0]
'XSCL-V009'
>>> function_problem("matches(title, '^rust$', 'i')") is None
True
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import elementpath

from xscl.lang.regex_rules import REGEX_FUNCTIONS, regex_problem

#: (code, message, offset in the expression)
Problem = tuple[str, str, int]


@lru_cache(maxsize=64)
def _xpath2_parser(namespaces: tuple[tuple[str, str], ...]) -> Any:
    return elementpath.XPath2Parser(namespaces=dict(namespaces))


def _literal_offset(expression: str, token: Any) -> int:
    """Where the string literal ``token`` starts in ``expression`` (its opening quote)."""
    start = int(token.span[0])
    for offset in (start, start - 1):
        if 0 <= offset < len(expression) and expression[offset] in "'\"":
            return offset
    return max(0, start)


def _pattern_offset(expression: str, literal_start: int, position: int) -> int:
    """The offset in ``expression`` of character ``position`` of the literal's value
    (a doubled quote is one character of the value)."""
    quote = expression[literal_start] if literal_start < len(expression) else "'"
    offset = literal_start + 1
    for _ in range(position):
        if expression.startswith(quote + quote, offset):
            offset += 1
        offset += 1
    return min(offset, len(expression))


def _regex_problem(expression: str, token: Any) -> Problem | None:
    name = token.symbol
    pattern = token[1]
    flag_index = 3 if name == "replace" else 2
    flags = token[flag_index] if len(token) > flag_index else None
    if pattern.symbol != "(string)":
        offset = int(pattern.span[0])
        return "XSCL-V010", f"the pattern of {name}() must be a string literal", offset
    if flags is not None and flags.symbol != "(string)":
        return None  # flags computed from the document: checked when evaluated
    flag_text = str(flags.value) if flags is not None else ""
    found = regex_problem(str(pattern.value), flag_text)
    if found is None:
        return None
    message, position = found
    if position is None and flags is not None:
        offset = _literal_offset(expression, flags)
    else:
        start = _literal_offset(expression, pattern)
        offset = _pattern_offset(expression, start, position or 0)
    written = "'" + str(pattern.value).replace("'", "''") + "'"  # as XPath writes it
    return "XSCL-V010", f"the pattern {written} of {name}(): {message}", offset


def _walk(expression: str, token: Any) -> Problem | None:
    if token.symbol in REGEX_FUNCTIONS and len(token) >= 2:
        found = _regex_problem(expression, token)
        if found is not None:
            return found
    for child in token:
        found = _walk(expression, child)
        if found is not None:
            return found
    return None


def function_problem(
    expression: str, namespaces: tuple[tuple[str, str], ...] = ()
) -> Problem | None:
    """The first problem of a function predicate, or None when it is accepted."""
    try:
        token = _xpath2_parser(namespaces).parse(expression)
    except (elementpath.ElementPathError, SyntaxError, ValueError, TypeError) as exc:
        return "XSCL-V009", str(exc), 0
    except Exception as exc:  # the library failed on it (e.g. a RecursionError on
        # ``count(empty-sequence())``): refuse this expression, never the run or the others
        return "XSCL-V009", f"the XPath library failed on it ({type(exc).__name__}: {exc})", 0
    return _walk(expression, token)
