"""Loader of the hand-written evaluation fixtures in ``fixtures/eval`` (one file each).

A fixture has four sections, each opened by a line ``== NAME``: ``about`` (what it
tests and the hand check of its expected results), ``queries`` (a CEL file),
``events`` (event envelopes, docs/cel.md 5.1) and ``expect`` (result records of
docs/cel.md 5.2 without ``id``: exactly the results every evaluator must give).
Import as ``from tests.cel.fixtures_eval import FIXTURES, load``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from xscl.connectors.document import parse_ts
from xscl.events.envelope import Event, parse_event
from xscl.events.results import Result
from xscl.lang.cel.parser import parse_file
from xscl.lang.cel.validation import Program, validate

FIXTURES = sorted((Path(__file__).parent / "fixtures" / "eval").glob("*.fixture"))


@dataclass(frozen=True)
class Fixture:
    """One fixture: its program, its events in file order and its expected results."""

    name: str
    about: str
    program: Program
    events: tuple[Event, ...]
    expected: frozenset[Result]


def load(path: Path) -> Fixture:
    """Read and check one fixture file (its queries must be valid)."""
    sections: dict[str, list[str]] = {}
    current: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("== "):
            current = sections.setdefault(line[3:].strip(), [])
        else:
            current.append(line)
    assert set(sections) == {"about", "queries", "events", "expect"}, path.name
    text = "\n".join(sections["queries"])
    parsed = parse_file(text, source=path.name)
    program, errors = validate(parsed, text=text)
    assert parsed.ok and not errors, [str(e) for e in (*parsed.errors, *errors)]
    events = tuple(parse_event(line) for line in sections["events"] if line.strip())
    expected = frozenset(_result(json.loads(line)) for line in sections["expect"] if line.strip())
    return Fixture(path.stem, "\n".join(sections["about"]), program, events, expected)


def _result(record: dict[str, object]) -> Result:
    attrs = record["attrs"]
    assert isinstance(attrs, dict)
    return Result(
        str(record["query"]),
        record["stream"] if isinstance(record["stream"], str) else None,
        parse_ts(record["start"]),
        parse_ts(record["end"]),
        tuple(attrs.items()),
    )
