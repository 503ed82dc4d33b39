"""CEL queries to Cayuga automata (thesis 3.3.3-3.3.4 and 4.3).

A stream expression compiles to a *fragment*: its output schema and the
*pending* edges that would enter the state after it (the thesis's "forward
edges leading to the end state"). Then, following the proof of Theorem 1:

* a stream S: a pending edge from S's start state, mapping the event as is;
* ``FILTER`` and ``SELECT``: composed onto every pending edge, by substituting
  each attribute with the expression the edge computes for it (Lemma 2);
* ``UNION``: both fragments' pending edges, the right's reordered;
* ``E NEXT{p} R`` and ``E FOLD{p, q, aggs} R``: a new state reading R's stream,
  entered by E's pending edges. Its filter predicate is p with R's own
  FILTERs (their DUR is the event's: option II), except NEXT's ``DUR <``/``<=``
  ceilings, which go on its forward edge (``_dur_ceiling``); a FOLD state has a rebind
  edge (predicate q, map: first values kept, iterated values replaced by
  the event's or the aggregates'), and its pending edge is a copy of the
  rebind edge (every iteration is output); a NEXT state's pending edge
  concatenates the instance and the event.
* At the end of the query, an end state receives the pending edges.

The right operand of NEXT and FOLD must be a stream under FILTER/SELECT; any
other (``A NEXT (B NEXT C)``, a UNION) is compiled as an automaton of its own
that publishes an internal stream, which the state then reads
(**resubscription**, needed by the Separation Theorem 3).

Channels (``xscl.events.channels``, thesis 5.4.4): a stream the compiler is told
to read through its channel (``encoded``: stream -> channel key) starts from the
channel's start state; ``first_inputs`` says which streams of a query are read
that way (every stream a start state is asked for: not simple right operands).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from xscl.events.automaton import EdgeLabel, Output
from xscl.events.ir import (
    IR,
    And,
    Bin,
    Cmp,
    DurCmp,
    Fn,
    Lit,
    Neg,
    Or,
    Pred,
    conjuncts,
    event_slot,
    instance_slot,
    intern,
    text,
)
from xscl.events.ir import Not as NotIR
from xscl.events.network import Holding, Network
from xscl.events.shape_memo import ShapeMemo
from xscl.lang.cel import schema as output_schema
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
    SelectItem,
    Star,
    StreamExpr,
    StreamRef,
    SubQuery,
    UnionExpr,
)

__all__ = ["Lookup", "QueryCompiler", "canonical", "conditions", "first_inputs", "to_ir"]

Schema = tuple[str, ...]

# output schemas are pure functions of a few schemas, recomputed for every query:
# remembered (all arguments here are tuples)
next_schema = lru_cache(maxsize=4096)(output_schema.next_schema)
fold_iterated = lru_cache(maxsize=4096)(output_schema.fold_iterated)
fold_schema = lru_cache(maxsize=4096)(output_schema.fold_schema)

class Lookup:
    """What attributes resolve to where an expression is compiled (an edge map's
    values), with the ``context`` id under which ``ShapeMemo`` files its comparisons."""

    __slots__ = ("context",)

    def __init__(self, memo: ShapeMemo | None, key: Hashable) -> None:
        self.context = -1 if memo is None else memo.context(key)

    def __call__(self, attr: Attr) -> IR:
        raise NotImplementedError


def to_ir(expr: Expr, lookup: Lookup, dur_of_event: bool, memo: ShapeMemo | None = None) -> IR:
    """The IR of a resolved CEL expression; ``lookup`` gives each attribute's expression.

    Every node is interned (``xscl.events.ir.intern``), children first. With a
    ``memo``, a comparison between attributes and constants is compiled once per
    context, shape and literals.
    """
    if memo is not None and expr.__class__ is Compare:
        return memo.comparison(
            expr, lookup.context, dur_of_event, lambda: to_ir(expr, lookup, dur_of_event)
        )
    if expr.__class__ is Attr:
        return lookup(expr)
    return intern(_to_ir(expr, lookup, dur_of_event, memo))


def conditions(
    expr: Expr, lookup: Lookup, dur_of_event: bool, memo: ShapeMemo | None = None
) -> Pred:
    """A condition as conjuncts: its top-level ANDs split, TRUE dropped (what
    ``canonical`` would make of its IR, without building the ANDs)."""
    if expr.__class__ is Logic and expr.op == "AND":
        return tuple(c for item in expr.items for c in conditions(item, lookup, dur_of_event, memo))
    if expr.__class__ is BoolConst and expr.value is True:
        return ()
    return (to_ir(expr, lookup, dur_of_event, memo),)


def _to_ir(expr: Expr, lookup: Lookup, dur_of_event: bool, memo: ShapeMemo | None) -> IR:
    if isinstance(expr, Attr):
        return lookup(expr)
    if isinstance(expr, Const):
        return Lit(expr.value)
    if isinstance(expr, BoolConst):
        return Lit(expr.value)
    if isinstance(expr, Negate):
        return Neg(to_ir(expr.operand, lookup, dur_of_event, memo))
    if isinstance(expr, Arith):
        return Bin(
            expr.op,
            to_ir(expr.left, lookup, dur_of_event, memo),
            to_ir(expr.right, lookup, dur_of_event, memo),
        )
    if isinstance(expr, Compare):
        if isinstance(expr.left, Dur):
            assert isinstance(expr.right, Duration), "validation writes DUR op Duration"
            return DurCmp(expr.op, expr.right.micros, dur_of_event)
        return Cmp(
            expr.op,
            to_ir(expr.left, lookup, dur_of_event, memo),
            to_ir(expr.right, lookup, dur_of_event, memo),
        )
    if isinstance(expr, Logic):
        items = tuple(to_ir(item, lookup, dur_of_event, memo) for item in expr.items)
        return And(items) if expr.op == "AND" else Or(items)
    if isinstance(expr, Not):
        return NotIR(to_ir(expr.operand, lookup, dur_of_event, memo))
    if isinstance(expr, Call):
        return Fn(expr.name, tuple(to_ir(a, lookup, dur_of_event, memo) for a in expr.args))
    raise AssertionError(f"{type(expr).__name__} outside a comparison")


def canonical(pred: Sequence[IR]) -> Pred:
    """A predicate's conjuncts, flattened, deduplicated and in a fixed order (for merging)."""
    return tuple(sorted(conjuncts(pred), key=text))


