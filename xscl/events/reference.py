"""The reference evaluator of CEL: the algebra of docs/cel.md, by brute force, each query alone.

It is the oracle of the engine, as ``xscl.reference`` is for XSCL. It shares
only the language front end (parser, validation, the naming rules of
``xscl.lang.cel.schema``) and the envelope/result formats with the engine;
every construct is evaluated here straight from its definition on whole,
finite sets of events:

* FILTER, SELECT, UNION: docs/cel.md 4.1 (thesis σ, π/ρ/α, ∪; §3.2.1-3.2.2);
* NEXT: 4.2, each first event paired with its first candidates (thesis ;θ);
* FOLD: 4.3, the iteration sets I(n) computed until none is left (thesis μ,
  equation 3.1, with the sequence aggregates of §3.2.4);
* PUBLISHed streams: the union of their publishers' outputs, computed on
  demand (resubscription, §3.3.4).

Costs are quadratic and worse; it is meant for test-sized inputs.

>>> from xscl.lang.cel.parser import parse_file
>>> from xscl.lang.cel.validation import validate
>>> from xscl.events.envelope import Event
>>> program, _ = validate(parse_file('''DECLARE STREAM S(n);
...     SELECT n_1 AS a, n AS b FROM S NEXT{$2.n > $1.n} S'''))
>>> events = [Event("S", t, t, {"n": n}) for t, n in [(1, 5), (2, 3), (3, 7), (4, 9)]]
>>> sorted((r.start, r.end, r.attrs) for r in evaluate(program, events))
[(1, 3, (('a', 5), ('b', 7))), (2, 3, (('a', 3), ('b', 7))), (3, 4, (('a', 7), ('b', 9)))]
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from xscl.events.envelope import Event, Value
from xscl.events.results import Result
from xscl.lang.cel.ast import (
    Arith,
    Attr,
    BoolConst,
    Call,
    Compare,
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
    Star,
    StreamExpr,
    StreamRef,
    SubQuery,
    UnionExpr,
)
from xscl.lang.cel.schema import fold_iterated, fold_schema, next_schema
from xscl.lang.cel.validation import Program, published_subqueries

__all__ = ["evaluate", "evaluate_query"]

Schema = tuple[str, ...]


@dataclass(frozen=True)
class _Ev:
    """An event of an intermediate stream: values in its schema's order, and its interval."""

    values: tuple[Value, ...]
    start: int
    end: int


@dataclass(frozen=True)
class _Relation:
    """A stream expression's value: its schema and its set of events."""

    schema: Schema
    events: frozenset[_Ev]


@dataclass
class _Env:
    """What a predicate sees: the first/only input, the second, FOLD's last values, DUR."""

    one: Mapping[str, Value]
    two: Mapping[str, Value] | None = None
    last: Mapping[str, Value] | None = None
    dur: int = 0

    def get(self, attr: Attr) -> Value:
        side = {"1": self.one, "2": self.two, "$": self.last}[attr.side or "1"]
        assert side is not None, f"unresolved reference {attr}"
        return side[attr.name]


# ---------------------------------------------------------------- values and conditions (3.1-3.2)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _compare(op: str, a: Value, b: Value) -> bool:
    """docs/cel.md 3.1: strings with strings, numbers with numbers; null or mixed is false."""
    if a is None or b is None or isinstance(a, str) != isinstance(b, str):
        return False
    if op == "=":
        return a == b
    if op == "!=":
        return a != b
    if op == "<":
        return a < b  # type: ignore[operator]
    if op == "<=":
        return a <= b  # type: ignore[operator]
    if op == ">":
        return a > b  # type: ignore[operator]
    return a >= b  # type: ignore[operator]


def _arith(op: str, a: Value, b: Value) -> Value:
    """docs/cel.md 3.1: numbers only; division by zero and non-finite results are null."""
    if not (_is_number(a) and _is_number(b)):
        return None
    assert isinstance(a, (int, float)) and isinstance(b, (int, float))
    if op == "+":
        result = a + b
    elif op == "-":
        result = a - b
    elif op == "*":
        result = a * b
    else:
        if b == 0:
            return None
        result = a / b
    if isinstance(result, float) and not math.isfinite(result):
        return None
    return result


