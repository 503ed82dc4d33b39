"""The literal factors an XPath regular expression requires (a presearch prefilter).

Like RE2's prefilter (Cox, "Regular Expression Matching in the Wild", 2010)
this computes, for an XPath 2.0 regex (F&O section 7.6.1), a set of strings
one of which occurs in every string the regex matches, or ``None`` when no
such set is known (the predicate is then always a candidate).  Each regex
node has an *exact* set (every string it can match, while small) and a
*need* (an OR-set of strings one of which its match contains):

* a character, an escaped character or a small enumerated class: exact;
* ``^``, ``$``, ``x?``, ``x*``, ``x{0,n}``: exact ``{''}`` or nothing known;
* a concatenation: runs of exact parts multiplied out while small, and the
  most selective of the runs' and other parts' needs (all are necessary:
  any one will do);
* an alternation: the union of the branches' sets (nothing known if one
  branch has nothing);
* ``x+``, ``x{n,m}`` with ``n >= 1``: what ``x`` needs (``x{n}`` exactly: the
  repeated exact strings, while small).

``.``, ``\\d``, ``\\p{..}``, negated or large classes, class subtraction and
back-references are "anything".  A part this module does not understand
makes the whole pattern "nothing known", never a wrong factor.  The pattern
is validated by elementpath first (``xscl.lang.function_checks``); flags are
handled by the caller (``i`` by the fold, ``x`` gives "nothing known").

>>> sorted(required_factors("breaking (news|story)"))
['breaking news', 'breaking story']
>>> sorted(required_factors("^[Rr]ust[0-9]+ weekly$"))
[' weekly']
>>> sorted(required_factors("colou?r|a.*bcd"))
['bcd', 'color', 'colour']
>>> required_factors("\\\\d+") is None
True
"""

from __future__ import annotations

from dataclasses import dataclass

#: Largest exact set kept (beyond it, a node is summarised by its need)
EXACT_LIMIT = 16
#: Largest class enumerated as an exact set of characters
CLASS_LIMIT = 8

_SINGLE_ESCAPES = {"n": "\n", "r": "\r", "t": "\t"}
_META = set("\\|.-^?*+{}()[]$")


class _Unknown(Exception):
    """A construct the factor analysis does not model: no factor for the pattern."""


@dataclass(frozen=True)
class _Info:
    #: every string the node can match (None: too many or unknown)
    exact: frozenset[str] | None
    #: one of these occurs in every match (None: nothing known)
    need: frozenset[str] | None

    def as_need(self) -> frozenset[str] | None:
        strings = self.exact if self.exact is not None else self.need
        if strings is None or "" in strings:
            return None
        return strings


_EMPTY = _Info(frozenset({""}), None)
_ANY = _Info(None, None)


def _score(need: frozenset[str] | None) -> int:
    """How selective a need is: its shortest string's length (0: nothing known)."""
    return 0 if not need else min(len(s) for s in need)


def better_need(
    first: frozenset[str] | None, second: frozenset[str] | None
) -> frozenset[str] | None:
    """Of two necessary OR-sets (both hold), the more selective one.

    >>> sorted(better_need(frozenset({"ab"}), frozenset({"xyz", "uvw"})))
    ['uvw', 'xyz']
    """
    return first if _score(first) >= _score(second) else second


def _need_of(strings: frozenset[str]) -> frozenset[str] | None:
    return None if "" in strings else strings


def _sequence(pieces: list[_Info]) -> _Info:
    """A concatenation: runs of exact pieces multiplied out, the best need kept."""
    run: frozenset[str] = frozenset({""})
    all_exact = True
    best: frozenset[str] | None = None
    for info in pieces:
        if info.exact is not None and len(run) * len(info.exact) <= EXACT_LIMIT:
            run = frozenset(a + b for a in run for b in info.exact)
            continue
        all_exact = False
        best = better_need(best, _need_of(run))
        if info.exact is not None:
            run = info.exact
        else:
            best = better_need(best, info.need)
            run = frozenset({""})
    if all_exact:
        return _Info(run, None)
    return _Info(None, better_need(best, _need_of(run)))


def _alternate(left: _Info, right: _Info) -> _Info:
    if left.exact is not None and right.exact is not None:
        union = left.exact | right.exact
        if len(union) <= EXACT_LIMIT:
            return _Info(union, None)
    a, b = left.as_need(), right.as_need()
    if a is None or b is None:
        return _ANY
    return _Info(None, a | b)


def _repeat(info: _Info, low: int, high: int | None) -> _Info:
    if low == 0:
        if high == 0:
            return _EMPTY
        if high == 1 and info.exact is not None and len(info.exact) < EXACT_LIMIT:
            return _Info(info.exact | {""}, None)
        return _ANY
    if high == low and info.exact is not None and len(info.exact) ** low <= EXACT_LIMIT:
        strings = frozenset({""})
        for _ in range(low):
            strings = frozenset(a + b for a in strings for b in info.exact)
        return _Info(strings, None)
    return _Info(None, info.as_need())