@dataclass(frozen=True)
class _Pending:
    """An edge waiting for its target state: from ``source`` with this label."""

    source: object  # a State; typed loosely to keep this record hashable-free
    pred: Pred
    mapping: tuple[IR, ...]
    from_event: bool

    def label(self) -> EdgeLabel:
        return EdgeLabel(canonical(self.pred), self.mapping, self.from_event)


@dataclass(frozen=True)
class _Fragment:
    schema: Schema
    pending: tuple[_Pending, ...]


@dataclass(frozen=True)
class _Right:
    """A right operand: a stream, a predicate on its event and the operand's values."""

    stream: str
    schema: Schema
    pred: Pred
    mapping: tuple[IR, ...]


class QueryCompiler:
    """Compiles the queries of one subscription into ``network``."""

    def __init__(
        self,
        network: Network,
        schema_of: Callable[[str], Schema],
        new_stream: Callable[[Schema], str],
        holding: Holding,
        since: int,
        memo: ShapeMemo | None = None,
        encoded: Mapping[str, str] | None = None,
    ) -> None:
        self.network = network
        self.memo = memo
        self.encoded = encoded or {}
        self.schema_of = schema_of
        self.new_stream = new_stream
        self.holding = holding
        self.since = since

    def query(self, query: Query, output: Callable[[Schema], Output]) -> Schema:
        """Compile ``query``; its end state gets ``output(schema)``. Returns its schema."""
        fragment = self._select(self._fragment(query.source), query.select)
        self._end(fragment, output(fragment.schema))
        return fragment.schema

    def _end(self, fragment: _Fragment, output: Output) -> None:
        self.network.end(
            incoming=[(p.source, p.label()) for p in fragment.pending],  # type: ignore[misc]
            output=output,
            names=fragment.schema,
            holding=self.holding,
            since=self.since,
        )

    # ------------------------------------------------------------------ left operands

    def _fragment(self, expr: StreamExpr) -> _Fragment:
        if isinstance(expr, StreamRef):
            schema = self.schema_of(expr.name)
            start = self.network.start(self.encoded.get(expr.name, expr.name))
            identity = tuple(event_slot(j) for j in range(len(schema)))
            return _Fragment(schema, (_Pending(start, (), identity, True),))
        if isinstance(expr, SubQuery):
            return self._select(self._fragment(expr.query.source), expr.query.select)
        if isinstance(expr, Filter):
            inner = self._fragment(expr.input)
            return _Fragment(
                inner.schema,
                tuple(_filtered(p, expr, inner.schema, self.memo) for p in inner.pending),
            )
        if isinstance(expr, UnionExpr):
            left, right = self._fragment(expr.left), self._fragment(expr.right)
            order = [right.schema.index(name) for name in left.schema]
            moved = tuple(
                _Pending(p.source, p.pred, tuple(p.mapping[k] for k in order), p.from_event)
                for p in right.pending
            )
            return _Fragment(left.schema, left.pending + moved)
        if isinstance(expr, Next):
            return self._next(expr)
        return self._fold(expr)

    def _select(
        self, fragment: _Fragment, select: tuple[Star | SelectItem, ...] | None
    ) -> _Fragment:
        if select is None:
            return fragment
        names: list[str] = []
        for item in select:
            if isinstance(item, Star):
                names.extend(fragment.schema)
            else:
                assert item.name is not None or isinstance(item.expr, Attr)
                names.append(item.name or item.expr.name)  # type: ignore[union-attr]
        pending = []
        for p in fragment.pending:
            lookup = _Through(self.memo, fragment.schema, p.mapping)
            mapping: list[IR] = []
            for item in select:
                if isinstance(item, Star):
                    mapping.extend(p.mapping)
                else:
                    mapping.append(to_ir(item.expr, lookup, p.from_event, self.memo))
            pending.append(_Pending(p.source, p.pred, tuple(mapping), p.from_event))
        return _Fragment(tuple(names), tuple(pending))

    def _next(self, expr: Next) -> _Fragment:
        left = self._fragment(expr.left)
        right = self._right(expr.right)
        width = len(left.schema)
        lookup = _Sides(self.memo, left.schema, right, None)
        tests = (*right.pred, *conditions(expr.pred, lookup, False, self.memo))
        ceilings = tuple(t for t in tests if _dur_ceiling(t))
        state = self.network.state(
            stream=right.stream,
            names=left.schema,
            filter_=canonical([t for t in tests if not _dur_ceiling(t)]),
            rebind=None,
            incoming=[(p.source, p.label()) for p in left.pending],  # type: ignore[misc]
            since=self.since,
            holding=self.holding,
        )
        mapping = tuple(instance_slot(i) for i in range(width)) + right.mapping
        return _Fragment(
            next_schema(left.schema, right.schema), (_Pending(state, ceilings, mapping, False),)
        )

    def _fold(self, expr: Fold) -> _Fragment:
        left = self._fragment(expr.left)
        right = self._right(expr.right)
        names = tuple(agg.name for agg in expr.aggs)
        iterated = fold_iterated(right.schema, names)
        first = len(left.schema)
        entering = [
            _Pending(
                p.source,
                p.pred,
                p.mapping + tuple(p.mapping[left.schema.index(x)] for x in iterated),
                p.from_event,
            )
            for p in left.pending
        ]
        lookup = _Sides(self.memo, left.schema, right, iterated)
        stop = canonical(conditions(expr.stop, lookup, False, self.memo))
        computed = {agg.name: to_ir(agg.expr, lookup, False, self.memo) for agg in expr.aggs}
        step = tuple(instance_slot(i) for i in range(first)) + tuple(
            computed[x] if x in computed else right.mapping[right.schema.index(x)] for x in iterated
        )
        schema = fold_schema(left.schema, right.schema, names)
        state = self.network.state(
            stream=right.stream,
            names=schema,
            filter_=canonical((*right.pred, *conditions(expr.pred, lookup, False, self.memo))),
            rebind=EdgeLabel(stop, step, False),
            incoming=[(p.source, p.label()) for p in entering],  # type: ignore[misc]
            since=self.since,
            holding=self.holding,
        )
        return _Fragment(schema, (_Pending(state, stop, step, False),))

    # ------------------------------------------------------------------ right operands

    def _right(self, expr: StreamExpr) -> _Right:
        """The right operand as a stream, resubscribing to it when it is not one."""
        simple = self._simple(expr)
        if simple is not None:
            return simple
        fragment = self._fragment(expr)
        stream = self.new_stream(fragment.schema)
        internal = Output(
            None,
            stream,
            self.since,
            report=False,
            names=fragment.schema,
            members=self.holding.mask,
        )
        self._end(fragment, internal)
        width = len(fragment.schema)
        return _Right(stream, fragment.schema, (), tuple(event_slot(j) for j in range(width)))

    def _simple(self, expr: StreamExpr) -> _Right | None:
        """A stream under FILTERs and SELECTs (a unary expression over S), else None."""
        if isinstance(expr, StreamRef):
            schema = self.schema_of(expr.name)
            return _Right(expr.name, schema, (), tuple(event_slot(j) for j in range(len(schema))))
        if isinstance(expr, Filter):
            inner = self._simple(expr.input)
            if inner is None:
                return None
            lookup = _Through(self.memo, inner.schema, inner.mapping)
            tests = conditions(expr.pred, lookup, True, self.memo)
            return _Right(inner.stream, inner.schema, (*inner.pred, *tests), inner.mapping)
        if isinstance(expr, SubQuery):
            inner = self._simple(expr.query.source)
            if inner is None:
                return None
            selected = self._select(
                _Fragment(inner.schema, (_Pending(None, inner.pred, inner.mapping, True),)),
                expr.query.select,
            )
            (pending,) = selected.pending
            return _Right(inner.stream, selected.schema, inner.pred, pending.mapping)
        return None


