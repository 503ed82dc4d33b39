"""Canonical text of XSCL ASTs (the inverse of ``xscl.lang.parser``).

One canonical spelling per AST: upper-case keywords, ``->`` bindings, ``./``
relative paths, ``{x=y AND u=v, 1h}`` / ``TRUE`` join predicates, windows as
amount + unit with the ``Decimal`` written exactly (no exponent), string
literals in single quotes with ``''`` doubling, and ``DECLARE NAMESPACE`` lines
first. ``parse(format(ast)) == ast`` holds for every valid AST (tested with
hypothesis in tests/lang_parse).

A label ``ID:`` is written only for queries whose id was written
(``Query.explicit_id``); an assigned ``qN`` id is recovered from the query's
position when ``format_file``'s output is parsed again.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Protocol

from xscl.lang.ast import (
    Block,
    ComparisonPredicate,
    FunctionPredicate,
    JoinOp,
    LiteralValue,
    NodeTest,
    NumberLiteral,
    PathPredicate,
    Predicate,
    Query,
    RelPath,
    Step,
    StringLiteral,
    Window,
)

__all__ = ["QueriesWithNamespaces", "format_file", "format_query"]


class QueriesWithNamespaces(Protocol):
    """Anything with file-level ``namespaces`` and ``queries`` (QueryFile, ParseResult)."""

    @property
    def namespaces(self) -> tuple[tuple[str, str], ...]: ...

    @property
    def queries(self) -> tuple[Query, ...]: ...


def _decimal(value: Decimal) -> str:
    """Exact positional notation (``1E+2`` -> ``100``, ``1.50`` stays ``1.50``)."""
    return format(value, "f")


def _string(value: str, quote: str = "'") -> str:
    return quote + value.replace(quote, quote * 2) + quote


def _literal(literal: LiteralValue) -> str:
    if isinstance(literal, StringLiteral):
        return _string(literal.value)
    assert isinstance(literal, NumberLiteral)
    return _decimal(literal.value)


def _node_test(test: NodeTest) -> str:
    if test.kind == "wildcard":
        return "*"
    if test.kind == "text":
        return "text()"
    name = f"{test.prefix}:{test.local}" if test.prefix else str(test.local)
    return "@" + name if test.kind == "attribute" else name


def _step(step: Step) -> str:
    text = step.axis + _node_test(step.test)
    if step.var is not None:
        # A name ending in '-' would run into '->' and read as a comment '--'.
        text += (" ->" if text.endswith("-") else "->") + step.var
    return text + "".join(_predicate(p) for p in step.predicates)


def _rel_path(path: RelPath) -> str:
    return "." + "".join(_step(s) for s in path.steps)


def _predicate(predicate: Predicate) -> str:
    if isinstance(predicate, PathPredicate):
        return f"[{_rel_path(predicate.path)}]"
    if isinstance(predicate, ComparisonPredicate):
        return f"[{_rel_path(predicate.path)} {predicate.op} {_literal(predicate.literal)}]"
    assert isinstance(predicate, FunctionPredicate)
    return f"[{predicate.expression}]"


def _block(block: Block) -> str:
    return block.stream + "".join(_step(s) for s in block.steps)


def _window(window: Window) -> str:
    if window.amount is None:
        return "INF"
    return _decimal(window.amount) + window.unit


def _join_op(op: JoinOp) -> str:
    condition = " AND ".join(f"{e.left}={e.right}" for e in op.equalities) or "TRUE"
    return f"{op.kind} {{{condition}, {_window(op.window)}}}"


def format_query(q: Query, *, with_id: bool = True) -> str:
    """The canonical text of one query, without the trailing ``;``.

    Each operator starts an indented line (as in the thesis's Table 6.2). The
    ``ID:`` label is written when ``with_id`` and the id was explicit.
    """
    head = f"{q.qid}: " if with_id and q.explicit_id else ""
    if q.select is not None:
        head += f"SELECT {', '.join(q.select)} FROM "
    lines = [head + _block(q.blocks[0])]
    for op, block in zip(q.ops, q.blocks[1:], strict=True):
        lines.append(f"    {_join_op(op)} {_block(block)}")
    if q.publish is not None:
        lines[-1] += f" PUBLISH {q.publish}"
    return "\n".join(lines)


def format_file(qf: QueriesWithNamespaces) -> str:
    """The canonical text of a file: declarations, then each query ended by ``;``."""
    lines = [f"DECLARE NAMESPACE {p} = {_string(uri, chr(34))};" for p, uri in qf.namespaces]
    lines.extend(format_query(q) + ";" for q in qf.queries)
    return "\n".join(lines) + "\n"
