"""Semantic checks of parsed CEL queries and the resolved ``Program`` (docs/cel.md 3 and 7).

``validate`` takes the parser's output and returns a ``Program`` (the valid
queries, every attribute reference resolved to the input it reads, every DUR
test written ``DUR op Duration``) and one
``XsclValidationError`` per problem. Each error has a stable code, the query
id, the line and column of the offending construct and what was expected:

========  ===========================================================
V001      an attribute that the input(s) in scope do not have
V002      an undecorated attribute that more than one input has
V003      a decorator where it is not allowed ($2 outside NEXT/FOLD, $
          outside FOLD, any decorator in SELECT)
V004      a stream that is neither declared nor PUBLISHed by a valid query
V005      resubscription cycle: a query reads, directly or through other
          queries, a stream it PUBLISHes (every query on the cycle is rejected)
V006      duplicate query id (reported by the parser)
V007      FOLD's schema inclusion invariant: the second input has an
          attribute the first lacks
V008      a FOLD aggregate names an attribute the first input lacks (it
          would have no initial value)
V009      a schema with a repeated name (SELECT, the renaming of NEXT or
          FOLD, DECLARE STREAM)
V010      UNION of inputs with different sets of attribute names
V011      DUR or a duration other than ``DUR relop constant`` in a predicate
V012      a condition where a value is expected or the other way round
V013      a stream declared twice, or declared and PUBLISHed, or PUBLISHed
          by queries with different sets of attribute names
V014      an unknown function or a wrong number of arguments
V015      a SELECT expression that is not a bare attribute and has no AS name
========  ===========================================================

Rejecting a query never rejects another, except through what it would have
provided: the streams that only a rejected query PUBLISHes are unknown.

>>> from xscl.lang.cel.parser import parse_file
>>> parsed = parse_file('''DECLARE STREAM S(a, b);
...     FROM S NEXT{$1.a = $2.a} S PUBLISH P;
...     SELECT c FROM P''')
>>> program, errors = validate(parsed)
>>> [str(e).splitlines()[0] for e in errors]
['q2:3:12: CEL-V001 unknown attribute c (expected: a_1, b_1, a, b)']
>>> program.schema("P")
('a_1', 'b_1', 'a', 'b')
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Literal

from xscl.errors import XsclError, XsclValidationError, excerpt_at
from xscl.lang.cel.ast import (
    Agg,
    Arith,
    Attr,
    BoolConst,
    Call,
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
from xscl.lang.cel.functions import FUNCTIONS
from xscl.lang.cel.parser import ParseResult
from xscl.lang.cel.schema import duplicates, fold_iterated, fold_schema, next_schema
from xscl.lang.gc_pause import GC_PAUSE_QUERIES, gc_paused
from xscl.lang.validation import strongly_connected

__all__ = ["Program", "published_subqueries", "stream_refs", "validate"]

Schema = tuple[str, ...]
Kind = Literal["cond", "value", "dur", "duration"]


@dataclass(frozen=True)
class Program:
    """Valid CEL queries with every attribute reference resolved, and every stream's schema.

    ``streams`` are the base streams (declared or given as a catalog),
    ``published`` the streams valid queries PUBLISH (nested sub-queries too).
    """

    streams: Mapping[str, Schema]
    queries: tuple[Query, ...]
    published: Mapping[str, Schema] = field(default_factory=dict)

    def schema(self, stream: str) -> Schema:
        """The attribute names of a base or PUBLISHed stream (KeyError if unknown)."""
        if stream in self.streams:
            return self.streams[stream]
        return self.published[stream]


def stream_refs(expr: StreamExpr) -> Iterator[StreamRef]:
    """Every stream reference of a stream expression, nested sub-queries included."""
    if isinstance(expr, StreamRef):
        yield expr
    elif isinstance(expr, Filter):
        yield from stream_refs(expr.input)
    elif isinstance(expr, (Next, Fold, UnionExpr)):
        yield from stream_refs(expr.left)
        yield from stream_refs(expr.right)
    else:
        yield from stream_refs(expr.query.source)


def published_subqueries(query: Query) -> Iterator[Query]:
    """The query itself if it PUBLISHes, and every nested sub-query that PUBLISHes."""
    if query.publish is not None:
        yield query
    yield from _nested_publishers(query.source)


def _nested_publishers(expr: StreamExpr) -> Iterator[Query]:
    if isinstance(expr, SubQuery):
        yield from published_subqueries(expr.query)
    elif isinstance(expr, Filter):
        yield from _nested_publishers(expr.input)
    elif isinstance(expr, (Next, Fold, UnionExpr)):
        yield from _nested_publishers(expr.left)
        yield from _nested_publishers(expr.right)


class _Reject(Exception):
    """Internal: the stream expression has no schema (an error was already recorded)."""


@dataclass
class _Scope:
    """What attribute references can see: the first/only input, the second, FOLD's last."""

    context: str
    one: Schema
    two: Schema | None = None
    last: Schema | None = None
    allow_dur: bool = True
    allow_decorators: bool = True


