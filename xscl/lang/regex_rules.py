"""Which regular expressions a function predicate may use (spec section 3.1, F&O 7.6).

``matches``, ``replace``, ``tokenize`` and ``analyze-string`` take an XPath
regular expression (F&O section 7.6.1: XML Schema regexes plus ``^``/``$``,
reluctant quantifiers and back-references) and flags (section 7.6.1.1:
``s``, ``m``, ``i``, ``x``).  A pattern that is not XPath syntax (``\\b``,
``(?i)``, look-around, ``\\Z``...) makes every evaluation fail, so the
predicate would be false on every document: it is refused when the query
is registered, as are invalid flags, a pattern that is not a string literal
(a document could then supply it) and a pattern that repeats a group
holding an unbounded quantifier (``(a+)+``: Python's ``re``, which cannot be
interrupted, would backtrack exponentially).  The syntax check is
elementpath's own translation (``translate_pattern``), the code that runs
the pattern when the predicate is evaluated.

>>> message, position = regex_problem("x\\\\bword", "")
>>> message.startswith("not allowed escape sequence"), position
(True, 1)
>>> regex_problem("^(a+)+$", "")
('nests quantifiers (exponential backtracking)', 0)
>>> regex_problem("rust|go", "iq")
("invalid flag 'q' (allowed: s, m, i, x)", None)
>>> regex_problem("rust|go", "i") is None
True
"""

from __future__ import annotations

import re

from elementpath.regex import RegexError, translate_pattern

#: functions whose second argument is a regular expression
REGEX_FUNCTIONS = frozenset({"matches", "replace", "tokenize", "analyze-string"})
#: the flags of XPath 2.0 regular expressions (F&O 7.6.1.1)
REGEX_FLAGS = frozenset("smix")

_BRACE = re.compile(r"\{(\d*)(,?)(\d*)\}")
_POSITION = re.compile(r" at position (\d+)")


def _quantifier_at(pattern: str, i: int) -> tuple[int, bool, bool]:
    """(length, repeats, unbounded) of a quantifier starting at ``pattern[i]`` (0: none)."""
    char = pattern[i]
    if char in "*+":
        return 1, True, True
    if char == "?":
        return 1, False, False
    if char == "{":
        brace = _BRACE.match(pattern, i)
        if brace is not None:
            low, comma, high = brace.groups()
            unbounded = bool(comma) and not high
            repeats = unbounded or int(high or low or "0") > 1
            return brace.end() - i, repeats, unbounded
    return 0, False, False


def nested_quantifier(pattern: str) -> bool:
    """Whether a regex repeats a group that itself contains an unbounded quantifier.

    >>> nested_quantifier("^(a+)+$"), nested_quantifier("(ab)+")
    (True, False)
    """
    stack: list[bool] = []  # per open group: does it contain an unbounded quantifier?
    closed_inner = False  # the group just closed contained one
    i = 0
    while i < len(pattern):
        char = pattern[i]
        after_group, closed_inner = closed_inner, False
        if char == "\\":
            i += 2
            continue
        if char == "[":  # character class: skip to its end (escapes, nested classes)
            depth = 0
            while i < len(pattern):
                if pattern[i] == "\\":
                    i += 1
                elif pattern[i] == "[":
                    depth += 1
                elif pattern[i] == "]":
                    depth -= 1
                    if depth == 0:
                        break
                i += 1
            i += 1
            continue
        if char == "(":
            stack.append(False)
        elif char == ")":
            if stack:
                closed_inner = stack.pop()
                if closed_inner and stack:
                    stack[-1] = True
        else:
            length, repeats, unbounded = _quantifier_at(pattern, i)
            if length:
                if after_group and repeats:
                    return True
                if unbounded and stack:
                    stack[-1] = True
                i += length
                continue
        i += 1
    return False


def regex_problem(pattern: str, flags: str) -> tuple[str, int | None] | None:
    """Why ``pattern`` with ``flags`` is refused, and where in the pattern; None if accepted."""
    for flag in flags:
        if flag not in REGEX_FLAGS:
            return f"invalid flag {flag!r} (allowed: s, m, i, x)", None
    re_flags = 0
    for flag in flags:
        re_flags |= getattr(re, flag.upper())
    try:
        re.compile(translate_pattern(pattern, re_flags, "1.0"), re_flags)
    except RegexError as exc:
        message = str(exc)
        found = _POSITION.search(message)
        if found is None:
            return message, 0
        return message[: found.end()], int(found.group(1))
    except (re.error, OverflowError) as exc:
        return str(exc), 0
    if nested_quantifier(pattern):
        return "nests quantifiers (exponential backtracking)", 0
    return None
