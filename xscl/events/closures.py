"""Edge expressions compiled to Python closures: the engine's evaluator (docs/cel.md 3.1-3.2).

The thesis's engine runs edge predicates and schema maps on a bytecode
interpreter (4.4.3); here each IR tree becomes a tree of closures called as
``f(instance, event)``. An instance is ``(values, start, end, origin)`` and an
event ``(values, start, end)``; ``instance`` is None on the edges of start
states. Common shapes (an event value against a constant, an event value
against an instance value) get closures of their own.

This is a second implementation of the value rules, independent of the
reference evaluator's, so the two check each other.

>>> from xscl.events.ir import Cmp, E, I, Lit
>>> f = predicate((Cmp("=", E(0), I(1)), Cmp(">", E(1), Lit(83))))
>>> f(((None, "IBM"), 0, 0, 0), (("IBM", 90), 5, 5)), f(((None, None), 0, 0, 0), ((None, 90), 5, 5))
(True, False)
"""

from __future__ import annotations

import math
import operator
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from xscl.events.ir import IR, And, Bin, Cmp, DurCmp, E, Fn, I, Lit, Neg, Not, Or

__all__ = ["Closure", "mapping", "predicate", "value"]

Closure = Callable[[Any, Any], Any]

_NUMBERS: frozenset[Any] = frozenset({int, float})
_ORDER: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


_COMPILED: weakref.WeakValueDictionary[IR, Closure] = weakref.WeakValueDictionary()


def value(node: IR) -> Closure:
    """A closure computing ``node`` (a value or, for conditions, a bool).

    Equal expressions share one closure while some edge uses it (the thesis's
    engine shares predicate programs the same way across merged queries).
    """
    found = _COMPILED.get(node)
    if found is None:
        found = _COMPILED[node] = _compile(node)
    return found


def _compile(node: IR) -> Closure:
    if isinstance(node, E):
        j = node.index
        return lambda inst, ev: ev[0][j]
    if isinstance(node, I):
        i = node.index
        return lambda inst, ev: inst[0][i]
    if isinstance(node, Lit):
        constant = node.value
        return lambda inst, ev: constant
    if isinstance(node, Cmp):
        return _compare(node)
    if isinstance(node, DurCmp):
        return _duration(node)
    if isinstance(node, And):
        items = tuple(value(item) for item in node.items)
        if len(items) == 2:
            first, second = items
            return lambda inst, ev: first(inst, ev) and second(inst, ev)
        if len(items) == 3:
            a, b, c = items
            return lambda inst, ev: a(inst, ev) and b(inst, ev) and c(inst, ev)
        return lambda inst, ev: all(f(inst, ev) for f in items)
    if isinstance(node, Or):
        items = tuple(value(item) for item in node.items)
        return lambda inst, ev: any(f(inst, ev) for f in items)
    if isinstance(node, Not):
        inner = value(node.operand)
        return lambda inst, ev: not inner(inst, ev)
    if isinstance(node, Neg):
        inner = value(node.operand)
        return lambda inst, ev: _negate(inner(inst, ev))
    if isinstance(node, Bin):
        return _arithmetic(node)
    return _function(node)


def _negate(x: Any) -> Any:
    return -x if x.__class__ in _NUMBERS else None


def _compare(node: Cmp) -> Closure:
    op, left, right = node.op, node.left, node.right
    test = _ORDER[op]
    if isinstance(left, Lit) and not isinstance(right, Lit):
        flipped = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(op, op)
        return _compare(Cmp(flipped, right, left))  # type: ignore[arg-type]
    if isinstance(left, E) and isinstance(right, Lit) and right.value is not None:
        j, c = left.index, right.value
        if op == "=":  # a string never equals a number, None never equals c
            return lambda inst, ev: ev[0][j] == c
        kind: Any = str if isinstance(c, str) else None
        if kind is str:
            return lambda inst, ev: (v := ev[0][j]).__class__ is str and test(v, c)
        return lambda inst, ev: (v := ev[0][j]).__class__ in _NUMBERS and test(v, c)
    if isinstance(left, E) and isinstance(right, I) and op == "=":
        j, i = left.index, right.index
        return lambda inst, ev: (v := ev[0][j]) == inst[0][i] and v is not None
    lf, rf = value(left), value(right)

    def compare(inst: Any, ev: Any) -> bool:
        a = lf(inst, ev)
        b = rf(inst, ev)
        if a is None or b is None or (a.__class__ is str) is not (b.__class__ is str):
            return False
        return test(a, b)

    return compare