def _limited(names: Sequence[str], limit: int = 20) -> tuple[str, ...]:
    names = list(dict.fromkeys(names))
    if len(names) > limit:
        return (*names[:limit], f"... ({len(names) - limit} more)")
    return tuple(names)


_FLIPPED: dict[CompareOp, CompareOp] = {
    "=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<=",
}  # fmt: skip


def _constant_micros(expr: Expr) -> int | None:
    """Microseconds of a duration or a constant number of seconds (docs/cel.md 2.3), else None."""
    sign = 1
    while isinstance(expr, Negate):
        sign, expr = -sign, expr.operand
    if isinstance(expr, Duration):
        return sign * expr.micros
    if isinstance(expr, Const) and not isinstance(expr.value, str):
        return sign * math.floor(Decimal(repr(expr.value)) * 1_000_000)
    return None


def _text(expr: Expr) -> str:
    return expr.text if isinstance(expr, Duration) else ""


class _QueryChecker:
    """Checks one top-level query (and its sub-queries), recording errors."""

    def __init__(
        self, qid: str, schemas: Mapping[str, Schema], text: str | None, source: str | None
    ) -> None:
        self.qid = qid
        self.source = source
        self.schemas = schemas
        self.text = text
        self.errors: list[XsclError] = []
        self.published: dict[str, Schema] = {}

    def error(
        self, code: str, message: str, span: Span | None, expected: Sequence[str] = ()
    ) -> None:
        self.errors.append(
            XsclValidationError(
                message,
                code=code,
                qid=self.qid,
                line=span.line if span else None,
                column=span.column if span else None,
                excerpt=excerpt_at(self.text, span.offset) if span and self.text else "",
                expected=tuple(expected),
                source=self.source,
            )
        )

    # ------------------------------------------------------------------ queries and streams

    def query(self, query: Query) -> tuple[Query, Schema]:
        source, schema = self.stream(query.source)
        select = query.select
        out: Schema = schema
        if select is not None:
            scope = _Scope("SELECT", schema, allow_dur=False, allow_decorators=False)
            items: list[Star | SelectItem] = []
            names: list[str] = []
            for item in select:
                if isinstance(item, Star):
                    items.append(item)
                    names.extend(schema)
                    continue
                expr = self.expr(item.expr, scope, "value")
                name = item.name
                if name is None and isinstance(item.expr, Attr):
                    name = item.expr.name
                if name is None:
                    self.error(
                        "CEL-V015",
                        "a SELECT expression needs a name",
                        item.span,
                        ("AS name after the expression",),
                    )
                    raise _Reject
                items.append(replace(item, expr=expr))
                names.append(name)
            self.no_duplicates(names, query.span, "SELECT")
            select = tuple(items)
            out = tuple(names)
        if query.publish is not None:
            self.published[query.publish] = out
        return replace(query, select=select, source=source), out

    def no_duplicates(self, names: Sequence[str], span: Span | None, what: str) -> None:
        repeated = duplicates(names)
        if repeated:
            self.error(
                "CEL-V009",
                f"{what} outputs {', '.join(repeated)} more than once",
                span,
                ("distinct attribute names (rename with SELECT ... AS)",),
            )
            raise _Reject

    def stream(self, expr: StreamExpr) -> tuple[StreamExpr, Schema]:
        if isinstance(expr, StreamRef):
            schema = self.schemas.get(expr.name)
            if schema is None:
                self.error(
                    "CEL-V004",
                    f"unknown stream {expr.name!r}",
                    expr.span,
                    _limited(sorted(self.schemas)) or ("a declared or PUBLISHed stream",),
                )
                raise _Reject
            return expr, schema
        if isinstance(expr, Filter):
            inner, schema = self.stream(expr.input)
            pred = self.condition(expr.pred, _Scope("FILTER", schema, allow_decorators=True))
            return replace(expr, input=inner, pred=pred), schema
        if isinstance(expr, SubQuery):
            query, schema = self.query(expr.query)
            return replace(expr, query=query), schema
        if isinstance(expr, UnionExpr):
            return self.union(expr)
        if isinstance(expr, Next):
            return self.next(expr)
        return self.fold(expr)

    def union(self, expr: UnionExpr) -> tuple[StreamExpr, Schema]:
        left, one = self.stream(expr.left)
        right, two = self.stream(expr.right)
        if set(one) != set(two):
            self.error(
                "CEL-V010",
                f"UNION of ({', '.join(one)}) and ({', '.join(two)})",
                expr.span,
                ("inputs with the same attribute names (rename with SELECT ... AS)",),
            )
            raise _Reject
        return replace(expr, left=left, right=right), one

    def next(self, expr: Next) -> tuple[StreamExpr, Schema]:
        left, one = self.stream(expr.left)
        right, two = self.stream(expr.right)
        pred = self.condition(expr.pred, _Scope("NEXT", one, two))
        out = next_schema(one, two)
        self.no_duplicates(out, expr.span, "NEXT (after renaming the first input's a to a_1)")
        return replace(expr, left=left, right=right, pred=pred), out

    def fold(self, expr: Fold) -> tuple[StreamExpr, Schema]:
        left, one = self.stream(expr.left)
        right, two = self.stream(expr.right)
        missing = [a for a in two if a not in one]
        if missing:
            self.error(
                "CEL-V007",
                f"FOLD's second input has {', '.join(missing)}, which its first input lacks",
                expr.span,
                ("a first input whose attributes include all of the second's",),
            )
            raise _Reject
        names = [agg.name for agg in expr.aggs]
        for agg in expr.aggs:
            if agg.name not in one:
                self.error(
                    "CEL-V008",
                    f"FOLD aggregate {agg.name} has no initial value in the first input",
                    agg.span,
                    _limited(one),
                )
                raise _Reject
        self.no_duplicates(names, expr.span, "FOLD's aggregates")
        last = fold_iterated(two, names)
        scope = _Scope("FOLD", one, two, last)
        pred = self.condition(expr.pred, scope)
        stop = self.condition(expr.stop, scope)
        agg_scope = _Scope("a FOLD aggregate", one, two, last, allow_dur=False)
        aggs = tuple(
            Agg(self.expr(agg.expr, agg_scope, "value"), agg.name, agg.span) for agg in expr.aggs
        )
        out = fold_schema(one, two, names)
        self.no_duplicates(out, expr.span, "FOLD (after renaming iterated a to a_1)")
        return replace(expr, left=left, right=right, pred=pred, stop=stop, aggs=aggs), out

    # ------------------------------------------------------------------ expressions

    def condition(self, expr: Expr, scope: _Scope) -> Expr:
        return self.expr(expr, scope, "cond")

    def expr(self, expr: Expr, scope: _Scope, want: Literal["cond", "value"]) -> Expr:
        resolved, kind = self.typed(expr, scope)
        if kind != want:
            what = "a condition" if want == "cond" else "a value"
            found = {"cond": "a condition", "value": "a value"}.get(kind, "DUR or a duration")
            code = "CEL-V012" if kind in ("cond", "value") else "CEL-V011"
            self.error(code, f"{found} where {what} is expected", _span(expr), (what,))
            raise _Reject
        return resolved

    def typed(self, expr: Expr, scope: _Scope) -> tuple[Expr, Kind]:
        if isinstance(expr, Attr):
            return self.attr(expr, scope), "value"
        if isinstance(expr, Const):
            return expr, "value"
        if isinstance(expr, BoolConst):
            return expr, "cond"
        if isinstance(expr, Duration):
            return expr, "duration"
        if isinstance(expr, Dur):
            if not scope.allow_dur:
                self.error("CEL-V011", f"DUR is not allowed in {scope.context}", expr.span)
                raise _Reject
            return expr, "dur"
        if isinstance(expr, Negate):
            return Negate(self.expr(expr.operand, scope, "value"), expr.span), "value"
        if isinstance(expr, Arith):
            left = self.expr(expr.left, scope, "value")
            right = self.expr(expr.right, scope, "value")
            return Arith(expr.op, left, right, expr.span), "value"
        if isinstance(expr, Compare):
            return self.compare(expr, scope), "cond"
        if isinstance(expr, Logic):
            items = tuple(self.expr(item, scope, "cond") for item in expr.items)
            return Logic(expr.op, items, expr.span), "cond"
        if isinstance(expr, Not):
            return Not(self.expr(expr.operand, scope, "cond"), expr.span), "cond"
        return self.call(expr, scope)

    def compare(self, expr: Compare, scope: _Scope) -> Expr:
        left, right = expr.left, expr.right
        if isinstance(left, Dur) or isinstance(right, Dur):
            dur, other = (left, right) if isinstance(left, Dur) else (right, left)
            self.typed(dur, scope)
            micros = _constant_micros(other)
            if micros is None:
                self.error(
                    "CEL-V011",
                    "DUR can only be compared with a constant duration",
                    _span(other),
                    ("a duration such as 10min, or a number of seconds",),
                )
                raise _Reject
            op = expr.op if dur is left else _FLIPPED[expr.op]
            return Compare(op, dur, Duration(micros, _text(other), _span(other)), expr.span)
        return Compare(
            expr.op, self.expr(left, scope, "value"), self.expr(right, scope, "value"), expr.span
        )

    def call(self, expr: Call, scope: _Scope) -> tuple[Expr, Kind]:
        signature = FUNCTIONS.get(expr.name)
        if signature is None or signature.arity != len(expr.args):
            known = [f"{name}({', '.join(s.params)})" for name, s in sorted(FUNCTIONS.items())]
            if signature is None:
                message = f"unknown function {expr.name}"
            else:
                message = f"{expr.name} takes {signature.arity} arguments, not {len(expr.args)}"
            self.error("CEL-V014", message, expr.span, known)
            raise _Reject
        args = tuple(self.expr(arg, scope, "value") for arg in expr.args)
        return Call(expr.name, args, expr.span), signature.returns

    def attr(self, attr: Attr, scope: _Scope) -> Attr:
        inputs: list[tuple[Side, Schema | None, str]] = [
            ("1", scope.one, "$1"),
            ("2", scope.two, "$2"),
            ("$", scope.last, "$"),
        ]
        if attr.side is not None:
            if not scope.allow_decorators and attr.side in ("1", "2", "$"):
                self.error(
                    "CEL-V003",
                    f"decorators are not allowed in {scope.context}",
                    attr.span,
                    (attr.name,),
                )
                raise _Reject
            side, schema, mark = next(i for i in inputs if i[0] == attr.side)
            if schema is None:
                allowed = [f"{m}.{attr.name}" for _, s, m in inputs if s is not None]
                where = "NEXT or FOLD" if side == "2" else "FOLD"
                self.error(
                    "CEL-V003",
                    f"{mark}. is only allowed in {where} predicates, not in {scope.context}",
                    attr.span,
                    allowed,
                )
                raise _Reject
            if attr.name not in schema:
                self.error(
                    "CEL-V001",
                    f"unknown attribute {mark}.{attr.name}",
                    attr.span,
                    _limited([f"{mark}.{a}" for a in schema]),
                )
                raise _Reject
            return attr
        found = [(side, mark) for side, schema, mark in inputs if schema and attr.name in schema]
        if not found:
            available = [a for _, schema, _ in inputs if schema for a in schema]
            self.error("CEL-V001", f"unknown attribute {attr.name}", attr.span, _limited(available))
            raise _Reject
        if len(found) > 1:
            self.error(
                "CEL-V002",
                f"attribute {attr.name} is in more than one input of {scope.context}",
                attr.span,
                tuple(f"{mark}.{attr.name}" for _, mark in found),
            )
            raise _Reject
        return Attr(attr.name, found[0][0], attr.span)


