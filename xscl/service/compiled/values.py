"""Normal forms, query ASTs and templates as JSON text: one cell of the compiled table.

A compiled subscription is stored as columns of JSON text (``table``); each cell
is one value of the frozen dataclasses the engines consume (AST blocks and join
operators, normal-form blocks with their variable definitions, templates). A
dataclass becomes an object with its class name under ``"@"`` and its fields by
name; tuples become arrays; a ``Decimal`` (window amounts, number literals)
becomes ``{"@": "Decimal", "v": "1.5"}``. Fields that take no part in equality
(source positions, ``Span``) are not written: a decoded value equals the original.
Only the classes in ``CLASSES`` are decoded, so a compiled table never runs code.

A variable definition inside another value is written as its own text (an object
``{"@": "=", "text": ...}``), so the decoder builds each distinct definition once and
every value that holds it shares the one object, as normalisation's own do.

Text is stable (keys in field order, no spaces), so equal values give equal cells:
Parquet's dictionary encoding stores each distinct cell once (the definitions
table of a column of variable definitions) and ``Decoder`` builds each distinct
cell once.

>>> from xscl.lang.parser import parse_query
>>> block = parse_query("S//book->b[./price > 10]").blocks[0]
>>> text = encode(block)
>>> text[:60]
'{"@":"Block","stream":"S","steps":[{"@":"Step","axis":"//","'
>>> Decoder().value(text) == block
True
"""

from __future__ import annotations

import json
from dataclasses import fields, is_dataclass
from decimal import Decimal
from typing import Any

from xscl.lang.ast import (
    Block,
    ComparisonPredicate,
    Equality,
    FunctionPredicate,
    JoinOp,
    NodeTest,
    NumberLiteral,
    PathPredicate,
    RelPath,
    Step,
    StringLiteral,
    Window,
)
from xscl.lang.normal_form.model import NormalBlock, NormalEquality, NormalOp, PatternVar, VarDef
from xscl.templates.canonical import Template

__all__ = ["CLASSES", "Decoder", "encode"]

#: The classes a compiled table may hold, by name.
CLASSES: dict[str, type] = {
    cls.__name__: cls
    for cls in (
        Block,
        Step,
        NodeTest,
        RelPath,
        PathPredicate,
        ComparisonPredicate,
        FunctionPredicate,
        StringLiteral,
        NumberLiteral,
        Window,
        JoinOp,
        Equality,
        VarDef,
        PatternVar,
        NormalBlock,
        NormalOp,
        NormalEquality,
        Template,
    )
}


def encode(value: object) -> str:
    """``value`` (a dataclass of ``CLASSES``, a tuple of them, or plain data) as JSON text."""
    return json.dumps(_plain(value, top=True), ensure_ascii=False, separators=(",", ":"))


def _plain(value: object, top: bool = False) -> Any:
    if isinstance(value, tuple | list):
        return [_plain(v, top) for v in value]
    if isinstance(value, VarDef) and not top:
        return {"@": "=", "text": encode(value)}
    if isinstance(value, Decimal):
        return {"@": "Decimal", "v": str(value)}
    if is_dataclass(value) and not isinstance(value, type):
        name = type(value).__name__
        if CLASSES.get(name) is not type(value):
            raise TypeError(f"{name} is not a compiled-table class")
        out: dict[str, Any] = {"@": name}
        for f in fields(value):
            if f.compare:
                out[f.name] = _plain(getattr(value, f.name))
        return out
    if value is None or isinstance(value, str | int | bool):
        return value
    raise TypeError(f"cannot encode {type(value).__name__}")


class Decoder:
    """Decodes cells, each distinct text once (a compiled table repeats them a lot);
    with a ``limit``, it forgets them all once it knows that many."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit
        self._known: dict[str, Any] = {}
        self._tuples: dict[tuple[str, ...], tuple[Any, ...]] = {}

    def value(self, text: str) -> Any:
        """The value ``text`` encodes (the same object for the same text while it is
        remembered)."""
        known = self._known.get(text)
        if known is None:
            known = _tuples(json.loads(text, object_hook=self._object))
            if self.limit is not None and len(self._known) >= self.limit:
                self._known.clear()
                self._tuples.clear()
            self._known[text] = known
        return known

    def values(self, texts: list[str]) -> tuple[Any, ...]:
        """A tuple of the cells' values (the same tuple for the same texts)."""
        key = tuple(texts)
        known = self._tuples.get(key)
        if known is None:
            known = tuple(self.value(t) for t in key)
            self._tuples[key] = known
        return known

    def _object(self, plain: dict[str, Any]) -> Any:
        """One JSON object as its value (its members are decoded already)."""
        name = plain.pop("@")
        if name == "=":
            return self.value(plain["text"])
        if name == "Decimal":
            return Decimal(plain["v"])
        cls = CLASSES.get(name)
        if cls is None:
            raise ValueError(f"unknown class {name!r} in a compiled table")
        for key, member in plain.items():
            if type(member) is list:
                plain[key] = _tuples(member)
        return cls(**plain)


def _tuples(plain: Any) -> Any:
    """JSON arrays as tuples, all the way down."""
    if type(plain) is list:
        return tuple(_tuples(v) for v in plain)
    return plain
