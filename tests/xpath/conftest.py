"""Shared fixtures for the Stage 1 tests: the naive per-definition oracle.

The oracle evaluates each definition on its own with ONE lxml ``.xpath()``
call: the definition is translated to XPath 1.0 with ``local-name()`` tests,
literal comparisons go through an extension function (NFC + strip, numbers),
and function predicates through elementpath on the context node.  It shares
no code with ``xscl.xpath`` beyond the AST.
"""

from __future__ import annotations

import re
import unicodedata
from decimal import Decimal
from pathlib import Path
from typing import Any

import elementpath
import pytest
from lxml import etree

from xscl.lang.ast import (
    ComparisonPredicate,
    FunctionPredicate,
    NodeTest,
    NumberLiteral,
    PathPredicate,
    Predicate,
    Step,
)
from xscl.lang.normal_form.model import VarDef

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"

#: Function predicates the tests use, with the oracle's own local-name form.
FUNCTIONS: dict[str, str] = {
    "contains(title, 'a')": "contains(*:title, 'a')",
    "count(*) > 1": "count(*) > 1",
    "starts-with(@id, '1')": "starts-with(@*:id, '1')",
    "exists(b)": "exists(*:b)",
    "string-length(.) > 3": "string-length(.) > 3",
    "lower-case(string(a)) = 'x'": "lower-case(string(*:a)) = 'x'",
    "2": "2",
    "0": "0",
    "matches(string(.), '^[0-9]+$')": "matches(string(.), '^[0-9]+$')",
    "1 div 'a'": "1 div 'a'",
}

_NS = "urn:xscl-oracle"
# spec 3.1: the xs:double lexical space minus NaN, ASCII digits only
_NUMBER = re.compile(r"[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|INF)\Z")


def _norm(raw: str) -> str:
    return unicodedata.normalize("NFC", raw).strip(" \t\r\n")


def _node_string(node: Any) -> str:
    if isinstance(node, etree._Element):
        return str(node.xpath("string()"))
    return str(node)


def _compare(value: str, op: str, kind: str, literal: str) -> bool:
    left: Any
    right: Any
    if kind == "n":
        if not _NUMBER.match(value):
            return False
        left, right = Decimal(value.replace("INF", "Infinity")), Decimal(literal)
    else:
        left, right = value, literal
    outcome: bool = {
        "=": left == right,
        "!=": left != right,
        "<": left < right,
        "<=": left <= right,
        ">": left > right,
        ">=": left >= right,
    }[op]
    return outcome


def _ext_cmp(_context: Any, nodes: Any, op: str, kind: str, literal: str) -> bool:
    return any(_compare(_norm(_node_string(n)), op, kind, literal) for n in nodes)


def _ext_fn(context: Any, expression: str) -> bool:
    node = context.context_node
    try:
        ctx = elementpath.XPathContext(root=node.getroottree(), item=node)
        token = elementpath.XPath2Parser().parse(expression)
        return bool(token.boolean_value(token.evaluate(ctx)))
    except Exception:
        return False


_functions = etree.FunctionNamespace(_NS)
_functions["cmp"] = _ext_cmp
_functions["fn"] = _ext_fn


def _quote(text: str) -> str:
    if "'" not in text:
        return f"'{text}'"
    if '"' not in text:
        return f'"{text}"'
    return "concat(" + ', "\'", '.join(f"'{part}'" for part in text.split("'")) + ")"


def _test(test: NodeTest) -> str:
    if test.kind == "text":
        return "text()"
    if test.kind == "wildcard":
        return "*"
    cond = f"local-name()={_quote(test.local or '')}"
    if test.prefix is not None:
        cond += f" and namespace-uri()={_quote(test.prefix[1:-1])}"
    return ("@*" if test.kind == "attribute" else "*") + f"[{cond}]"


def _predicate(predicate: Predicate) -> str:
    if isinstance(predicate, PathPredicate):
        return "[" + _relative(predicate.path.steps) + "]"
    if isinstance(predicate, ComparisonPredicate):
        kind = "n" if isinstance(predicate.literal, NumberLiteral) else "s"
        literal = str(predicate.literal.value)
        rel = _relative(predicate.path.steps)
        return f"[o:cmp({rel}, '{predicate.op}', '{kind}', {_quote(literal)})]"
    assert isinstance(predicate, FunctionPredicate)
    return f"[o:fn({_quote(FUNCTIONS[predicate.expression])})]"


def _steps(steps: tuple[Step, ...]) -> str:
    return "".join(
        step.axis + _test(step.test) + "".join(_predicate(p) for p in step.predicates)
        for step in steps
    )


def _relative(steps: tuple[Step, ...]) -> str:
    return "." + _steps(steps)


def absolute_xpath(definition: VarDef) -> str:
    """The one XPath 1.0 expression the oracle evaluates for ``definition``."""
    return _steps(definition.path.steps) if definition.path.steps else "/*"


class Oracle:
    """Per-definition evaluation of one document with lxml, node ids per spec section 1."""

    def __init__(self, xml: bytes) -> None:
        parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
        self.root = etree.fromstring(xml, parser)
        self.index = {el: i for i, el in enumerate(self.root.iter(etree.Element))}

    def _id(self, node: Any) -> str:
        if isinstance(node, etree._Element):
            return str(self.index[node])
        if node.is_attribute:
            owner = node.getparent()
            names = list(owner.attrib.keys())
            position = names.index(node.attrname) + 1
            return f"{self.index[owner]}/@{owner.xpath(f'name(@*[{position}])')}"
        owner = node.getparent()
        parent = owner.getparent() if node.is_tail else owner
        for k, text in enumerate(parent.xpath("text()"), start=1):
            if text.getparent() is owner and text.is_tail == node.is_tail:
                return f"{self.index[parent]}/text()[{k}]"
        raise AssertionError("text node not found")

    def _select(self, context: Any, expression: str) -> list[Any]:
        return list(context.xpath(expression, namespaces={"o": _NS}))

    def nodes(self, definition: VarDef) -> dict[str, str]:
        """node id -> normalised string value."""
        found = self._select(self.root.getroottree(), absolute_xpath(definition))
        return {self._id(n): _norm(_node_string(n)) for n in found}

    def pairs(self, parent: VarDef, child: VarDef) -> set[tuple[str, str]]:
        p_steps = parent.path.steps
        extra = child.path.steps[len(p_steps) :]
        if not p_steps:
            return {("0", n) for n in self.nodes(child)}
        out: set[tuple[str, str]] = set()
        for n1 in self._select(self.root.getroottree(), absolute_xpath(parent)):
            if not isinstance(n1, etree._Element):
                continue
            for n2 in self._select(n1, _relative(extra)):
                out.add((self._id(n1), self._id(n2)))
        return out


@pytest.fixture(scope="session")
def oracle_class() -> type[Oracle]:
    return Oracle


@pytest.fixture(scope="session")
def function_table() -> dict[str, str]:
    return FUNCTIONS


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not DATA.is_dir():
        pytest.skip(f"shared test data not found at {DATA} (../shared/data from the repo root)")
    return DATA
