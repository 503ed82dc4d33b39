"""Relational events and their JSON Lines envelope (docs/cel.md sections 1 and 5.1).

``{"stream": "Stock", "start": "...", "end": "...", "attrs": {...}}``, one per
line; ``start`` defaults to ``end``; timestamps are RFC 3339 or seconds since the
epoch (the connectors' parser, so CEL and XSCL read time the same way). A bad
line becomes a ``DeadLetter`` with a stable ``CEL-E00x`` code (``xscl.errors``) and
never stops the input.

>>> event = parse_event('{"stream": "Stock", "end": "2007-06-01T09:10:00Z",'
...                     ' "attrs": {"Name": "IBM", "Price": 90}}')
>>> event.start == event.end, event.values(("Name", "Price", "Volume"))
(True, ('IBM', 90, None))
>>> parse_event('{"stream": "S", "end": 1, "attrs": {"ok": true}}')
Traceback (most recent call last):
  ...
xscl.errors.EventError: CEL-E005 attribute 'ok' is true: ...
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from xscl.connectors.dead_letters import DeadLetter
from xscl.connectors.document import STREAM_NAME, format_ts, json_problem, parse_ts
from xscl.errors import EventError

__all__ = [
    "Event",
    "Value",
    "parse_event",
    "read_events",
]

Value = str | int | float | None

@dataclass(frozen=True)
class Event:
    """One relational event: its stream, interval (microseconds) and attribute values."""

    stream: str
    start: int
    end: int
    attrs: Mapping[str, Value]

    def values(self, schema: Sequence[str]) -> tuple[Value, ...]:
        """The values of ``schema``'s attributes in order (null for a missing one)."""
        attrs = self.attrs
        return tuple(attrs.get(name) for name in schema)

    def to_json(self) -> str:
        """The event's envelope line (docs/cel.md 5.1): what ``parse_event`` reads back."""
        body = {
            "stream": self.stream,
            "start": format_ts(self.start),
            "end": format_ts(self.end),
            "attrs": dict(self.attrs),
        }
        return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _value(name: str, value: object) -> Value:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if isinstance(value, float) and not math.isfinite(value):
            raise EventError.from_code("CEL-E005", f"attribute {name!r} is not a finite number")
        return value
    shown = json.dumps(value)[:40]
    raise EventError.from_code("CEL-E005",
        f"attribute {name!r} is {shown}: values are strings, numbers or null",
    )


def parse_event(text: str) -> Event:
    """The event of one envelope line; raises ``EventError`` with a ``CEL-E00x`` code."""
    try:
        record = json.loads(text, parse_constant=_reject_constant)
    except ValueError as exc:
        raise EventError.from_code("CEL-E001", json_problem(exc)) from None
    if not isinstance(record, dict):
        kind = type(record).__name__
        raise EventError.from_code("CEL-E001", f"a JSON {kind} is not an event object")
    stream = record.get("stream")
    if not isinstance(stream, str) or not STREAM_NAME.match(stream):
        raise EventError.from_code("CEL-E002", f"'stream' must be a stream name, not {stream!r}")
    attrs = record.get("attrs")
    if not isinstance(attrs, dict):
        raise EventError.from_code("CEL-E002", "'attrs' must be an object of attribute values")
    if "end" not in record:
        raise EventError.from_code("CEL-E002", "'end' is missing")
    try:
        end = parse_ts(record["end"])
        start = parse_ts(record["start"]) if record.get("start") is not None else end
    except ValueError as exc:
        raise EventError.from_code("CEL-E003", str(getattr(exc, "message", exc))) from None
    if start > end:
        start_end = f"start {record['start']!r} is after end {record['end']!r}"
        raise EventError.from_code("CEL-E004", start_end)
    values = {str(name): _value(name, value) for name, value in attrs.items()}
    return Event(stream, start, end, values)


def read_events(
    lines: Iterable[str], *, source: str | None = None
) -> Iterator[tuple[int, Event | DeadLetter]]:
    """(line number, event) per line of JSON Lines text; a bad line gives its ``DeadLetter``.

    Blank lines are skipped.
    """
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield number, parse_event(line)
        except EventError as exc:
            stream = _stream_of(line)
            yield number, DeadLetter.from_error(exc, source=source, line=number, stream=stream)


def _stream_of(line: str) -> str | None:
    try:
        record = json.loads(line)
    except ValueError:
        return None
    stream = record.get("stream") if isinstance(record, dict) else None
    return stream if isinstance(stream, str) else None