def _span(expr: Expr) -> Span | None:
    return expr.span


def _declared(
    decls: Sequence[StreamDecl],
    catalog: Mapping[str, Sequence[str]],
    text: str | None,
    source: str | None,
) -> tuple[dict[str, Schema], list[XsclError]]:
    streams = {name: tuple(attrs) for name, attrs in catalog.items()}
    errors: list[XsclError] = []
    for decl in decls:
        span = decl.span
        location = {
            "line": span.line if span else None,
            "column": span.column if span else None,
            "excerpt": excerpt_at(text, span.offset) if span and text else "",
            "source": source,
        }
        if decl.name in streams:
            errors.append(
                XsclValidationError(
                    f"stream {decl.name!r} is declared twice",
                    code="CEL-V013",
                    expected=("one DECLARE STREAM per stream",),
                    **location,  # type: ignore[arg-type]
                )
            )
            continue
        repeated = duplicates(decl.attrs)
        if repeated:
            errors.append(
                XsclValidationError(
                    f"stream {decl.name!r} declares {', '.join(repeated)} more than once",
                    code="CEL-V009",
                    expected=("distinct attribute names",),
                    **location,  # type: ignore[arg-type]
                )
            )
            continue
        streams[decl.name] = decl.attrs
    return streams, errors


def _order(queries: Sequence[Query], on_cycle: set[str]) -> list[Query]:
    """Queries off cycles, each after the queries whose streams it reads (file order otherwise)."""
    publishers: dict[str, list[str]] = {}
    for query in queries:
        for sub in published_subqueries(query):
            assert sub.publish is not None
            publishers.setdefault(sub.publish, []).append(query.qid)
    by_id = {q.qid: q for q in queries}
    done: set[str] = set()
    ordered: list[Query] = []

    def visit(query: Query) -> None:
        stack: list[tuple[Query, Iterator[StreamRef]]] = [(query, stream_refs(query.source))]
        done.add(query.qid)
        while stack:
            current, refs = stack[-1]
            for ref in refs:
                for qid in publishers.get(ref.name, ()):
                    if qid not in done and qid not in on_cycle:
                        done.add(qid)
                        stack.append((by_id[qid], stream_refs(by_id[qid].source)))
                        break
                else:
                    continue
                break
            else:
                stack.pop()
                ordered.append(current)

    for query in queries:
        if query.qid not in done and query.qid not in on_cycle:
            visit(query)
    return ordered


