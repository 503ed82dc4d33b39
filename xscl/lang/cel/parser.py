"""Parser of CEL files (docs/cel.md section 2) into the AST of ``xscl.lang.cel.ast``.

Recursive descent over the on-demand ``Scanner``. Every failed attempt to match
a token records what would have been accepted at that offset, so an error lists
exactly what was expected at the furthest point reached (``expected``), with a
stable code, the line, the column and a caret excerpt, as XSCL's errors do.

Error recovery (``parse_file``): a bad query yields one error and parsing
resumes after the next ``;`` outside string literals and comments, so one bad
query never hides the others. Unlabeled queries are numbered ``q1, q2, ...`` by
position among all queries, bad ones included.

>>> f = parse_file("DECLARE STREAM Stock(Name, Price); FROM FILTER{Price > 83}(Stock)")
>>> f.ok, f.queries[0].qid, f.streams[0].attrs
(True, 'q1', ('Name', 'Price'))
>>> print(parse_file("FROM FILTER{Price >}(Stock)").errors[0])
q1:1:20: CEL-P003 unexpected '}' (expected: '-', an expression, ...)
  FROM FILTER{Price >}(Stock)
                     ^
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from dataclasses import dataclass
from decimal import Decimal
from typing import NoReturn, cast

from xscl.errors import XsclError, XsclSyntaxError, XsclValidationError, excerpt_at
from xscl.lang.cel.ast import (
    Agg,
    Arith,
    ArithOp,
    Attr,
    BoolConst,
    Call,
    CelFile,
    Compare,
    CompareOp,
    Const,
    Dur,
    Duration,
    Expr,
    Filter,
    Fold,
    Logic,
    Negate,
    Next,
    Not,
    Query,
    SelectItem,
    Side,
    Span,
    Star,
    StreamDecl,
    StreamExpr,
    StreamRef,
    SubQuery,
    UnionExpr,
)
from xscl.lang.cel.lexer import (
    KEYWORDS,
    OPERATOR_SPELLINGS,
    UNIT_HINTS,
    UNITS,
    Failure,
    Scanner,
    Token,
)
from xscl.lang.gc_pause import GC_PAUSE_CHARS, gc_paused

__all__ = ["ParseResult", "parse_file", "parse_query"]

_LABEL = re.compile(r"([A-Za-z_](?:[A-Za-z0-9_.]|-(?!-))*)[ \t]*:")
_BAD_LABEL = re.compile(r"[^\s:;(){}'\",*$]+[ \t]*:")
_COMPARE = {"=", "!=", "<", "<=", ">", ">=", "<>", "≤", "≥", "≠"}

_E_STREAM = "a stream name"
_E_ATTR = "an attribute name"
_E_EXPR = "an expression"
_E_END = "end of input"


@dataclass(frozen=True)
class ParseResult:
    """What ``parse_file`` found: declarations, good queries, one error per bad part."""

    streams: tuple[StreamDecl, ...]
    queries: tuple[Query, ...]
    errors: tuple[XsclError, ...]

    @property
    def ok(self) -> bool:
        """True when the whole file parsed without error."""
        return not self.errors

    def to_file(self) -> CelFile:
        """The declarations and good queries as a ``CelFile``."""
        return CelFile(self.streams, self.queries)


def _describe(token: Token) -> str:
    if token.kind == "end":
        return _E_END
    text = token.text if len(token.text) <= 30 else token.text[:27] + "..."
    return f'"{text}"' if "'" in text else f"'{text}'"


class _Parser:
    """Recursive descent over one source text."""

    def __init__(self, text: str, source: str | None) -> None:
        self.text = text
        self.source = source
        self.scanner = Scanner(text)
        self.pos = self.scanner.skip_space(0)
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self._far = -1
        self._far_expected: list[str] = []
        self.collect = True  # gather expected tokens (off on the happy path, see parse_file)
        self._peeked_at = -1
        self._peeked: Token | None = None

    # ------------------------------------------------------------------ positions and errors

    def span(self, offset: int) -> Span:
        line = bisect_right(self._line_starts, offset)
        return Span(line, offset - self._line_starts[line - 1] + 1, offset)

    def to_error(self, failure: Failure, qid: str | None) -> XsclError:
        span = self.span(failure.offset)
        cls = XsclValidationError if failure.code.startswith("CEL-V") else XsclSyntaxError
        return cls(
            failure.message,
            code=failure.code,
            qid=qid,
            line=span.line,
            column=span.column,
            excerpt=excerpt_at(self.text, failure.offset),
            expected=failure.expected,
            source=self.source,
        )

    def note(self, what: str) -> None:
        """Record that ``what`` would have been accepted at the current position."""
        if not self.collect:
            return
        if self.pos > self._far:
            self._far = self.pos
            self._far_expected = [what]
        elif self.pos == self._far and what not in self._far_expected:
            self._far_expected.append(what)

    def fail(self) -> NoReturn:
        """Raise at the current token with what was expected here."""
        token = self.peek()
        code = "CEL-P004" if token.kind == "end" or token.text == ";" else "CEL-P003"
        expected = tuple(self._far_expected) if self._far == self.pos else ()
        # at the end of the input, point just after the last token (not at an empty line)
        offset = len(self.text[: self.pos].rstrip()) if token.kind == "end" else self.pos
        raise Failure(code, f"unexpected {_describe(token)}", offset, expected)

    # ------------------------------------------------------------------ tokens

    def peek(self) -> Token:
        if self._peeked_at == self.pos:
            return self._peeked  # type: ignore[return-value]
        token = self.scanner.token_at(self.pos)
        self._peeked_at, self._peeked = self.pos, token
        return token

    def diagnose(self, start: int, failure: Failure) -> Failure:
        """The same failure with what was expected, from a second parse that notes it.

        The first parse does not note expected tokens (most queries are valid);
        the parse is deterministic, so the second fails at the same place.
        """
        self.pos, self.collect, self._far, self._far_expected = start, True, -1, []
        try:
            self.query_def(self.qid)
        except Failure as again:
            return again
        finally:
            self.collect = False
        return failure

    def take(self) -> Token:
        token = self.peek()
        self.pos = self.scanner.skip_space(token.end)
        return token

    def is_keyword(self, keyword: str) -> bool:
        token = self.peek()
        return token.kind == "ident" and token.upper == keyword

    def accept_keyword(self, keyword: str) -> bool:
        if self.is_keyword(keyword):
            self.take()
            return True
        self.note(keyword)
        return False

    def expect_keyword(self, keyword: str) -> None:
        if not self.accept_keyword(keyword):
            self.fail()

    def accept(self, op: str) -> bool:
        token = self.peek()
        if token.kind == "op" and token.text == op:
            self.take()
            return True
        self.note(f"'{op}'")
        return False

    def expect(self, op: str) -> None:
        if not self.accept(op):
            self.fail()

    def name(self, what: str) -> tuple[str, int]:
        """An attribute or function name (not a keyword) and its offset."""
        token = self.peek()
        if token.kind != "ident":
            self.note(what)
            self.fail()
        if token.upper in KEYWORDS:
            raise Failure(
                "CEL-P010", f"reserved keyword {token.text!r} cannot be {what}", token.start
            )
        self.take()
        return token.text, token.start

    def stream_name(self) -> tuple[str, int]:
        start = self.pos
        found = self.scanner.stream_name_at(start)
        if found is None:
            self.note(_E_STREAM)
            self.fail()
        name, end = found
        if name.upper() in KEYWORDS:
            raise Failure("CEL-P010", f"reserved keyword {name!r} cannot be a stream name", start)
        self.pos = self.scanner.skip_space(end)
        return name, start

    def resume_after(self, offset: int) -> int:
        """The offset just past the next ``;`` outside strings and comments (or the end)."""
        text, n, pos = self.text, len(self.text), offset
        while pos < n:
            ch = text[pos]
            if ch == ";":
                return self.scanner.skip_space(pos + 1)
            if ch in "'\"":
                close = text.find(ch, pos + 1)
                while close != -1 and text.startswith(ch, close + 1):
                    close = text.find(ch, close + 2)
                pos = n if close == -1 else close + 1
            elif text.startswith("--", pos):
                newline = text.find("\n", pos)
                pos = n if newline == -1 else newline + 1
            else:
                pos += 1
        return n

    # ------------------------------------------------------------------ declarations

    def declaration(self) -> StreamDecl:
        """``DECLARE STREAM name(attr, ...)``."""
        start = self.pos
        self.expect_keyword("DECLARE")
        self.expect_keyword("STREAM")
        name, _ = self.stream_name()
        self.expect("(")
        attrs = [self.name(_E_ATTR)[0]]
        while self.accept(","):
            attrs.append(self.name(_E_ATTR)[0])
        self.expect(")")
        self.end_of_statement()
        return StreamDecl(name, tuple(attrs), self.span(start))

    def end_of_statement(self) -> None:
        if self.accept(";"):
            return
        if self.peek().kind != "end":
            self.note(_E_END)
            self.fail()

    # ------------------------------------------------------------------ queries

    def query_def(self, default_qid: str) -> Query:
        """``[ID:] query`` followed by ``;`` or the end of the input."""
        start = self.pos
        qid = default_qid
        m = _LABEL.match(self.text, start)
        if m:
            qid = m.group(1)
            self.qid = qid
            self.pos = self.scanner.skip_space(m.end())
        elif _BAD_LABEL.match(self.text, start):
            raise Failure(
                "CEL-P006",
                "invalid query id",
                start,
                ("an id matching [A-Za-z_][A-Za-z0-9_.-]*",),
            )
        query = self.query(qid, start)
        self.end_of_statement()
        return query

    def query(self, qid: str, start: int) -> Query:
        """``[SELECT items] FROM source [PUBLISH stream]``."""
        select: tuple[Star | SelectItem, ...] | None = None
        if self.accept_keyword("SELECT"):
            select = self.select_items()
        self.expect_keyword("FROM")
        source = self.stream_expr()
        publish = None
        publish_span = None
        if self.accept_keyword("PUBLISH"):
            publish, offset = self.stream_name()
            publish_span = self.span(offset)
        if select is not None and all(isinstance(item, Star) for item in select):
            select = None  # SELECT * is no SELECT
        return Query(qid, select, source, publish, self.span(start), publish_span)

    def select_items(self) -> tuple[Star | SelectItem, ...]:
        items: list[Star | SelectItem] = []
        while True:
            start = self.pos
            if self.accept("*"):
                items.append(Star(self.span(start)))
            else:
                expr = self.expression()
                alias = self.name(_E_ATTR)[0] if self.accept_keyword("AS") else None
                items.append(SelectItem(expr, alias, self.span(start)))
            if not self.accept(","):
                return tuple(items)

    # ------------------------------------------------------------------ stream expressions

    def stream_expr(self) -> StreamExpr:
        """``seq { UNION seq }`` (UNION binds loosest, left to right)."""
        left = self.sequence()
        while True:
            op_start = self.pos
            if not self.accept_keyword("UNION"):
                return left
            left = UnionExpr(left, self.sequence(), self.span(op_start))

    def sequence(self) -> StreamExpr:
        """``primary { NEXT[{pred}] primary | FOLD{pred, stop[, aggs]} primary }``, left-deep."""
        left = self.primary()
        while True:
            op_start = self.pos
            if self.accept_keyword("NEXT"):
                pred: Expr = BoolConst(True, self.span(op_start))
                if self.accept("{"):
                    pred = self.expression()
                    self.expect("}")
                left = Next(left, self.primary(), pred, self.span(op_start))
            elif self.accept_keyword("FOLD"):
                self.expect("{")
                pred = self.expression()
                self.expect(",")
                stop = self.expression()
                aggs: list[Agg] = []
                if self.accept(","):
                    if not self.accept("}"):
                        aggs = self.aggregates()
                        self.expect("}")
                else:
                    self.expect("}")
                left = Fold(left, self.primary(), pred, stop, tuple(aggs), self.span(op_start))
            else:
                return left

    def aggregates(self) -> list[Agg]:
        aggs = []
        while True:
            start = self.pos
            expr = self.expression()
            self.expect_keyword("AS")
            aggs.append(Agg(expr, self.name(_E_ATTR)[0], self.span(start)))
            if not self.accept(","):
                return aggs

    def primary(self) -> StreamExpr:
        start = self.pos
        if self.accept_keyword("FILTER"):
            self.expect("{")
            pred = self.expression()
            self.expect("}")
            self.expect("(")
            inner = self.parenthesised(self.pos)
            return Filter(pred, inner, self.span(start))
        if self.accept("("):
            return self.parenthesised(start)
        self.note("FILTER")
        self.note("'('")
        name, offset = self.stream_name()
        return StreamRef(name, self.span(offset))

    def parenthesised(self, start: int) -> StreamExpr:
        """After ``(``: a sub-query or a stream expression, then ``)``."""
        if self.is_keyword("SELECT") or self.is_keyword("FROM"):
            query = self.query(self.qid, self.pos)
            self.expect(")")
            return SubQuery(query, self.span(start))
        self.note("SELECT")
        self.note("FROM")
        inner = self.stream_expr()
        self.expect(")")
        return inner

    # ------------------------------------------------------------------ expressions

    def expression(self) -> Expr:
        """``or``: conditions and values share one precedence grammar (docs/cel.md 2.2)."""
        start = self.pos
        items = [self.conjunction()]
        while self.accept_keyword("OR"):
            items.append(self.conjunction())
        return items[0] if len(items) == 1 else Logic("OR", tuple(items), self.span(start))

    def conjunction(self) -> Expr:
        start = self.pos
        items = [self.negation()]
        while self.accept_keyword("AND"):
            items.append(self.negation())
        return items[0] if len(items) == 1 else Logic("AND", tuple(items), self.span(start))

    def negation(self) -> Expr:
        start = self.pos
        if self.accept_keyword("NOT"):
            return Not(self.negation(), self.span(start))
        return self.comparison()

    def comparison(self) -> Expr:
        start = self.pos
        left = self.additive()
        token = self.peek()
        if token.kind == "op" and token.text in _COMPARE:
            self.take()
            op = cast(CompareOp, OPERATOR_SPELLINGS.get(token.text, token.text))
            return Compare(op, left, self.additive(), self.span(start))
        for op in ("=", "!=", "<", "<=", ">", ">="):
            self.note(f"'{op}'")
        return left

    def additive(self) -> Expr:
        start = self.pos
        left = self.multiplicative()
        while True:
            token = self.peek()
            if token.kind == "op" and token.text in "+-":
                self.take()
                op = cast(ArithOp, token.text)
                left = Arith(op, left, self.multiplicative(), self.span(start))
            else:
                self.note("'+'")
                self.note("'-'")
                return left

    def multiplicative(self) -> Expr:
        start = self.pos
        left = self.unary()
        while True:
            token = self.peek()
            if token.kind == "op" and token.text in "*/":
                self.take()
                op = cast(ArithOp, token.text)
                left = Arith(op, left, self.unary(), self.span(start))
            else:
                self.note("'*'")
                self.note("'/'")
                return left

    def unary(self) -> Expr:
        start = self.pos
        if self.accept("-"):
            return Negate(self.unary(), self.span(start))
        return self.atom()

    def atom(self) -> Expr:
        token = self.peek()
        span = self.span(token.start)
        if token.kind == "number":
            self.take()
            return self.number_or_duration(token, span)
        if token.kind == "string":
            self.take()
            quote = token.text[0]
            return Const(token.text[1:-1].replace(quote + quote, quote), span)
        if token.kind == "decorator":
            return self.decorated(token, span)
        if token.kind == "ident":
            word = token.upper
            if word in ("TRUE", "FALSE"):
                self.take()
                return BoolConst(word == "TRUE", span)
            if word == "DUR":
                self.take()
                return Dur(span)
            name, _ = self.name(_E_ATTR)
            if self.accept("("):
                args: list[Expr] = []
                if not self.accept(")"):
                    args.append(self.expression())
                    while self.accept(","):
                        args.append(self.expression())
                    self.expect(")")
                return Call(name.lower(), tuple(args), span)
            return Attr(name, None, span)
        if token.kind == "op" and token.text == "(":
            self.take()
            inner = self.expression()
            self.expect(")")
            return inner
        for what in (_E_EXPR, "a number", "a string", _E_ATTR, "$1.", "$2.", "$.", "DUR"):
            self.note(what)
        self.fail()

    def decorated(self, token: Token, span: Span) -> Attr:
        """``$1.name``, ``$2.name`` or ``$.name``."""
        self.take()
        side = cast(Side, token.text[1:] or "$")
        if not self.accept("."):
            self.fail()
        after = self.peek()
        if after.kind == "decorator":
            raise Failure(
                "CEL-P011",
                "hierarchical decorators are not CEL (use the renamed attribute, e.g. a_1)",
                after.start,
                (_E_ATTR,),
            )
        name, _ = self.name(_E_ATTR)
        return Attr(name, side, span)

    def number_or_duration(self, token: Token, span: Span) -> Expr:
        """A number, or a duration when a unit word follows (``10min``, ``10 min``)."""
        after = self.peek()
        if after.kind == "ident" and after.upper not in KEYWORDS:
            unit = after.text.lower()
            if unit not in UNITS:
                raise Failure(
                    "CEL-P005",
                    f"unknown duration unit {after.text!r}",
                    after.start,
                    UNIT_HINTS,
                )
            self.take()
            micros = math.floor(Decimal(token.text) * UNITS[unit])
            return Duration(micros, self.text[token.start : after.end], span)
        if any(c in token.text for c in ".eE"):
            value = float(token.text)
            if not math.isfinite(value):
                raise Failure("CEL-P003", f"number {token.text} is out of range", token.start)
            return Const(value, span)
        return Const(int(token.text), span)

    qid: str = "q1"


def parse_file(text: str, *, source: str | None = None) -> ParseResult:
    """Parse a whole ``.cel`` file tolerantly (docs/cel.md sections 2 and 7).

    Returns the declarations, every good query and one error per bad query or
    declaration; a repeated query id (``CEL-V006``) drops the later query.
    ``source`` (a file name) is only used in error messages. Big files are
    parsed with the cyclic garbage collector paused (as XSCL's are).
    """
    with gc_paused(len(text) >= GC_PAUSE_CHARS):
        return _parse_file(text, source)


def _parse_file(text: str, source: str | None) -> ParseResult:
    parser = _Parser(text, source)
    errors: list[XsclError] = []
    streams: list[StreamDecl] = []
    while parser.is_keyword("DECLARE"):
        try:
            streams.append(parser.declaration())
        except Failure as failure:
            errors.append(parser.to_error(failure, None))
            parser.pos = parser.resume_after(failure.offset)
    parser.collect = False
    queries: list[Query] = []
    seen: set[str] = set()
    index = 0
    while parser.pos < len(text):
        start = parser.pos
        if text[start] == ";":
            errors.append(parser.to_error(Failure("CEL-P008", "empty query", start), None))
            parser.pos = parser.scanner.skip_space(start + 1)
            continue
        if parser.is_keyword("DECLARE"):
            misplaced = Failure(
                "CEL-P007", "DECLARE STREAM must come before the first query", start
            )
            errors.append(parser.to_error(misplaced, None))
            parser.pos = parser.resume_after(start)
            continue
        index += 1
        parser.qid = f"q{index}"
        try:
            query = parser.query_def(parser.qid)
        except Failure as failure:
            failure = parser.diagnose(start, failure)
            errors.append(parser.to_error(failure, parser.qid))
            parser.pos = parser.resume_after(failure.offset)
            continue
        if query.qid in seen:
            duplicate = Failure("CEL-V006", f"duplicate query id {query.qid!r}", start)
            errors.append(parser.to_error(duplicate, query.qid))
            continue
        seen.add(query.qid)
        queries.append(query)
    if index == 0:
        end = len(text.rstrip())
        errors.append(parser.to_error(Failure("CEL-P009", "no query in file", end), None))
    return ParseResult(tuple(streams), tuple(queries), tuple(errors))


def parse_query(text: str, *, qid: str = "q1") -> Query:
    """Parse exactly one query (optional ``ID:`` label and ``;``); raises ``XsclSyntaxError``."""
    parser = _Parser(text, None)
    parser.qid = qid
    try:
        query = parser.query_def(qid)
        if parser.peek().kind != "end":
            parser.note(_E_END)
            parser.fail()
    except Failure as failure:
        raise parser.to_error(failure, parser.qid) from None
    return query
