"""CEL result records (docs/cel.md section 5.2): one distinct output event of a query.

A ``Result`` is hashable and compares by query, stream, interval and values
(numbers by value, so ``1`` and ``1.0`` are one result), which makes result
sets comparable between the reference evaluator and the engine. Its ``id`` is
deterministic, so sinks can be idempotent.

>>> r = Result("q1", None, 0, 60_000_000, (("Name", "IBM"), ("Price", 91.0)))
>>> r.to_json()
'{"query":"q1","stream":null,"start":"1970-01-01T00:00:00Z","end":"1970-01-01T00:01:00Z","attrs":{"Name":"IBM","Price":91},"id":"..."}'
>>> r == Result("q1", None, 0, 60_000_000, (("Name", "IBM"), ("Price", 91)))
True
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from xscl.connectors.document import format_ts
from xscl.events.envelope import Value

__all__ = ["Result", "ResultChannel", "written_value"]

_EXACT_INTEGERS = 2**53


def written_value(value: Value) -> Value:
    """``value`` as a result writes it: an integral float below 2**53 becomes an int.

    >>> written_value(5.0), written_value(2.5), written_value(1e300) == 1e300
    (5, 2.5, True)
    """
    if isinstance(value, float) and value.is_integer() and abs(value) < _EXACT_INTEGERS:
        return int(value)
    return value


@dataclass(frozen=True)
class Result:
    """One output event of query ``query``, PUBLISHed to ``stream`` (None if unnamed)."""

    query: str
    stream: str | None
    start: int
    end: int
    attrs: tuple[tuple[str, Value], ...]

    @property
    def id(self) -> str:
        """32 hex digits of SHA-256 over the canonical JSON of docs/cel.md 5.2."""
        key = [
            self.query,
            self.stream,
            self.start,
            self.end,
            [[name, written_value(value)] for name, value in self.attrs],
        ]
        text = json.dumps(key, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready record."""
        return {
            "query": self.query,
            "stream": self.stream,
            "start": format_ts(self.start),
            "end": format_ts(self.end),
            "attrs": {name: written_value(value) for name, value in self.attrs},
            "id": self.id,
        }

    def to_json(self) -> str:
        """One JSON Lines record (compact, UTF-8 text)."""
        return json.dumps(self.to_dict(), separators=(",", ":"), ensure_ascii=False)

    def sort_key(self) -> tuple[int, str, str, str]:
        """Order of a written result file: by end time, query, stream, id."""
        return (self.end, self.query, self.stream or "", self.id)


@dataclass(frozen=True)
class ResultChannel:
    """The output events of several queries that share one match: one channel tuple
    with its membership (Hong 2009 §5.4.4, Example 24's channel D: the outputs of
    c_⋈ / c_μ are encoded once, the per-query outputs derived from membership).

    ``members`` are ``(query, stream)`` pairs; every member's result has the same
    interval and attributes.

    >>> shared = ResultChannel((("q1", None), ("q2", "P")), 0, 1, (("a", 1),))
    >>> [(r.query, r.stream) for r in shared.decode()]
    [('q1', None), ('q2', 'P')]
    """

    members: tuple[tuple[str, str | None], ...]
    start: int
    end: int
    attrs: tuple[tuple[str, Value], ...]

    def decode(self) -> list[Result]:
        """The per-query results this tuple stands for."""
        return [Result(q, s, self.start, self.end, self.attrs) for q, s in self.members]