def _cycles(queries: Sequence[Query]) -> dict[str, tuple[StreamRef, list[str]]]:
    """Queries on a resubscription cycle: qid -> (a reference on the cycle, the cycle's qids)."""
    publishers: dict[str, list[str]] = {}
    for query in queries:
        for sub in published_subqueries(query):
            assert sub.publish is not None
            publishers.setdefault(sub.publish, []).append(query.qid)
    feeds: dict[str, list[str]] = {}
    for query in queries:
        sources = feeds.setdefault(query.qid, [])
        for ref in stream_refs(query.source):
            for source in publishers.get(ref.name, ()):
                if source not in sources:
                    sources.append(source)
    found: dict[str, tuple[StreamRef, list[str]]] = {}
    by_id = {q.qid: q for q in queries}
    for component in strongly_connected(feeds):
        members = set(component)
        if len(component) == 1 and component[0] not in feeds[component[0]]:
            continue
        for qid in component:
            ref = next(
                r
                for r in stream_refs(by_id[qid].source)
                if members.intersection(publishers.get(r.name, ()))
            )
            found[qid] = (ref, component)
    return found


def validate(
    parsed: ParseResult,
    *,
    catalog: Mapping[str, Sequence[str]] | None = None,
    text: str | None = None,
    source: str | None = None,
) -> tuple[Program, list[XsclError]]:
    """Check a parsed file: ``(program of the valid queries, validation errors)``.

    ``catalog`` gives the schemas of base streams known outside the file (such
    as XSCL's PUBLISHed streams). ``text`` (the source) adds caret excerpts,
    ``source`` (a file name) names it in the errors.
    Queries come back in an order where every query follows the queries whose
    streams it reads.
    """
    with gc_paused(len(parsed.queries) >= GC_PAUSE_QUERIES):
        return _validate(parsed, catalog or {}, text, source)


