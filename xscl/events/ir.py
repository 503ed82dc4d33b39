"""Edge expressions of the automata: CEL expressions over *slots* (thesis 3.3.3, 4.3).

An automaton edge reads the instance stored at its source state (``I(i)``, the
i-th value of the state's schema) and the event of its input stream (``E(j)``,
the j-th value of the stream's schema). The compiler turns resolved CEL
expressions into these, substituting each attribute by the expression that
produces it, which is how unary operators compose onto an edge (the thesis's
Lemma 2: selection, projection, renaming and attribute introduction all move
onto the edge leading to a state).

Every node is a frozen dataclass: two edges with equal labels are equal, which
is what prefix merging of states (thesis 4.5.5) compares. Predicates are tuples
of conjuncts; ``split`` sorts them into the parts the indices of thesis 4.5 use.

>>> from xscl.events.ir import Cmp, E, I, Lit, split
>>> parts = split((Cmp("=", E(0), Lit("IBM")), Cmp("=", E(0), I(2)), Cmp(">", E(1), Lit(83))))
>>> parts.static_eq, parts.dynamic_eq
(((0, 'IBM'),), ((0, 2),))
>>> [str(c) for c in parts.static_rest]
['E1 > 83']
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

__all__ = [
    "IR",
    "And",
    "Bin",
    "Cmp",
    "DurCmp",
    "E",
    "Fn",
    "I",
    "Lit",
    "Neg",
    "Not",
    "Or",
    "Parts",
    "Pred",
    "cached_hash",
    "dur_upper_bound",
    "event_slot",
    "instance_slot",
    "intern",
    "is_static",
    "probe_keys",
    "signature",
    "split",
    "substitute",
    "text",
]

Value = str | int | float | None
_T = TypeVar("_T")
_N = TypeVar("_N", bound="IR")


def cached_hash(cls: type[_T]) -> type[_T]:
    """Remember a frozen dataclass instance's hash: labels of thousands of edges are
    hashed again and again (state keys, index tables), and their trees are deep."""
    compute = cls.__hash__

    def __hash__(self: Any) -> int:
        try:
            return self.__dict__["_hash"]  # type: ignore[no-any-return]
        except KeyError:
            value = compute(self)
            object.__setattr__(self, "_hash", value)
            return value

    cls.__hash__ = __hash__  # type: ignore[method-assign]
    return cls


@dataclass(frozen=True, eq=False)
class I:  # noqa: E742 - the thesis's notation for the stored instance
    """The i-th value of the instance at the edge's source state.

    One object per index (``I(2) is I(2)``), so equality and hashing are the
    object's identity, which the interpreter computes without calling Python code:
    edge maps are tuples of dozens of slots, hashed for every edge registered.
    """

    index: int

    def __new__(cls, index: int) -> I:
        return _slot(cls, _INSTANCE_SLOTS, index)

    def __reduce__(self) -> tuple[type[I], tuple[int]]:
        return I, (self.index,)

    def __str__(self) -> str:
        return f"I{self.index}"


@dataclass(frozen=True, eq=False)
class E:
    """The j-th value of the event read by the edge; one object per index, as ``I``."""

    index: int

    def __new__(cls, index: int) -> E:
        return _slot(cls, _EVENT_SLOTS, index)

    def __reduce__(self) -> tuple[type[E], tuple[int]]:
        return E, (self.index,)

    def __str__(self) -> str:
        return f"E{self.index}"


_S = TypeVar("_S", I, E)
_INSTANCE_SLOTS: list[I] = []
_EVENT_SLOTS: list[E] = []


def _slot(cls: type[_S], slots: list[_S], index: int) -> _S:
    """The one ``cls`` object for ``index``, made (with every smaller one) on first use."""
    if index < 0:
        raise ValueError(f"a slot index is not negative: {index}")
    while len(slots) <= index:
        slot = object.__new__(cls)
        object.__setattr__(slot, "index", len(slots))
        slots.append(slot)
    return slots[index]


@cached_hash
@dataclass(frozen=True)
class Lit:
    """A constant: a string, a number, or a boolean (conditions only).

    ``kind`` (the value's type) takes part in equality, so ``TRUE`` and ``1`` are
    different constants (Python's ``True == 1`` would let them share a closure).
    """

    value: Value | bool
    kind: str = field(default="")

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", type(self.value).__name__)

    def __str__(self) -> str:
        return repr(self.value) if isinstance(self.value, str) else str(self.value)


@cached_hash
@dataclass(frozen=True)
class Neg:
    """Unary minus."""

    operand: IR

    def __str__(self) -> str:
        return f"-{self.operand}"


@cached_hash
@dataclass(frozen=True)
class Bin:
    """Arithmetic ``+ - * /``."""

    op: Literal["+", "-", "*", "/"]
    left: IR
    right: IR

    def __str__(self) -> str:
        return f"({self.left} {self.op} {self.right})"


@cached_hash
@dataclass(frozen=True)
class Cmp:
    """A comparison of two values."""

    op: Literal["=", "!=", "<", "<=", ">", ">="]
    left: IR
    right: IR

    def __str__(self) -> str:
        return f"{self.left} {self.op} {self.right}"


@cached_hash
@dataclass(frozen=True)
class DurCmp:
    """``DUR op micros``: DUR is ``event.end - start`` where start is the event's own
    (``of_event``, thesis option II) or the instance's (the composite's, option I)."""

    op: Literal["=", "!=", "<", "<=", ">", ">="]
    micros: int
    of_event: bool

    def __str__(self) -> str:
        return f"DUR({'E' if self.of_event else 'I..E'}) {self.op} {self.micros}us"


@cached_hash
@dataclass(frozen=True)
class And:
    """Conjunction."""

    items: tuple[IR, ...]

    def __str__(self) -> str:
        return "(" + " AND ".join(map(str, self.items)) + ")"


@cached_hash
@dataclass(frozen=True)
class Or:
    """Disjunction."""

    items: tuple[IR, ...]

    def __str__(self) -> str:
        return "(" + " OR ".join(map(str, self.items)) + ")"


@cached_hash
@dataclass(frozen=True)
class Not:
    """Negation."""

    operand: IR

    def __str__(self) -> str:
        return f"NOT {self.operand}"


@cached_hash
@dataclass(frozen=True)
class Fn:
    """A built-in function call (docs/cel.md 3.2)."""

    name: str
    args: tuple[IR, ...]

    def __str__(self) -> str:
        return f"{self.name}({', '.join(map(str, self.args))})"


IR = I | E | Lit | Neg | Bin | Cmp | DurCmp | And | Or | Not | Fn

_INTERNED: weakref.WeakValueDictionary[IR, IR] = weakref.WeakValueDictionary()


def intern(node: _N) -> _N:
    """The one shared object equal to ``node`` (hash-consing).

    Thousands of queries repeat the same atoms (``E2 = 5``, ``E5 > 0.25``);
    sharing them keeps memory per query small, and equal children make equal
    parents cheap to find. Entries go when no edge uses them any more.
    """
    found = _INTERNED.get(node)
    if found is None:
        _INTERNED[node] = node
        return node
    return found  # type: ignore[return-value]


def instance_slot(index: int) -> I:
    """``I(index)``: one shared object per index (maps repeat them across many edges)."""
    return _slot(I, _INSTANCE_SLOTS, index)


def event_slot(index: int) -> E:
    """``E(index)``: one shared object per index."""
    return _slot(E, _EVENT_SLOTS, index)


#: A predicate: the conjunction of its items (empty = TRUE).
Pred = tuple[IR, ...]


def _children(node: IR) -> tuple[IR, ...]:
    if isinstance(node, Neg | Not):
        return (node.operand,)
    if isinstance(node, Bin | Cmp):
        return (node.left, node.right)
    if isinstance(node, And | Or):
        return node.items
    if isinstance(node, Fn):
        return node.args
    return ()


def substitute(node: IR, instance: Callable[[int], IR], event: Callable[[int], IR]) -> IR:
    """``node`` with every ``I(i)`` replaced by ``instance(i)`` and ``E(j)`` by ``event(j)``."""
    if isinstance(node, I):
        return instance(node.index)
    if isinstance(node, E):
        return event(node.index)
    if isinstance(node, Neg):
        return Neg(substitute(node.operand, instance, event))
    if isinstance(node, Not):
        return Not(substitute(node.operand, instance, event))
    if isinstance(node, Bin):
        return Bin(
            node.op, substitute(node.left, instance, event), substitute(node.right, instance, event)
        )
    if isinstance(node, Cmp):
        return Cmp(
            node.op, substitute(node.left, instance, event), substitute(node.right, instance, event)
        )
    if isinstance(node, And):
        return And(tuple(substitute(i, instance, event) for i in node.items))
    if isinstance(node, Or):
        return Or(tuple(substitute(i, instance, event) for i in node.items))
    if isinstance(node, Fn):
        return Fn(node.name, tuple(substitute(a, instance, event) for a in node.args))
    return node


def is_static(node: IR) -> bool:
    """True when ``node`` reads only the event (no instance value, no composite DUR)."""
    if isinstance(node, I):
        return False
    if isinstance(node, DurCmp):
        return node.of_event
    return all(is_static(child) for child in _children(node))


def conjuncts(items: Iterable[IR]) -> Pred:
    """A predicate with nested ANDs flattened and TRUE dropped."""
    out: list[IR] = []
    for item in items:
        if isinstance(item, And):
            out.extend(conjuncts(item.items))
        elif not (isinstance(item, Lit) and item.value is True):
            out.append(item)
    return tuple(dict.fromkeys(out))


@dataclass(frozen=True)
class Parts:
    """A predicate sorted for indexing (thesis 4.4.3): indexed/unindexed, static/dynamic.

    ``static_eq``: ``E(j) = constant`` as (j, constant); ``dynamic_eq``:
    ``E(j) = I(i)`` as (j, i); the rest keeps every other conjunct.
    """

    static_eq: tuple[tuple[int, Value], ...]
    static_rest: Pred
    dynamic_eq: tuple[tuple[int, int], ...]
    dynamic_rest: Pred
    dur_bound: int | None = None  # dur_upper_bound of the whole predicate

    @property
    def static(self) -> Pred:
        """Every static conjunct."""
        return tuple(Cmp("=", E(j), Lit(c)) for j, c in self.static_eq) + self.static_rest

    @property
    def dynamic(self) -> Pred:
        """Every dynamic conjunct."""
        return tuple(Cmp("=", E(j), I(i)) for j, i in self.dynamic_eq) + self.dynamic_rest


def _equality(node: IR) -> tuple[E, IR] | None:
    if isinstance(node, Cmp) and node.op == "=":
        if isinstance(node.left, E) and isinstance(node.right, Lit | I):
            return node.left, node.right
        if isinstance(node.right, E) and isinstance(node.left, Lit | I):
            return node.right, node.left
    return None


_SPLIT: weakref.WeakValueDictionary[tuple[IR, ...], Parts] = weakref.WeakValueDictionary()


def split(pred: Sequence[IR]) -> Parts:
    """Sort a predicate's conjuncts into the four components of thesis 4.4.3.

    Equal predicates share one result while some edge or state holds it.

    >>> parts = split((Cmp("=", E(0), Lit(1)), Cmp("=", E(0), Lit(2))))
    >>> parts.static_eq, [str(c) for c in parts.static_rest]
    (((0, 1),), ['E0 = 2'])
    """
    key = tuple(pred)
    found = _SPLIT.get(key)
    if found is None:
        found = _SPLIT[key] = _split(key)
    return found


def _split(pred: tuple[IR, ...]) -> Parts:
    static_eq: list[tuple[int, Value]] = []
    dynamic_eq: list[tuple[int, int]] = []
    static_rest: list[IR] = []
    dynamic_rest: list[IR] = []
    fixed: set[int] = set()
    bound: int | None = None
    for item in conjuncts(pred):
        role, j, other, limit = _role(item)
        if role == _STATIC_EQ and j not in fixed:
            # a second constant for the same attribute stays an ordinary test
            fixed.add(j)
            static_eq.append((j, other))
        elif role == _DYNAMIC_EQ:
            dynamic_eq.append((j, other))
        elif role == _DYNAMIC:
            dynamic_rest.append(item)
        else:
            static_rest.append(item)
        if limit is not None:
            bound = limit if bound is None else min(bound, limit)
    return Parts(
        tuple(static_eq), tuple(static_rest), tuple(dynamic_eq), tuple(dynamic_rest), bound
    )


_STATIC_EQ, _DYNAMIC_EQ, _STATIC, _DYNAMIC = range(4)


def _role(item: IR) -> tuple[int, int, Any, int | None]:
    """What ``split`` does with one conjunct: (role, event position, constant or
    instance position, its composite DUR bound); a pure function of the node,
    remembered on it (thousands of edges share their interned conjuncts)."""
    try:
        return item.__dict__["_role"]  # type: ignore[no-any-return]
    except KeyError:
        pass
    role: tuple[int, int, Any, int | None]
    eq = _equality(item)
    if eq is not None and isinstance(eq[1], Lit) and eq[1].value is not None:
        if not isinstance(eq[1].value, bool):
            role = (_STATIC_EQ, eq[0].index, eq[1].value, None)
        else:
            role = (_STATIC, -1, None, None)
    elif eq is not None and isinstance(eq[1], I):
        role = (_DYNAMIC_EQ, eq[0].index, eq[1].index, None)
    else:
        limit = None
        if isinstance(item, DurCmp) and not item.of_event and item.op in ("<", "<=", "="):
            limit = item.micros - 1 if item.op == "<" else item.micros
        role = (_STATIC if is_static(item) else _DYNAMIC, -1, None, limit)
    object.__setattr__(item, "_role", role)
    return role


def text(node: IR) -> str:
    """``str(node)``, remembered on the node (``canonical`` sorts conjuncts by it)."""
    try:
        return node.__dict__["_text"]  # type: ignore[no-any-return]
    except KeyError:
        found = str(node)
        object.__setattr__(node, "_text", found)
        return found


def dur_upper_bound(pred: Sequence[IR]) -> int | None:
    """The largest composite DUR (microseconds) a predicate allows, None if unbounded.

    Only top-level conjuncts ``DUR < c``, ``DUR <= c`` and ``DUR = c`` on the
    composite bound it (thesis 4.4.5: an instance past every bound of its
    state's edges can no longer complete).

    >>> dur_upper_bound((DurCmp("<=", 10, False), DurCmp("<", 8, False)))
    7
    >>> dur_upper_bound((DurCmp(">", 10, False),)) is None
    True
    """
    bounds = [
        item.micros - 1 if item.op == "<" else item.micros
        for item in conjuncts(pred)
        if isinstance(item, DurCmp) and not item.of_event and item.op in ("<", "<=", "=")
    ]
    return min(bounds) if bounds else None


def signature(equalities: tuple[tuple[int, Any], ...]) -> tuple[tuple[int, ...], tuple[Any, ...]]:
    """The positions and constants of ``event.a = constant`` conjuncts, by position.

    >>> signature(((3, "x"), (1, 5)))
    ((1, 3), (5, 'x'))
    """
    ordered = sorted(dict(equalities).items())
    return tuple(p for p, _ in ordered), tuple(c for _, c in ordered)


def probe_keys(positions: tuple[int, ...], values: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """The event's values at ``positions`` as a lookup key (None if one is null)."""
    key = tuple(values[p] for p in positions)
    return None if None in key else key
