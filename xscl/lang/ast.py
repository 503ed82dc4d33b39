"""Immutable AST of XSCL (spec/XSCL.md section 2).

Every node is a frozen dataclass, so ASTs are hashable, comparable and safe to
share between threads and pickle to Spark executors. Source positions are kept
in ``Span`` fields that take no part in equality, so that
``parse(print(ast)) == ast`` holds for every valid query.

Normalisations done by the parser (so the printer has one canonical output):

* ``[a]`` and ``[./a]`` are the same relative path (``RelPath`` with a child step);
  ``[.]`` is ``RelPath(())``.
* ``SELECT *`` and no SELECT both give ``Query.select is None``.
* Keywords are case-insensitive; ``AS x`` and ``->x`` both give ``Step.var``.
* A window keeps its amount and unit as written (``1h`` stays 1 ``h``);
  ``Window.micros`` gives the length in microseconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Literal

Axis = Literal["/", "//"]
NodeKind = Literal["element", "wildcard", "attribute", "text"]
CompareOp = Literal["=", "!=", "<", "<=", ">", ">="]
JoinKind = Literal["JOIN", "FOLLOWED BY"]
TimeUnit = Literal["ms", "s", "m", "h", "d"]

#: Microseconds per window unit (spec section 2: ms s m h d; no unit = seconds).
UNIT_MICROS: dict[str, int] = {
    "ms": 1_000,
    "s": 1_000_000,
    "m": 60_000_000,
    "h": 3_600_000_000,
    "d": 86_400_000_000,
}


@dataclass(frozen=True, slots=True)
class Span:
    """A 1-based source position (line, column) with the absolute offset."""

    line: int
    column: int
    offset: int = 0


@dataclass(frozen=True, slots=True)
class NodeTest:
    """What a step selects: a named element, ``*``, ``@name`` or ``text()``.

    ``prefix`` is the namespace prefix as written (``None`` = match by local
    name in any namespace, spec 3.1). ``local`` is ``None`` for wildcard/text.
    """

    kind: NodeKind
    local: str | None = None
    prefix: str | None = None

    def __post_init__(self) -> None:
        named = self.kind in ("element", "attribute")
        if named != (self.local is not None):
            raise ValueError(f"NodeTest kind {self.kind!r} with local={self.local!r}")
        if self.prefix is not None and not named:
            raise ValueError("only element and attribute tests take a prefix")


@dataclass(frozen=True, slots=True)
class StringLiteral:
    """A quoted string literal; ``value`` is unescaped ('' -> ')."""

    value: str


@dataclass(frozen=True, slots=True)
class NumberLiteral:
    """A decimal number literal, kept exactly."""

    value: Decimal


LiteralValue = StringLiteral | NumberLiteral


@dataclass(frozen=True, slots=True)
class Step:
    """One location step: axis, node test, optional binding, predicates."""

    axis: Axis
    test: NodeTest
    var: str | None = None
    predicates: tuple[Predicate, ...] = ()
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class RelPath:
    """A path relative to the context node; no steps means ``.`` itself."""

    steps: tuple[Step, ...] = ()


@dataclass(frozen=True, slots=True)
class PathPredicate:
    """``[path]``: the path selects at least one node (existential)."""

    path: RelPath


@dataclass(frozen=True, slots=True)
class ComparisonPredicate:
    """``[path op literal]``: some node the path selects compares true."""

    path: RelPath
    op: CompareOp
    literal: LiteralValue


@dataclass(frozen=True, slots=True)
class FunctionPredicate:
    """``[fn(...)]``: an XPath 2.0 expression kept as text (elementpath evaluates it).

    ``span``: where the expression starts in the source (errors point into it).
    """

    expression: str
    span: Span | None = field(default=None, compare=False, repr=False)


Predicate = PathPredicate | ComparisonPredicate | FunctionPredicate


@dataclass(frozen=True, slots=True)
class Block:
    """A tree pattern on one document of ``stream``; no steps = the root element."""

    stream: str
    steps: tuple[Step, ...] = ()
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Window:
    """A join window: ``amount`` in ``unit``, or unbounded when ``amount`` is None (INF)."""

    amount: Decimal | None
    unit: TimeUnit = "s"

    @property
    def is_infinite(self) -> bool:
        return self.amount is None

    @property
    def micros(self) -> int | None:
        """Window length in whole microseconds (truncated); None for INF."""
        if self.amount is None:
            return None
        return int(self.amount * UNIT_MICROS[self.unit])


@dataclass(frozen=True, slots=True)
class Equality:
    """``left = right`` between two variables (value join on string values).

    ``left_span`` / ``right_span``: where each variable is written (errors about
    one variable point at it); not part of equality.
    """

    left: str
    right: str
    left_span: Span | None = field(default=None, compare=False, repr=False)
    right_span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class JoinOp:
    """The operator between block i and block i+1: kind, predicate, window.

    ``equalities`` empty means ``TRUE``.
    """

    kind: JoinKind
    equalities: tuple[Equality, ...]
    window: Window
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Query:
    """One XSCL query: blocks joined left-associatively by ``ops``.

    ``len(ops) == len(blocks) - 1``. ``select`` None means ``SELECT *``.
    ``namespaces`` holds the file's ``DECLARE NAMESPACE`` bindings (prefix, uri),
    sorted by prefix, so that a query is self-contained once registered.
    ``explicit_id`` records whether the id was written (``Q1:``) or assigned.
    """

    qid: str
    blocks: tuple[Block, ...]
    ops: tuple[JoinOp, ...] = ()
    select: tuple[str, ...] | None = None
    publish: str | None = None
    namespaces: tuple[tuple[str, str], ...] = ()
    explicit_id: bool = True
    span: Span | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if len(self.ops) != len(self.blocks) - 1:
            raise ValueError("a query needs exactly one operator between blocks")


@dataclass(frozen=True, slots=True)
class QueryFile:
    """A parsed ``.xscl`` file: namespace declarations and queries in file order."""

    namespaces: tuple[tuple[str, str], ...]
    queries: tuple[Query, ...]