class _Parser:
    def __init__(self, pattern: str) -> None:
        self.text = pattern
        self.pos = 0

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def take(self) -> str:
        char = self.peek()
        if not char:
            raise _Unknown("unexpected end")
        self.pos += 1
        return char

    def regex(self) -> _Info:
        info = self.branch()
        while self.peek() == "|":
            self.pos += 1
            info = _alternate(info, self.branch())
        return info

    def branch(self) -> _Info:
        pieces: list[_Info] = []
        while self.peek() not in ("", "|", ")"):
            pieces.append(self.piece())
        return _sequence(pieces)

    def piece(self) -> _Info:
        info = self.atom()
        char = self.peek()
        if char in ("?", "*", "+"):
            self.pos += 1
            low, high = {"?": (0, 1), "*": (0, None), "+": (1, None)}[char]
        elif char == "{":
            low, high = self.braces()
        else:
            return info
        if self.peek() == "?":  # reluctant: the same strings
            self.pos += 1
        return _repeat(info, low, high)

    def braces(self) -> tuple[int, int | None]:
        end = self.text.find("}", self.pos)
        if end < 0:
            raise _Unknown("unterminated quantifier")
        body = self.text[self.pos + 1 : end]
        self.pos = end + 1
        low_text, comma, high_text = body.partition(",")
        if not low_text.isdigit() or (high_text and not high_text.isdigit()):
            raise _Unknown(f"quantifier {{{body}}}")
        low = int(low_text)
        if not comma:
            return low, low
        return low, int(high_text) if high_text else None

    def atom(self) -> _Info:
        char = self.take()
        if char == "(":
            if self.text.startswith("?:", self.pos):
                self.pos += 2
            info = self.regex()
            if self.take() != ")":
                raise _Unknown("unbalanced group")
            return info
        if char in ("^", "$"):
            return _EMPTY
        if char == ".":
            return _ANY
        if char == "[":
            return self.char_class()
        if char == "\\":
            return self.escape()
        if char in _META:
            raise _Unknown(f"unexpected {char!r}")
        return _Info(frozenset({char}), None)

    def escape(self) -> _Info:
        char = self.take()
        if char in _SINGLE_ESCAPES:
            return _Info(frozenset({_SINGLE_ESCAPES[char]}), None)
        if char in _META:
            return _Info(frozenset({char}), None)
        if char in ("p", "P"):
            end = self.text.find("}", self.pos)
            if end < 0:
                raise _Unknown("unterminated \\p")
            self.pos = end + 1
            return _ANY
        if char in "sSiIcCdDwW" or char.isdigit():  # classes and back-references
            while char.isdigit() and self.peek().isdigit():
                self.pos += 1
            return _ANY
        raise _Unknown(f"escape \\{char}")

    def char_class(self) -> _Info:
        """``[...]``: an exact set when it is a short positive list of characters."""
        chars: set[str] = set()
        simple = self.peek() != "^"
        if not simple:
            self.pos += 1
        first = True
        while True:
            char = self.take()
            if char == "]" and not first:
                break
            first = False
            if char == "[":  # subtraction: skip the nested class
                simple = False
                depth = 1
                while depth:
                    inner = self.take()
                    if inner == "\\":
                        self.take()
                    elif inner == "[":
                        depth += 1
                    elif inner == "]":
                        depth -= 1
                continue
            if char == "\\":
                escaped = self.take()
                if escaped in _SINGLE_ESCAPES:
                    char = _SINGLE_ESCAPES[escaped]
                elif escaped in _META:
                    char = escaped
                else:
                    simple = False
                    if escaped in ("p", "P"):
                        end = self.text.find("}", self.pos)
                        self.pos = end + 1 if end >= 0 else len(self.text)
                    continue
            if self.peek() == "-" and self.text[self.pos + 1 : self.pos + 2] not in ("]", "["):
                self.pos += 1
                high = self.take()
                if high == "\\":
                    high = self.take()
                    high = _SINGLE_ESCAPES.get(high, high)
                if ord(high) - ord(char) >= CLASS_LIMIT:
                    simple = False
                    continue
                chars.update(chr(c) for c in range(ord(char), ord(high) + 1))
                continue
            chars.add(char)
        if not simple or not chars or len(chars) > CLASS_LIMIT:
            return _ANY
        return _Info(frozenset(chars), None)


def required_factors(pattern: str) -> frozenset[str] | None:
    """Strings one of which occurs in every match of ``pattern``; None: nothing known."""
    parser = _Parser(pattern)
    try:
        info = parser.regex()
        if parser.pos != len(pattern):
            raise _Unknown("unparsed rest")
    except (_Unknown, IndexError, ValueError):
        return None
    return info.as_need()