def _call(name: str, args: list[Value]) -> Value | bool:
    """docs/cel.md 3.2."""
    if name in ("contains", "starts_with", "ends_with"):
        text, part = args
        if not (isinstance(text, str) and isinstance(part, str)):
            return False
        if name == "contains":
            return part in text
        return text.startswith(part) if name == "starts_with" else text.endswith(part)
    (arg,) = args
    if name == "abs":
        return abs(arg) if _is_number(arg) else None  # type: ignore[arg-type]
    if not isinstance(arg, str):
        return None
    return arg.lower() if name == "lower" else arg.upper()


def _eval(expr: Expr, env: _Env) -> Value | bool:
    if isinstance(expr, Attr):
        return env.get(expr)
    if isinstance(expr, Const):
        return expr.value
    if isinstance(expr, BoolConst):
        return expr.value
    if isinstance(expr, Negate):
        value = _eval(expr.operand, env)
        return _arith("-", 0, value) if _is_number(value) else None
    if isinstance(expr, Arith):
        return _arith(expr.op, _eval(expr.left, env), _eval(expr.right, env))
    if isinstance(expr, Compare):
        if isinstance(expr.left, Dur):
            assert isinstance(expr.right, Duration)
            return _compare(expr.op, env.dur, expr.right.micros)
        return _compare(expr.op, _eval(expr.left, env), _eval(expr.right, env))
    if isinstance(expr, Logic):
        values = (_eval(item, env) for item in expr.items)
        return all(values) if expr.op == "AND" else any(values)
    if isinstance(expr, Not):
        return not _eval(expr.operand, env)
    if isinstance(expr, Call):
        return _call(expr.name, [_eval(arg, env) for arg in expr.args])
    raise AssertionError(f"{type(expr).__name__} outside a DUR comparison")


def _holds(expr: Expr, env: _Env) -> bool:
    return _eval(expr, env) is True


def _value(expr: Expr, env: _Env) -> Value:
    value = _eval(expr, env)
    assert not isinstance(value, bool), "validation keeps conditions out of values"
    return value


# ---------------------------------------------------------------- stream expressions (section 4)


