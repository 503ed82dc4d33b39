"""Immutable AST of CEL, the Cayuga Event Language (docs/cel.md section 2; thesis 4.2.2).

Every node is a frozen dataclass; source positions live in ``span`` fields that
take no part in equality, so two queries written differently but meaning the
same compare equal (``FILTER{a=1}(S)`` and ``filter { a = 1 } ( S )``).

Two layers share these classes:

* the parser's output, where an attribute reference may have no decorator
  (``Attr.side is None``);
* the validator's output (``xscl.lang.cel.validation``), where every reference
  is resolved: ``side`` is ``"1"`` (the first or only input), ``"2"`` (the
  second input of NEXT/FOLD) or ``"$"`` (FOLD's last iteration).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from xscl.lang.ast import Span

__all__ = [
    "Agg",
    "Arith",
    "Attr",
    "BoolConst",
    "Call",
    "CelFile",
    "Compare",
    "CompareOp",
    "Const",
    "Dur",
    "Duration",
    "Expr",
    "Filter",
    "Fold",
    "Logic",
    "Negate",
    "Next",
    "Not",
    "Query",
    "SelectItem",
    "Side",
    "Span",
    "Star",
    "StreamDecl",
    "StreamExpr",
    "StreamRef",
    "SubQuery",
    "UnionExpr",
]

Side = Literal["1", "2", "$"]
CompareOp = Literal["=", "!=", "<", "<=", ">", ">="]
ArithOp = Literal["+", "-", "*", "/"]
Value = str | int | float

# ---------------------------------------------------------------- value and condition expressions


@dataclass(frozen=True)
class Attr:
    """An attribute reference: ``Price``, ``$1.Price``, ``$2.Price`` or ``$.Price``."""

    name: str
    side: Side | None = None
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Const:
    """A string or number constant (``'IBM'``, ``83``, ``1.05``)."""

    value: Value
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Duration:
    """A duration constant such as ``10min`` (only compared with ``DUR``), in microseconds."""

    micros: int
    text: str = field(compare=False, default="")
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Dur:
    """``DUR``: the duration (end - start) of the event the predicate is about."""

    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class BoolConst:
    """``TRUE`` or ``FALSE`` (conditions only)."""

    value: bool
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Negate:
    """Unary minus."""

    operand: Expr
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Arith:
    """``left op right`` with op one of ``+ - * /``."""

    op: ArithOp
    left: Expr
    right: Expr
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Compare:
    """``left op right`` with op one of ``= != < <= > >=``."""

    op: CompareOp
    left: Expr
    right: Expr
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Logic:
    """``AND`` / ``OR`` over two or more conditions."""

    op: Literal["AND", "OR"]
    items: tuple[Expr, ...]
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Not:
    """``NOT condition``."""

    operand: Expr
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Call:
    """A built-in function call such as ``contains(description, 'Apple')``."""

    name: str
    args: tuple[Expr, ...]
    span: Span | None = field(default=None, compare=False)


Expr = Attr | Const | Duration | Dur | BoolConst | Negate | Arith | Compare | Logic | Not | Call

# ---------------------------------------------------------------- stream expressions


@dataclass(frozen=True)
class StreamRef:
    """A declared or PUBLISHed stream, by name."""

    name: str
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Filter:
    """``FILTER{pred}(input)``: the events of ``input`` that satisfy ``pred``."""

    pred: Expr
    input: StreamExpr
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Next:
    """``left NEXT{pred} right`` (no predicate = ``TRUE``)."""

    left: StreamExpr
    right: StreamExpr
    pred: Expr
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Agg:
    """One aggregate of FOLD: ``expr AS name``."""

    expr: Expr
    name: str
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Fold:
    """``left FOLD{pred, stop, aggs} right``: iterate over ``right`` (thesis 3.2.3)."""

    left: StreamExpr
    right: StreamExpr
    pred: Expr
    stop: Expr
    aggs: tuple[Agg, ...]
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class UnionExpr:
    """``left UNION right``."""

    left: StreamExpr
    right: StreamExpr
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class SubQuery:
    """A parenthesised ``(SELECT ... FROM ... [PUBLISH ...])`` used as a stream."""

    query: Query
    span: Span | None = field(default=None, compare=False)


StreamExpr = StreamRef | Filter | Next | Fold | UnionExpr | SubQuery

# ---------------------------------------------------------------- queries and files


@dataclass(frozen=True)
class Star:
    """``*`` in a SELECT list: every attribute of the input, in order."""

    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class SelectItem:
    """``expr [AS name]``; ``name`` is None only for a bare attribute (it keeps its name)."""

    expr: Expr
    name: str | None
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Query:
    """``[SELECT items] FROM source [PUBLISH stream]``; ``select is None`` means ``SELECT *``."""

    qid: str
    select: tuple[Star | SelectItem, ...] | None
    source: StreamExpr
    publish: str | None = None
    span: Span | None = field(default=None, compare=False)
    publish_span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class StreamDecl:
    """``DECLARE STREAM name(attr, ...)``: a base stream and its schema."""

    name: str
    attrs: tuple[str, ...]
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class CelFile:
    """The declarations and queries of one ``.cel`` file, in file order."""

    streams: tuple[StreamDecl, ...]
    queries: tuple[Query, ...]