def _dur_ceiling(test: IR) -> bool:
    """Whether ``test`` is ``DUR < c`` or ``DUR <= c`` on the composite event.

    NEXT puts these on its forward edge, not its state's filter: an instance pairs
    with the first events that satisfy the rest of the predicate, and if their
    composite DUR is past the ceiling, so is every later event's (DUR only grows
    with the end), so the instance could never complete; consuming it then changes
    no result. Queries that differ only in their window (thesis §5.5.2's workloads)
    then share one state and its instances, each keeping its bound on its own edge.
    """
    return isinstance(test, DurCmp) and not test.of_event and test.op in ("<", "<=")


def first_inputs(expr: StreamExpr) -> set[str]:
    """The streams ``QueryCompiler`` starts automata from in ``expr``: every stream
    reference except those of simple right operands of NEXT/FOLD (a stream under
    FILTERs and SELECTs), which states read instead."""
    if isinstance(expr, StreamRef):
        return {expr.name}
    if isinstance(expr, SubQuery):
        return first_inputs(expr.query.source)
    if isinstance(expr, Filter):
        return first_inputs(expr.input)
    if isinstance(expr, UnionExpr):
        return first_inputs(expr.left) | first_inputs(expr.right)
    assert isinstance(expr, Next | Fold)
    right = set() if _is_simple(expr.right) else first_inputs(expr.right)
    return first_inputs(expr.left) | right