class _Evaluator:
    """Evaluates stream expressions over one input, memoising PUBLISHed streams."""

    def __init__(self, program: Program, events: Iterable[Event]) -> None:
        self.program = program
        self.base: dict[str, set[_Ev]] = {name: set() for name in program.streams}
        for event in events:
            schema = program.streams.get(event.stream)
            if schema is not None:
                self.base[event.stream].add(_Ev(event.values(schema), event.start, event.end))
        self.publishers: dict[str, list[Query]] = {}
        for query in program.queries:
            for sub in published_subqueries(query):
                assert sub.publish is not None
                self.publishers.setdefault(sub.publish, []).append(sub)
        self.streams: dict[str, _Relation] = {}

    def stream(self, name: str) -> _Relation:
        """A base stream's events, or the union of a PUBLISHed stream's publishers."""
        if name not in self.streams:
            if name in self.base:
                relation = _Relation(self.program.streams[name], frozenset(self.base[name]))
            else:
                schema = self.program.published[name]
                events: set[_Ev] = set()
                for sub in self.publishers[name]:
                    events |= _reorder(self.query(sub), schema)
                relation = _Relation(schema, frozenset(events))
            self.streams[name] = relation
        return self.streams[name]

    def query(self, query: Query) -> _Relation:
        """``⟦(SELECT ... FROM E)⟧`` (3.5)."""
        source = self.expr(query.source)
        if query.select is None:
            return source
        names: list[str] = []
        for item in query.select:
            if isinstance(item, Star):
                names.extend(source.schema)
            else:
                assert item.name is not None or isinstance(item.expr, Attr)
                names.append(item.name or item.expr.name)  # type: ignore[union-attr]
        events = set()
        for event in source.events:
            env = _Env(dict(zip(source.schema, event.values, strict=True)))
            values: list[Value] = []
            for item in query.select:
                if isinstance(item, Star):
                    values.extend(event.values)
                else:
                    values.append(_value(item.expr, env))
            events.add(_Ev(tuple(values), event.start, event.end))
        return _Relation(tuple(names), frozenset(events))

    def expr(self, expr: StreamExpr) -> _Relation:
        if isinstance(expr, StreamRef):
            return self.stream(expr.name)
        if isinstance(expr, SubQuery):
            return self.query(expr.query)
        if isinstance(expr, Filter):
            inner = self.expr(expr.input)
            kept = frozenset(
                e
                for e in inner.events
                if _holds(
                    expr.pred,
                    _Env(dict(zip(inner.schema, e.values, strict=True)), dur=e.end - e.start),
                )
            )
            return _Relation(inner.schema, kept)
        if isinstance(expr, UnionExpr):
            left, right = self.expr(expr.left), self.expr(expr.right)
            return _Relation(left.schema, left.events | _reorder(right, left.schema))
        if isinstance(expr, Next):
            return self.next(expr)
        return self.fold(expr)

    def next(self, expr: Next) -> _Relation:
        """docs/cel.md 4.2: each left event with its first candidates on the right."""
        left, right = self.expr(expr.left), self.expr(expr.right)
        by_end = sorted(right.events, key=lambda e: e.end)
        out = set()
        for e1 in left.events:
            one = dict(zip(left.schema, e1.values, strict=True))
            first_end: int | None = None
            for e2 in by_end:
                if first_end is not None and e2.end > first_end:
                    break
                if e2.start <= e1.end:
                    continue
                env = _Env(
                    one, dict(zip(right.schema, e2.values, strict=True)), dur=e2.end - e1.start
                )
                if _holds(expr.pred, env):
                    first_end = e2.end
                    out.add(_Ev(e1.values + e2.values, e1.start, e2.end))
        return _Relation(next_schema(left.schema, right.schema), frozenset(out))

    def fold(self, expr: Fold) -> _Relation:
        """docs/cel.md 4.3: the union of the iteration sets I(n), n >= 1."""
        left, right = self.expr(expr.left), self.expr(expr.right)
        agg_names = tuple(agg.name for agg in expr.aggs)
        iterated = fold_iterated(right.schema, agg_names)
        by_end = sorted(right.events, key=lambda e: e.end)
        # a state: (first values f, last values l, start, end)
        frontier = {
            (e1.values, _pick(left.schema, e1.values, iterated), e1.start, e1.end)
            for e1 in left.events
        }
        out: set[_Ev] = set()
        while frontier:
            successors = set()
            for first, last, start, end in frontier:
                one = dict(zip(left.schema, first, strict=True))
                previous = dict(zip(iterated, last, strict=True))
                next_end: int | None = None
                for e2 in by_end:
                    if next_end is not None and e2.end > next_end:
                        break
                    if e2.start <= end:
                        continue
                    two = dict(zip(right.schema, e2.values, strict=True))
                    env = _Env(one, two, previous, dur=e2.end - start)
                    if not _holds(expr.pred, env):
                        continue
                    next_end = e2.end
                    if not _holds(expr.stop, env):
                        continue
                    computed = {agg.name: _value(agg.expr, env) for agg in expr.aggs}
                    new_last = tuple(computed[x] if x in computed else two[x] for x in iterated)
                    successors.add((first, new_last, start, e2.end))
            out |= {_Ev(f + last, s, e) for f, last, s, e in successors}
            frontier = successors
        schema = fold_schema(left.schema, right.schema, agg_names)
        return _Relation(schema, frozenset(out))


def _pick(schema: Schema, values: tuple[Value, ...], names: Sequence[str]) -> tuple[Value, ...]:
    row = dict(zip(schema, values, strict=True))
    return tuple(row[name] for name in names)


def _reorder(relation: _Relation, schema: Schema) -> frozenset[_Ev]:
    """The events of ``relation`` with their values in ``schema``'s order (same names)."""
    if relation.schema == schema:
        return relation.events
    return frozenset(
        _Ev(_pick(relation.schema, e.values, schema), e.start, e.end) for e in relation.events
    )


def _results(qid: str, stream: str | None, relation: _Relation) -> set[Result]:
    return {
        Result(qid, stream, e.start, e.end, tuple(zip(relation.schema, e.values, strict=True)))
        for e in relation.events
    }


def evaluate_query(program: Program, query: Query, events: Iterable[Event]) -> set[Result]:
    """The results of one query of ``program`` over ``events`` (docs/cel.md 5.2).

    Its own output (stream = its PUBLISH name or None) and the outputs of its
    sub-queries that have their own PUBLISH.
    """
    evaluator = _Evaluator(program, events)
    results = _results(query.qid, query.publish, evaluator.query(query))
    for sub in published_subqueries(query):
        if sub is not query:
            results |= _results(query.qid, sub.publish, evaluator.query(sub))
    return results


def evaluate(program: Program, events: Iterable[Event]) -> set[Result]:
    """The results of every query of ``program`` over ``events``, each query evaluated alone."""
    events = list(events)
    results: set[Result] = set()
    for query in program.queries:
        results |= evaluate_query(program, query, events)
    return results
