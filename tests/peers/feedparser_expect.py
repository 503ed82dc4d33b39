"""feedparser's test files (``Expect:`` lines) as an oracle, for feedparser and for us.

Each file of feedparser's ``tests/`` starts with a comment holding ``Description:`` and
``Expect:``, a Python expression over feedparser's result. ``safe_eval`` evaluates one
safely: it is parsed with ``ast`` and only comparisons, boolean logic, subscripts,
literals, ``len`` and ``has_key``/``get``/``keys`` calls and non-underscore attributes
(feedparser's dicts map attributes to keys) over the result's own fields are allowed.

``as_feedparser`` shows our normalized items (docs/language.md) in feedparser's shape,
holding only what the normalized item holds: per entry ``title``, ``link``, ``id``,
``author``/``authors``, ``tags``, ``summary``, ``content``, ``published_parsed``,
``updated_parsed``; the feed's ``title`` and ``link``; ``bozo`` and ``version`` (which
``xscl poll`` records with each document). An expectation about
anything else raises ``KeyError`` or ``AttributeError``: it is not about the
normalized item.
"""

from __future__ import annotations

import ast
import calendar
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from feedparser import FeedParserDict
from lxml import etree

_ALLOWED = (
    ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub,
    ast.Compare, ast.Eq, ast.NotEq, ast.In, ast.NotIn, ast.Is, ast.IsNot, ast.Lt,
    ast.LtE, ast.Gt, ast.GtE, ast.Subscript, ast.Slice, ast.Name, ast.Load,
    ast.Constant, ast.Tuple, ast.List, ast.Dict, ast.Call, ast.Attribute,
)  # fmt: skip
_METHODS = {"has_key", "get", "keys"}


def safe_eval(expression: str, result: Any) -> bool:
    """Evaluate a feedparser ``Expect:`` expression against ``result`` only."""
    tree = ast.parse(expression.strip(), mode="eval")
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED):
            raise ValueError(f"disallowed syntax {type(node).__name__} in {expression!r}")
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            raise ValueError(f"disallowed attribute {node.attr!r}")
        if isinstance(node, ast.Call) and not (
            (isinstance(node.func, ast.Attribute) and node.func.attr in _METHODS)
            or (isinstance(node.func, ast.Name) and node.func.id == "len")
        ):
            raise ValueError("only len() and result methods may be called")
    names = dict(result)
    names["len"] = len
    return bool(eval(compile(tree, "<expect>", "eval"), {"__builtins__": {}}, names))


def expectation(path: Path) -> str:
    """The ``Expect:`` expression of a feedparser test file."""
    text = path.read_bytes().decode("utf-8", errors="replace")
    match = re.search(r"Expect:\s*(.*?)\n-->", text, re.S)
    assert match, f"{path} has no Expect:"
    return match.group(1)


def _parsed(value: str) -> time.struct_time | None:
    """feedparser's ``*_parsed`` (a UTC ``struct_time``, no daylight saving flag)."""
    if not value:
        return None
    return time.gmtime(calendar.timegm(time.strptime(value, "%Y-%m-%dT%H:%M:%SZ")))


def as_feedparser(items: Sequence[dict[str, Any]], result: Any) -> FeedParserDict:
    """Our normalized items (``tests/peers/feeds.normalized_items``) in feedparser's shape."""
    entries = []
    for item in items:
        entry = FeedParserDict()
        for name in ("title", "link", "id", "summary"):
            if item[name]:
                entry[name] = item[name]
        if item["authors"]:
            entry["author"] = item["authors"][0]
            entry["authors"] = [FeedParserDict(name=a) for a in item["authors"]]
        if item["categories"]:
            entry["tags"] = [FeedParserDict(term=c) for c in item["categories"]]
        if item["content"]:
            entry["content"] = [FeedParserDict(value=item["content"])]
        for name in ("published", "updated"):
            if item[name]:
                entry[f"{name}_parsed"] = _parsed(item[name])
        entries.append(entry)
    feed = FeedParserDict()
    if result.documents:  # every normalized item repeats its channel's title and link
        channel = etree.fromstring(result.documents[0].xml).find("channel")
        for name in ("title", "link"):
            value = channel.findtext(name) if channel is not None else None
            if value:
                feed[name] = value
    return FeedParserDict(
        bozo=int(result.bozo), version=result.version, entries=entries, feed=feed
    )