def _is_simple(expr: StreamExpr) -> bool:
    """Whether ``QueryCompiler._simple`` reads ``expr`` as a state's input stream."""
    if isinstance(expr, StreamRef):
        return True
    if isinstance(expr, Filter):
        return _is_simple(expr.input)
    if isinstance(expr, SubQuery):
        return _is_simple(expr.query.source)
    return False


def _filtered(pending: _Pending, expr: Filter, schema: Schema, memo: ShapeMemo | None) -> _Pending:
    """``pending`` with a FILTER composed onto it (its DUR is the produced event's)."""
    lookup = _Through(memo, schema, pending.mapping)
    tests = conditions(expr.pred, lookup, pending.from_event, memo)
    return _Pending(pending.source, (*pending.pred, *tests), pending.mapping, pending.from_event)


class _Through(Lookup):
    """Attributes of a single input, each the expression an edge computes for it."""

    __slots__ = ("mapping", "schema")

    def __init__(self, memo: ShapeMemo | None, schema: Schema, mapping: tuple[IR, ...]) -> None:
        super().__init__(memo, ("through", schema, mapping))
        self.schema = schema
        self.mapping = mapping

    def __call__(self, attr: Attr) -> IR:
        return self.mapping[self.schema.index(attr.name)]


class _Sides(Lookup):
    """Attributes of NEXT/FOLD predicates: $1 the instance, $2 the event, $ FOLD's last values."""

    __slots__ = ("iterated", "left", "right")

    def __init__(
        self, memo: ShapeMemo | None, left: Schema, right: _Right, iterated: Schema | None
    ) -> None:
        super().__init__(memo, ("sides", left, right.schema, right.mapping, iterated))
        self.left = left
        self.right = right
        self.iterated = iterated

    def __call__(self, attr: Attr) -> IR:
        if attr.side == "2":
            return self.right.mapping[self.right.schema.index(attr.name)]
        if attr.side == "$":
            assert self.iterated is not None
            return instance_slot(len(self.left) + self.iterated.index(attr.name))
        return instance_slot(self.left.index(attr.name))