def _validate(
    parsed: ParseResult,
    catalog: Mapping[str, Sequence[str]],
    text: str | None,
    source: str | None,
) -> tuple[Program, list[XsclError]]:
    streams, errors = _declared(parsed.streams, catalog, text, source)
    queries = list(parsed.queries)
    accepted: list[Query] = []
    for query in queries:
        declared = [sub for sub in published_subqueries(query) if sub.publish in streams]
        if declared:
            checker = _QueryChecker(query.qid, streams, text, source)
            sub = declared[0]
            checker.error(
                "CEL-V013",
                f"stream {sub.publish!r} is declared as a base stream; it cannot be PUBLISHed",
                sub.publish_span,
                ("a stream name that is not declared",),
            )
            errors.extend(checker.errors)
        else:
            accepted.append(query)
    cycles = _cycles(accepted)
    for qid, (ref, cycle) in cycles.items():
        checker = _QueryChecker(qid, streams, text, source)
        checker.error(
            "CEL-V005",
            f"resubscription cycle through stream {ref.name!r} (queries: {' -> '.join(cycle)})",
            ref.span,
            ("a stream that does not depend on this query's own PUBLISH output",),
        )
        errors.extend(checker.errors)
    published: dict[str, Schema] = {}
    valid: list[Query] = []
    for query in _order(accepted, set(cycles)):
        checker = _QueryChecker(query.qid, {**streams, **published}, text, source)
        try:
            resolved, _ = checker.query(query)
        except _Reject:
            errors.extend(checker.errors)
            continue
        clash = next(
            (
                (name, schema)
                for name, schema in checker.published.items()
                if name in published and set(published[name]) != set(schema)
            ),
            None,
        )
        if clash is not None:
            name, schema = clash
            sub = next(s for s in published_subqueries(query) if s.publish == name)
            checker.error(
                "CEL-V013",
                f"stream {name!r} is PUBLISHed with ({', '.join(published[name])}) elsewhere, "
                f"here with ({', '.join(schema)})",
                sub.publish_span,
                ("the same attribute names as the other publishers",),
            )
            errors.extend(checker.errors)
            continue
        for name, schema in checker.published.items():
            published.setdefault(name, schema)
        valid.append(resolved)
    errors.sort(key=lambda e: (e.line or 0, e.column or 0))
    return Program(streams, tuple(valid), published), errors
