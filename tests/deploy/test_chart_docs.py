"""values.yaml documents every value (helm-docs' ``# --`` comments), and the chart's README
carries the table those comments make (as helm-docs would write it).

The table is made here from values.yaml; when the test fails it prints the table to paste
between the README's markers.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import yaml

from tests.deploy.chartkit import CHART

VALUES_TEXT = (CHART / "values.yaml").read_text()
VALUES: dict[str, Any] = yaml.safe_load(VALUES_TEXT)
BEGIN, END = "<!-- values table: begin -->", "<!-- values table: end -->"
_KEY = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z0-9_.-]+):")
_DOC = re.compile(r"^ *# -- (?:\((?P<type>\w+)\) )?(?P<text>.*)$")


@dataclass(frozen=True)
class Row:
    key: str
    type: str
    default: str
    description: str


def documented() -> list[Row]:
    """One row per key with a ``# --`` comment on the line above it."""
    rows: list[Row] = []
    path: list[tuple[int, str]] = []
    comment: re.Match[str] | None = None
    for line in VALUES_TEXT.splitlines():
        doc = _DOC.match(line)
        key = _KEY.match(line)
        if doc:
            comment = doc
            continue
        if key is None:
            continue
        indent = len(key.group("indent"))
        path = [(i, k) for i, k in path if i < indent] + [(indent, key.group("key"))]
        if comment is not None:
            names = [k for _, k in path]
            value = _lookup(names)
            rows.append(
                Row(
                    ".".join(names),
                    comment.group("type") or _type(value),
                    f"`{json.dumps(value)}`",
                    comment.group("text"),
                )
            )
        comment = None
    return rows


def _lookup(names: list[str]) -> Any:
    node: Any = VALUES
    for name in names:
        node = node[name]
    return node


def _type(value: Any) -> str:
    kinds = {bool: "bool", int: "int", float: "float", str: "string", list: "list", dict: "object"}
    return kinds.get(type(value), "null")


def table() -> str:
    lines = ["| Key | Type | Default | Description |", "|-----|------|---------|-------------|"]
    lines += [f"| {r.key} | {r.type} | {r.default} | {r.description} |" for r in documented()]
    return "\n".join(lines)


def _leaves(node: Any, prefix: str = "") -> list[str]:
    if isinstance(node, dict) and node:
        return [leaf for k, v in node.items() for leaf in _leaves(v, f"{prefix}{k}.")]
    return [prefix.rstrip(".")]


def test_every_value_is_documented() -> None:
    keys = {row.key for row in documented()}
    undocumented = [
        leaf
        for leaf in _leaves(VALUES)
        if not any(leaf == key or leaf.startswith(key + ".") for key in keys)
    ]
    assert undocumented == []


def test_documented_nulls_say_their_type() -> None:
    assert [row.key for row in documented() if row.type == "null"] == []


def test_the_readme_has_the_values_table() -> None:
    readme = (CHART / "README.md").read_text()
    assert BEGIN in readme and END in readme
    current = readme.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    assert current == table(), f"paste between the markers of {CHART}/README.md:\n{table()}"
