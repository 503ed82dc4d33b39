"""Parser of XSCL query files (spec/XSCL.md section 2) into the AST of ``xscl.lang.ast``.

The language is thesis 6.2 (the JOIN / FOLLOWED BY operators and the query
blocks of Table 6.2) made precise by the spec: ids, windows with units,
comparisons, function predicates, SELECT/PUBLISH and namespace declarations.

Why hand-written and not lark: XSCL's lexical rules depend on where the
parser is. ``'`` continues a variable name (``x5'``) but opens a literal after
``=``; keywords are reserved as stream and variable names but are ordinary
element names after ``/`` (``S//from``); ``-`` belongs to names except in
``->`` and ``--``; a function predicate is raw XPath kept as text up to its
matching ``]``. A recursive-descent parser over an on-demand scanner reads
each token in the context that expects it, keeps those rules local, and lets
every error list exactly what was expected at its position (gathered by a
diagnostic re-parse of the failed query only, so the happy path stays fast).

Error recovery (``parse_file``): a bad query yields one error and parsing
resumes after the next ``;`` outside string literals and comments (``;`` can
appear nowhere else in valid XSCL), so one bad query never hides the others.
Unlabeled queries are numbered ``q1, q2, ...`` by position among all queries,
bad ones included.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import NoReturn

from xscl.errors import XsclError, excerpt_at
from xscl.lang.ast import (
    Axis,
    Block,
    CompareOp,
    ComparisonPredicate,
    Equality,
    FunctionPredicate,
    JoinKind,
    JoinOp,
    LiteralValue,
    NodeTest,
    NumberLiteral,
    PathPredicate,
    Predicate,
    Query,
    QueryFile,
    RelPath,
    Span,
    Step,
    StringLiteral,
    TimeUnit,
    Window,
)
from xscl.lang.gc_pause import GC_PAUSE_CHARS, gc_paused

__all__ = [
    "KEYWORDS",
    "XML_NAMESPACE",
    "ParseResult",
    "parse_file",
    "parse_queries",
    "parse_query",
]

#: The URI the ``xml`` prefix is always bound to (it may be re-declared only to this).
XML_NAMESPACE = "http://www.w3.org/XML/1998/namespace"

#: Reserved words: case-insensitive, never stream or variable names (element names are fine).
KEYWORDS = frozenset(
    {
        "SELECT", "FROM", "PUBLISH", "JOIN", "FOLLOWED", "BY", "AND",
        "TRUE", "INF", "AS", "DECLARE", "NAMESPACE",
    }
)  # fmt: skip

_UNITS: tuple[TimeUnit, ...] = ("ms", "s", "m", "h", "d")

# '-' is part of a name unless it starts '->' or '--' (spec: whitespace is free, '--' is a comment).
_NAME_TAIL = r"(?:[\w.]|-(?![->]))*"
_SKIP = re.compile(r"(?:\s+|--[^\n]*)+")
_NCNAME = re.compile(r"[^\W\d]" + _NAME_TAIL)
_IDENT = re.compile(r"[A-Za-z_](?:[A-Za-z0-9_.]|-(?![->]))*")
_VAR = re.compile(r"[A-Za-z_][A-Za-z0-9_']*")
_UNIT_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# numbers are ASCII digits (\d would take the digits of any script)
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")
_SIGNED_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")
_SQ_STRING = re.compile(r"'(?:[^']|'')*'")
_DQ_STRING = re.compile(r'"(?:[^"]|"")*"')
_TEXT_TEST = re.compile(r"text\s*\(\s*\)")
_FN_START = re.compile(r"[^\W\d][\w.-]*(?::[^\W\d][\w.-]*)?\s*\(")
_LABEL = re.compile(r"([A-Za-z_](?:[A-Za-z0-9_.]|-(?![->]))*)[ \t]*:")
_BAD_LABEL = re.compile(r"[^\s:;/\[\](){}'\",*@]+[ \t]*:")
_TOKEN = re.compile(r"->|//|!=|<=|>=|" + r"[^\W\d]" + _NAME_TAIL + r"|\d+(?:\.\d+)?")
_VAR_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_'")
_SPACE = frozenset(" \t\r\n\f\v")
_QUOTED = {t: f"'{t}'" for t in ("/", "//", "->", "[", "]", "{", "}", ",", "=", ";", "*")}
_COMPARE_OPS: tuple[CompareOp, ...] = ("!=", "<=", ">=", "=", "<", ">")


def xpath_comment_end(text: str, start: int) -> int | None:
    """The offset just after the XPath comment opened at ``text[start:start + 2] == "(:"``.

    XPath 2.0 comments nest (``(: a (: b :) c :)``) and hold anything else, quotes and
    brackets included. ``None`` when the comment is not closed.

    >>> text = "true() (: it's (: ] :) :) and x"
    >>> text[xpath_comment_end(text, 7):]
    ' and x'
    """
    depth, i, n = 0, start, len(text)
    while i < n - 1:
        pair = text[i : i + 2]
        if pair == "(:":
            depth += 1
            i += 2
        elif pair == ":)":
            depth -= 1
            i += 2
            if depth == 0:
                return i
        else:
            i += 1
    return None

# Human names of expected tokens (shown in error messages).
_E_STREAM = "a stream name"
_E_VAR = "a variable"
_E_NODETEST = "a name test (name, p:name, *, @name or text())"
_E_LITERAL = "a literal ('text', \"text\" or a number)"
_E_WINDOW = "a window such as 1h or INF"
_E_UNIT = "a unit (ms, s, m, h or d)"
_E_END = "end of input"


@dataclass(frozen=True)
class ParseResult:
    """What ``parse_file`` found: the good queries, the declarations, one error per bad query."""

    queries: tuple[Query, ...]
    namespaces: tuple[tuple[str, str], ...]
    errors: tuple[XsclError, ...]

    @property
    def ok(self) -> bool:
        """True when the whole file parsed without error."""
        return not self.errors

    def to_query_file(self) -> QueryFile:
        """The good queries as a ``QueryFile``."""
        return QueryFile(self.namespaces, self.queries)


class _Failure(Exception):
    """Internal: a located error before the query id is attached."""

    def __init__(
        self, code: str, message: str, offset: int, expected: tuple[str, ...] = ()
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.offset = offset
        self.expected = expected


def _quote_token(token: str) -> str:
    return f'"{token}"' if "'" in token else f"'{token}'"


def _unquote(literal: str) -> str:
    quote = literal[0]
    return literal[1:-1].replace(quote + quote, quote)


class _Parser:
    """Scanner + recursive-descent parser over one source text."""

    def __init__(self, text: str, source: str | None, namespaces: dict[str, str]) -> None:
        self.text = text
        self.n = len(text)
        self.pos = 0
        self.source = source
        self.namespaces = namespaces
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self._exp_pos = -1
        self._exp: list[str] = []
        self.collect = False  # gather expected-token names (diagnostic re-parse)
        self.qid: str | None = None  # id of the query being parsed, for its errors
        self._word_pos = -1  # cache of the identifier at _word_pos, upper-cased
        self._word = ""

    # ------------------------------------------------------------------ positions/errors

    def span(self, offset: int) -> Span:
        line = bisect_right(self._line_starts, offset)
        return Span(line, offset - self._line_starts[line - 1] + 1, offset)

    def to_error(self, failure: _Failure, qid: str | None) -> XsclError:
        span = self.span(failure.offset)
        return XsclError.from_code(
            failure.code,
            failure.message,
            qid=qid,
            line=span.line,
            column=span.column,
            excerpt=excerpt_at(self.text, failure.offset),
            expected=failure.expected,
            source=self.source,
        )

    def _note(self, name: str) -> None:
        """Record that ``name`` would have been accepted at the current position.

        Only in the diagnostic re-parse after a failure (``collect``): the happy
        path never pays for building expected-token lists.
        """
        if not self.collect:
            return
        if self._exp_pos != self.pos:
            self._exp_pos = self.pos
            self._exp = [name]
        else:
            self._exp.append(name)

    def _expected_here(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self._exp)) if self._exp_pos == self.pos else ()

    def _describe(self, offset: int) -> str:
        if offset >= self.n:
            return _E_END
        m = _TOKEN.match(self.text, offset)
        return _quote_token(m.group() if m else self.text[offset])

    def fail(self, code: str | None = None, message: str | None = None) -> NoReturn:
        """Raise at the current position with the expected tokens noted there."""
        at_end = self.pos >= self.n or self.text[self.pos] == ";"
        if code is None:
            code = "XSCL-P004" if at_end else "XSCL-P003"
        if message is None:
            message = f"unexpected {self._describe(self.pos)}"
        raise _Failure(code, message, self.pos, self._expected_here())

    # ------------------------------------------------------------------ scanning

    def advance(self, end: int) -> None:
        """Move to ``end``, then past whitespace and comments (the next token's start).

        Invariant: between tokens ``pos`` always sits on the next token, so
        lookahead never re-skips and errors point at the token itself.
        """
        text = self.text
        if end < self.n and (text[end] in _SPACE or text.startswith("--", end)):
            m = _SKIP.match(text, end)
            if m:
                end = m.end()
        self.pos = end

    def skip(self) -> None:
        self.advance(self.pos)

    def accept(self, token: str, name: str | None = None) -> bool:
        if self.text.startswith(token, self.pos):
            self.advance(self.pos + len(token))
            return True
        if self.collect:
            self._note(name or _QUOTED.get(token) or _quote_token(token))
        return False

    def expect(self, token: str, name: str | None = None) -> None:
        if not self.accept(token, name):
            self.fail()

    def peek_keyword(self, keyword: str) -> bool:
        pos = self.pos
        if self._word_pos != pos:
            m = _IDENT.match(self.text, pos)
            self._word = m.group().upper() if m else ""
            self._word_pos = pos
        return self._word == keyword

    def accept_keyword(self, keyword: str, name: str | None = None) -> bool:
        if self.peek_keyword(keyword):
            self.advance(self.pos + len(keyword))
            return True
        if self.collect:
            self._note(name or keyword)
        return False

    def expect_keyword(self, keyword: str) -> None:
        if not self.accept_keyword(keyword):
            self.fail()

    def at_end(self) -> bool:
        return self.pos >= self.n

    def string(self) -> str:
        """A quoted literal at the current position (already skipped to)."""
        quote = self.text[self.pos]
        m = (_SQ_STRING if quote == "'" else _DQ_STRING).match(self.text, self.pos)
        if m is None:
            raise _Failure(
                "XSCL-P002", "unterminated string literal", self.pos, (f"closing {quote}",)
            )
        self.advance(m.end())
        return _unquote(m.group())

    def identifier(self, what: str) -> str:
        """A stream name (``[A-Za-z_][A-Za-z0-9_.-]*``, not a keyword)."""
        m = _IDENT.match(self.text, self.pos)
        if m is None:
            self._note(what)
            self.fail()
        name = m.group()
        if name.upper() in KEYWORDS:
            raise _Failure("XSCL-P010", f"reserved keyword {name!r} cannot be {what}", self.pos)
        self.advance(m.end())
        return name

    def variable(self) -> str:
        m = _VAR.match(self.text, self.pos)
        if m is None:
            self._note(_E_VAR)
            self.fail()
        name = m.group()
        if name.upper() in KEYWORDS:
            raise _Failure("XSCL-P010", f"reserved keyword {name!r} cannot be a variable", self.pos)
        self.advance(m.end())
        return name

    # ------------------------------------------------------------------ declarations and ids

    def declaration(self) -> None:
        """``DECLARE NAMESPACE prefix = "uri" ;``, added to ``namespaces``.

        ``xml`` may only be declared to its fixed URI, ``xmlns`` never; a prefix
        may be declared again only to the same URI.
        """
        self.expect_keyword("DECLARE")
        self.expect_keyword("NAMESPACE")
        start = self.pos
        m = _NCNAME.match(self.text, self.pos)
        if m is None:
            self._note("a namespace prefix")
            self.fail()
        prefix = m.group()
        self.advance(m.end())
        self.expect("=")
        if self.pos >= self.n or self.text[self.pos] not in "'\"":
            self._note("a quoted namespace URI")
            self.fail()
        uri_at = self.pos
        uri = self.string()
        if not uri:
            raise _Failure("XSCL-P012", "a namespace URI must not be empty", uri_at)
        if prefix == "xmlns" or (prefix == "xml" and uri != XML_NAMESPACE):
            raise _Failure("XSCL-P012", f"the prefix {prefix!r} cannot be re-bound", start)
        if self.namespaces.get(prefix, uri) != uri:
            raise _Failure("XSCL-P012", f"prefix {prefix!r} is already bound", start)
        if not self.accept(";"):
            self.fail()
        self.namespaces[prefix] = uri

    def label(self) -> str | None:
        """An optional ``ID:`` label at the current position."""
        m = _LABEL.match(self.text, self.pos)
        if m is not None:
            self.advance(m.end())
            return m.group(1)
        if _BAD_LABEL.match(self.text, self.pos):
            raise _Failure(
                "XSCL-P006",
                "invalid query id",
                self.pos,
                ("a query id matching [A-Za-z_][A-Za-z0-9_.-]*",),
            )
        return None

    # ------------------------------------------------------------------ queries

    def query_def(
        self, start: int, qid: str, namespaces: tuple[tuple[str, str], ...], *, alone: bool
    ) -> Query:
        """``[ID:] query`` then ``;`` or the end (``alone``: nothing may follow).

        On failure the query is parsed again from ``start`` with ``collect`` on,
        so that the error lists every token that was expected at its position.
        """
        try:
            return self._query_def(start, qid, namespaces, alone)
        except _Failure as fast:
            self.collect = True
            try:
                self._query_def(start, qid, namespaces, alone)
            except _Failure as diagnosed:
                if (diagnosed.code, diagnosed.offset) == (fast.code, fast.offset):
                    raise diagnosed from None
            finally:
                self.collect = False
            raise

    def _query_def(
        self, start: int, qid: str, namespaces: tuple[tuple[str, str], ...], alone: bool
    ) -> Query:
        self.pos = start
        self.qid = qid
        label = self.label()
        if label is not None:
            self.qid = label
        query = self.query(self.qid, label is not None, start, namespaces)
        if self.accept(";"):
            if not alone or self.pos >= self.n:
                return query
        elif self.pos >= self.n:
            return query
        self._note(_E_END)
        self.fail()

    def query(self, qid: str, explicit: bool, start: int, namespaces: tuple[tuple[str, str], ...]
              ) -> Query:  # fmt: skip
        """The query after its label, up to (not including) ``;`` / end of input."""
        select: tuple[str, ...] | None = None
        if self.accept_keyword("SELECT"):
            if not self.accept("*"):
                names = [self.variable()]
                while self.accept(","):
                    names.append(self.variable())
                select = tuple(names)
            self.expect_keyword("FROM")
        else:
            self.accept_keyword("FROM")
        blocks = [self.block()]
        ops: list[JoinOp] = []
        while True:
            op = self.join_op()
            if op is None:
                break
            ops.append(op)
            blocks.append(self.block())
        publish = self.identifier("a stream name") if self.accept_keyword("PUBLISH") else None
        return Query(
            qid=qid,
            blocks=tuple(blocks),
            ops=tuple(ops),
            select=select,
            publish=publish,
            namespaces=namespaces,
            explicit_id=explicit,
            span=self.span(start),
        )

    def block(self) -> Block:
        start = self.pos
        stream = self.identifier(_E_STREAM)
        return Block(stream, tuple(self.steps()), span=self.span(start))

    def join_op(self) -> JoinOp | None:
        start = self.pos
        kind: JoinKind
        if self.accept_keyword("JOIN"):
            kind = "JOIN"
        elif self.accept_keyword("FOLLOWED", "FOLLOWED BY"):
            self.expect_keyword("BY")
            kind = "FOLLOWED BY"
        else:
            return None
        self.expect("{")
        equalities: list[Equality] = []
        if not self.accept_keyword("TRUE"):
            while True:
                left_span = self.span(self.pos)
                left = self.variable()
                self.expect("=")
                right_span = self.span(self.pos)
                right = self.variable()
                equalities.append(Equality(left, right, left_span, right_span))
                if not self.accept_keyword("AND"):
                    break
        self.expect(",")
        window = self.window()
        self.expect("}")
        return JoinOp(kind, tuple(equalities), window, span=self.span(start))

    def window(self) -> Window:
        if self.accept_keyword("INF", _E_WINDOW):
            return Window(None)
        m = _NUMBER.match(self.text, self.pos)
        if m is None:
            self.fail("XSCL-P005", f"unexpected {self._describe(self.pos)}: invalid window")
        amount = Decimal(m.group())
        self.advance(m.end())
        w = _UNIT_WORD.match(self.text, self.pos)
        if w is None:
            return Window(amount, "s")
        for unit in _UNITS:
            if w.group() == unit:
                self.advance(w.end())
                return Window(amount, unit)
        raise _Failure(
            "XSCL-P005", f"invalid window unit {w.group()!r}", self.pos, (_E_UNIT, "'}'")
        )

    # ------------------------------------------------------------------ paths

    def steps(self) -> list[Step]:
        """Zero or more ``axis nodetest [bind] {predicate}`` steps."""
        steps: list[Step] = []
        text = self.text
        while True:
            start = self.pos
            axis: Axis
            if start < self.n and text[start] == "/":
                axis = "//" if text.startswith("//", start) else "/"
                self.advance(start + len(axis))
            else:
                if self.collect:
                    self._note("'//'")
                    self._note("'/'")
                return steps
            steps.append(self.step(axis, start))

    def step(self, axis: Axis, start: int) -> Step:
        test = self.node_test()
        var: str | None = None
        # ``AS`` is looked up only where it can start (the keyword lookup costs a regex).
        could_be_as = self.collect or self.text.startswith(("A", "a"), self.pos)
        if self.accept("->") or (could_be_as and self.accept_keyword("AS")):
            var = self.variable()
        predicates: list[Predicate] = []
        while self.accept("[", "'['"):
            predicates.append(self.predicate())
        return Step(axis, test, var, tuple(predicates), span=self.span(start))

    def node_test(self) -> NodeTest:
        text, pos = self.text, self.pos
        if pos < self.n:
            ch = text[pos]
            if ch == "*":
                self.advance(self.pos + 1)
                return NodeTest("wildcard")
            if ch == "@":
                self.advance(self.pos + 1)
                prefix, local = self.qname()
                return NodeTest("attribute", local, prefix)
            m = _TEXT_TEST.match(text, pos)
            if m is not None:
                self.advance(m.end())
                return NodeTest("text")
            if _NCNAME.match(text, pos):
                prefix, local = self.qname()
                return NodeTest("element", local, prefix)
        self._note(_E_NODETEST)
        self.fail()

    def qname(self) -> tuple[str | None, str]:
        start = self.pos
        m = _NCNAME.match(self.text, self.pos)
        if m is None:
            self._note("a name")
            self.fail()
        if not self.text.startswith(":", m.end()):
            self.advance(m.end())
            return None, m.group()
        prefix = m.group()
        self.pos = m.end() + 1
        local = _NCNAME.match(self.text, self.pos)
        if local is None:
            self._note(f"a local name after '{prefix}:'")
            self.fail()
        self.advance(local.end())
        if prefix != "xml" and prefix not in self.namespaces:
            raise _Failure(
                "XSCL-V008",
                f"unknown namespace prefix {prefix!r}",
                start,
                ("a prefix bound by DECLARE NAMESPACE",),
            )
        return prefix, local.group()

    def predicate(self) -> Predicate:
        """The inside of ``[...]`` and its closing bracket (``[`` already consumed)."""
        open_at = self.pos - 1
        text, pos = self.text, self.pos
        if (
            pos < self.n
            and text[pos] not in "./@*"
            and _FN_START.match(text, pos)
            and not _TEXT_TEST.match(text, pos)
        ):
            return FunctionPredicate(self.raw_expression(open_at), self.span(pos))
        path = self.rel_path()
        op = self.compare_op()
        predicate: Predicate
        if op is None:
            predicate = PathPredicate(path)
        else:
            predicate = ComparisonPredicate(path, op, self.literal())
        self.expect("]")
        return predicate

    def rel_path(self) -> RelPath:
        text, pos = self.text, self.pos
        if text.startswith(".", pos) and not text.startswith("..", pos):
            self.advance(pos + 1)
            return RelPath(tuple(self.steps()))
        self._note("'.'")
        first = self.step("/", pos)
        return RelPath((first, *self.steps()))

    def compare_op(self) -> CompareOp | None:
        pos = self.pos
        if pos < self.n and self.text[pos] in "=!<>":
            for op in _COMPARE_OPS:
                if self.text.startswith(op, pos):
                    self.advance(pos + len(op))
                    return op
        self._note("a comparison (= != < <= > >=)")
        return None

    def literal(self) -> LiteralValue:
        if self.pos < self.n and self.text[self.pos] in "'\"":
            return StringLiteral(self.string())
        m = _SIGNED_NUMBER.match(self.text, self.pos)
        if m is None:
            self._note(_E_LITERAL)
            self.fail()
        self.advance(m.end())
        return NumberLiteral(Decimal(m.group()))

    def raw_expression(self, open_at: int) -> str:
        """An XPath function predicate up to its matching ``]``, trimmed.

        ``--`` comments are removed; XPath comments ``(: ... :)`` are kept as written,
        and what they hold (quotes, brackets, ``--``, ``;``) is not scanned.
        """
        text, n = self.text, self.n
        pos = self.pos
        parts: list[str] = []
        piece_start = pos
        closers: list[str] = []
        pairs = {"(": ")", "[": "]"}
        while pos < n:
            ch = text[pos]
            if ch in "'\"":
                m = (_SQ_STRING if ch == "'" else _DQ_STRING).match(text, pos)
                if m is None:
                    raise _Failure(
                        "XSCL-P002", "unterminated string literal", pos, (f"closing {ch}",)
                    )
                pos = m.end()
            elif ch == "(" and text.startswith("(:", pos):
                end = xpath_comment_end(text, pos)
                if end is None:
                    raise _Failure(
                        "XSCL-P011", "unterminated XPath comment in function predicate",
                        pos, ("':)'",),
                    )  # fmt: skip
                pos = end  # kept: elementpath reads it as whitespace
            elif ch == "-" and text.startswith("--", pos):
                parts.append(text[piece_start:pos])
                end = text.find("\n", pos)
                pos = piece_start = n if end < 0 else end
            elif ch in pairs:
                closers.append(pairs[ch])
                pos += 1
            elif ch in ")]":
                if not closers and ch == "]":
                    parts.append(text[piece_start:pos])
                    self.advance(pos + 1)
                    return "".join(parts).strip()
                if not closers or closers[-1] != ch:
                    raise _Failure(
                        "XSCL-P011",
                        f"unbalanced {ch!r} in function predicate",
                        pos,
                        (_quote_token(closers[-1]) if closers else "']'",),
                    )
                closers.pop()
                pos += 1
            elif ch == ";":
                break
            else:
                pos += 1
        expected = _quote_token(closers[-1]) if closers else "']'"
        raise _Failure(
            "XSCL-P011",
            f"function predicate opened at column {self.span(open_at).column} is not closed",
            pos,
            (expected,),
        )

    # ------------------------------------------------------------------ recovery

    def resume_after(self, failure: _Failure) -> int:
        """Offset just after the next ``;`` outside strings and comments (or end of input).

        After an unterminated literal, the first ``;`` on the quote's line counts.
        """
        text, n = self.text, self.n
        i = failure.offset
        if failure.code == "XSCL-P002":
            # The quote never closes: most likely it was meant to close before a ';'
            # on the same line; failing that, resume after the line.
            end = text.find("\n", i)
            end = n if end < 0 else end
            semicolon = text.find(";", i, end)
            if semicolon >= 0:
                return semicolon + 1
            i = end
        while i < n:
            ch = text[i]
            if ch == ";":
                return i + 1
            if ch == "-" and text.startswith("--", i):
                end = text.find("\n", i)
                i = n if end < 0 else end
            elif ch == "(" and text.startswith("(:", i):
                i = xpath_comment_end(text, i) or n
            elif ch == '"' or (ch == "'" and not (i > 0 and text[i - 1] in _VAR_CHARS)):
                m = (_SQ_STRING if ch == "'" else _DQ_STRING).match(text, i)
                if m is not None:
                    i = m.end()
                else:
                    end = text.find("\n", i)
                    i = n if end < 0 else end
            else:
                i += 1
        return n


def parse_file(text: str, *, source: str | None = None) -> ParseResult:
    """Parse a whole ``.xscl`` file tolerantly (spec section 2 and 4).

    Returns every good query and one error per bad query or declaration; a
    repeated query id is reported (``XSCL-V007``) on the later query, which is
    dropped. ``source`` (a file name) is only used in error messages.
    """
    with gc_paused(len(text) >= GC_PAUSE_CHARS):
        return _parse_file(text, source)


def iter_file_queries(text: str, *, source: str | None = None) -> Iterator[Query]:
    """The good queries of a whole ``.xscl`` file one at a time, in file order: what
    ``parse_file`` returns as ``queries``, without holding them all (a compile task that
    keeps one part of a large file, ``spark_plugin.compile_job``); errors are skipped.

    >>> [q.qid for q in iter_file_queries("a: S/x; S/[; b: S/y;")]
    ['a', 'b']
    """
    with gc_paused(len(text) >= GC_PAUSE_CHARS):
        yield from _iter_file(text, source, [], [])


def _parse_file(text: str, source: str | None) -> ParseResult:
    errors: list[XsclError] = []
    declared: list[tuple[tuple[str, str], ...]] = []
    queries = tuple(_iter_file(text, source, errors, declared))
    return ParseResult(queries, declared[0], tuple(errors))


def _iter_file(
    text: str,
    source: str | None,
    errors: list[XsclError],
    declared: list[tuple[tuple[str, str], ...]],
) -> Iterator[Query]:
    """The file's good queries, in order; its errors appended to ``errors`` and its
    namespace bindings to ``declared``, as they are found."""
    parser = _Parser(text, source, {})
    parser.skip()
    parser.collect = True  # declarations are few: always gather expected tokens
    while parser.peek_keyword("DECLARE"):
        try:
            parser.declaration()
        except _Failure as failure:
            errors.append(parser.to_error(failure, None))
            parser.advance(parser.resume_after(failure))
    parser.collect = False
    namespaces = tuple(sorted(parser.namespaces.items()))
    declared.append(namespaces)
    seen: set[str] = set()
    index = 0
    while not parser.at_end():
        start = parser.pos
        if parser.text[start] == ";":
            errors.append(parser.to_error(_Failure("XSCL-P008", "empty query", start), None))
            parser.advance(parser.pos + 1)
            continue
        if parser.peek_keyword("DECLARE"):
            misplaced = _Failure(
                "XSCL-P007", "DECLARE NAMESPACE must come before the first query", start
            )
            errors.append(parser.to_error(misplaced, None))
            parser.advance(parser.resume_after(misplaced))
            continue
        index += 1
        try:
            query = parser.query_def(start, f"q{index}", namespaces, alone=False)
        except _Failure as failure:
            errors.append(parser.to_error(failure, parser.qid))
            parser.advance(parser.resume_after(failure))
            continue
        qid = query.qid
        if qid in seen:
            duplicate = _Failure("XSCL-V007", f"duplicate query id {qid!r}", start)
            errors.append(parser.to_error(duplicate, qid))
            continue
        seen.add(qid)
        yield query
    if index == 0:
        errors.append(parser.to_error(_Failure("XSCL-P009", "no query in file", parser.n), None))


def parse_query(
    text: str, *, qid: str | None = None, namespaces: tuple[tuple[str, str], ...] = ()
) -> Query:
    """Parse exactly one query (optional ``ID:`` label and trailing ``;``).

    The id is the label if written, else ``qid``, else ``q1`` (``explicit_id``
    is True only for a written label). ``namespaces`` are the (prefix, uri)
    bindings in scope. Raises ``XsclSyntaxError`` (or ``XsclValidationError``
    ``XSCL-V008`` for an unknown prefix).
    """
    parser = _Parser(text, None, dict(namespaces))
    parser.skip()
    try:
        return parser.query_def(parser.pos, qid or "q1", tuple(sorted(namespaces)), alone=True)
    except _Failure as failure:
        raise parser.to_error(failure, parser.qid) from None


def parse_queries(text: str, *, source: str | None = None) -> tuple[Query, ...]:
    """Parse a file strictly: all its queries, or raise its first error."""
    result = parse_file(text, source=source)
    if result.errors:
        raise result.errors[0]
    return result.queries
