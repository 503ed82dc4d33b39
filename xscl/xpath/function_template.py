"""A function predicate split into a template and its string literals.

Thousands of subscriptions write the same predicate with another word:
``contains(title, 'rust')``, ``contains(title, 'kotlin')``...  Each string
literal is replaced by an external variable, ``$xscl_literal_0``,
``$xscl_literal_1``..., so the template ``contains(title, $xscl_literal_0)``
is compiled by elementpath once and every definition holds only its tuple
of literal values (a few dozen bytes instead of ~2 KB of token tree; see
docs/architecture.md, Stage 1).  In XPath 2.0 a variable reference may stand
wherever a string literal is a primary expression, and elementpath gives an
external ``str`` variable the type ``xs:string``, exactly like the literal;
the one other place a string literal may appear, the name of
``processing-instruction('...')``, does not parse as a template, and the
caller then compiles the expression as written.

The scan knows the two lexical forms that can hold a quote: string literals
(``'it''s'``, the quote doubled inside, or in double quotes) and comments
``(: ... :)``, which nest and are kept in the template as written (the
normal form's ``(:xmlns n0="uri":)`` namespace comments among them).

>>> split_literals("contains(title, 'it''s') (:xmlns n0=\\"urn:x\\":)")
('contains(title, $xscl_literal_0) (:xmlns n0="urn:x":)', ("it's",))
>>> split_literals('matches(., "a|b", "i")')
('matches(., $xscl_literal_0, $xscl_literal_1)', ('a|b', 'i'))
"""

from __future__ import annotations

import re

#: where a comment or a string literal may start
_SPECIAL = re.compile(r"\(:|['\"]")

#: the prefix of the template variables; an expression that already holds it is not split
PLACEHOLDER = "xscl_literal_"


def placeholder_index(name: str) -> int | None:
    """The literal index of a template variable name, or None for any other name.

    >>> placeholder_index("xscl_literal_3"), placeholder_index("x")
    (3, None)
    """
    if name.startswith(PLACEHOLDER) and name[len(PLACEHOLDER) :].isdigit():
        return int(name[len(PLACEHOLDER) :])
    return None


def _comment_end(text: str, start: int) -> int:
    """The index after the comment opened at ``start`` (comments nest); -1 if unclosed."""
    depth = 0
    pos = start
    while pos < len(text):
        if text.startswith("(:", pos):
            depth += 1
            pos += 2
        elif text.startswith(":)", pos):
            depth -= 1
            pos += 2
            if depth == 0:
                return pos
        else:
            pos += 1
    return -1


def _literal_end(text: str, start: int) -> int:
    """The index after the string literal opened at ``start``; -1 if unterminated."""
    quote = text[start]
    pos = start + 1
    while True:
        found = text.find(quote, pos)
        if found < 0:
            return -1
        if text.startswith(quote, found + 1):  # a doubled quote: one quote character
            pos = found + 2
            continue
        return found + 1


def split_literals(expression: str) -> tuple[str, tuple[str, ...]]:
    """``(template, literals)``; ``(expression, ())`` when there is nothing to split."""
    if PLACEHOLDER in expression:
        return expression, ()
    parts: list[str] = []
    literals: list[str] = []
    piece_start = pos = 0
    while True:
        found = _SPECIAL.search(expression, pos)
        if found is None:
            break
        pos = found.start()
        if found.group() == "(:":
            end = _comment_end(expression, pos)
            if end < 0:
                return expression, ()
            pos = end
            continue
        end = _literal_end(expression, pos)
        if end < 0:
            return expression, ()
        quote = expression[pos]
        parts.append(expression[piece_start:pos])
        parts.append(f"${PLACEHOLDER}{len(literals)}")
        literals.append(expression[pos + 1 : end - 1].replace(quote + quote, quote))
        pos = piece_start = end
    parts.append(expression[piece_start:])
    return "".join(parts), tuple(literals)