def _duration(node: DurCmp) -> Closure:
    test, c = _ORDER[node.op], node.micros
    if node.of_event:
        return lambda inst, ev: test(ev[2] - ev[1], c)
    return lambda inst, ev: test(ev[2] - inst[1], c)


def _arithmetic(node: Bin) -> Closure:
    lf, rf, op = value(node.left), value(node.right), node.op

    def arithmetic(inst: Any, ev: Any) -> Any:
        a = lf(inst, ev)
        b = rf(inst, ev)
        if a.__class__ not in _NUMBERS or b.__class__ not in _NUMBERS:
            return None
        if op == "+":
            r = a + b
        elif op == "-":
            r = a - b
        elif op == "*":
            r = a * b
        elif b == 0:
            return None
        else:
            r = a / b
        if r.__class__ is float and not math.isfinite(r):
            return None
        return r

    return arithmetic


def _function(node: Fn) -> Closure:
    args = tuple(value(arg) for arg in node.args)
    name = node.name
    if name in ("contains", "starts_with", "ends_with"):
        text_f, part_f = args
        method = {"contains": str.__contains__, "starts_with": str.startswith}.get(
            name, str.endswith
        )

        def test(inst: Any, ev: Any) -> bool:
            text, part = text_f(inst, ev), part_f(inst, ev)
            return text.__class__ is str and part.__class__ is str and method(text, part)

        return test
    (arg_f,) = args
    if name == "abs":
        return lambda inst, ev: abs(x) if (x := arg_f(inst, ev)).__class__ in _NUMBERS else None
    case = str.lower if name == "lower" else str.upper
    return lambda inst, ev: case(x) if (x := arg_f(inst, ev)).__class__ is str else None


def predicate(pred: Sequence[IR]) -> Closure | None:
    """A closure testing the conjunction ``pred``, or None when it is TRUE (empty)."""
    if not pred:
        return None
    if len(pred) == 1:
        return value(pred[0])
    return value(And(tuple(pred)))


_MAPPINGS: weakref.WeakValueDictionary[tuple[tuple[IR, ...], int | None], Closure] = (
    weakref.WeakValueDictionary()
)


def mapping(exprs: Sequence[IR], event_width: int | None = None) -> Closure:
    """A closure building the tuple of ``exprs``' values (a schema map of thesis 4.3).

    ``event_width`` (the event's number of values) lets the identity map on the
    event return the event's own tuple. Equal maps share one closure.
    """
    key = (tuple(exprs), event_width)
    found = _MAPPINGS.get(key)
    if found is None:
        found = _MAPPINGS[key] = _mapping(key[0], event_width)
    return found


def _mapping(exprs: tuple[IR, ...], event_width: int | None) -> Closure:
    if event_width is not None and exprs == tuple(E(j) for j in range(event_width)):
        return lambda inst, ev: ev[0]
    instance_prefix = 0
    while instance_prefix < len(exprs) and exprs[instance_prefix] == I(instance_prefix):
        instance_prefix += 1
    rest = exprs[instance_prefix:]
    if instance_prefix and all(isinstance(x, E) for x in rest):
        width = instance_prefix
        picks = tuple(x.index for x in rest)  # type: ignore[union-attr]
        return lambda inst, ev: inst[0][:width] + tuple([ev[0][j] for j in picks])
    fns = tuple(value(x) for x in exprs)
    return lambda inst, ev: tuple([f(inst, ev) for f in fns])
