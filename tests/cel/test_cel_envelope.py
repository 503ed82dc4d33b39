"""Event envelopes and result records (docs/cel.md 5.1, 5.2 and 7.3)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from xscl.connectors.dead_letters import DeadLetter
from xscl.errors import CEL_ERROR_CODES
from xscl.events.envelope import Event, parse_event, read_events
from xscl.events.results import Result

DOC = Path(__file__).resolve().parents[2] / "docs" / "cel.md"

BAD_LINES = [
    ("[1, 2]", "CEL-E001"),
    ('{"stream": "S", "end": 1, "attrs": {}', "CEL-E001"),
    ('{"stream": "S", "end": NaN, "attrs": {}}', "CEL-E001"),
    ('{"end": 1, "attrs": {}}', "CEL-E002"),
    ('{"stream": "1S", "end": 1, "attrs": {}}', "CEL-E002"),
    ('{"stream": "S", "attrs": {}}', "CEL-E002"),
    ('{"stream": "S", "end": 1, "attrs": [1]}', "CEL-E002"),
    ('{"stream": "S", "end": "yesterday", "attrs": {}}', "CEL-E003"),
    ('{"stream": "S", "end": true, "attrs": {}}', "CEL-E003"),
    ('{"stream": "S", "start": "2007-01-01T00:00:02Z", "end": "2007-01-01T00:00:01Z",'
     ' "attrs": {}}', "CEL-E004"),
    ('{"stream": "S", "end": 1, "attrs": {"a": [1]}}', "CEL-E005"),
    ('{"stream": "S", "end": 1, "attrs": {"a": false}}', "CEL-E005"),
    ('{"stream": "S", "end": 1, "attrs": {"a": 1e999}}', "CEL-E005"),
]  # fmt: skip


@pytest.mark.parametrize(("line", "code"), BAD_LINES)
def test_bad_lines_become_coded_dead_letters(line: str, code: str) -> None:
    ((_, dead),) = read_events([line], source="in.jsonl")
    assert isinstance(dead, DeadLetter)
    assert (dead.code, dead.source, dead.line) == (code, "in.jsonl", 1)
    assert dead.reason


def test_a_bad_line_does_not_stop_the_input() -> None:
    lines = [
        '{"stream": "S", "end": 1, "attrs": {}}',
        "oops",
        "",
        '{"stream": "S", "end": 2, "attrs": {}}',
    ]
    kinds = [(n, type(item).__name__) for n, item in read_events(lines)]
    assert kinds == [(1, "Event"), (2, "DeadLetter"), (4, "Event")]


def test_every_input_code_is_documented() -> None:
    documented = set(re.findall(r"^\| (CEL-E\d{3}) \|", DOC.read_text(encoding="utf-8"), re.M))
    assert documented == {code for code in CEL_ERROR_CODES if code.startswith("CEL-E")}


def test_envelope_fields_and_defaults() -> None:
    event = parse_event(
        '{"stream": "feeds.x-1", "start": "2007-06-01T09:10:00+02:00", "end": 1180681800.5,'
        ' "attrs": {"a": "x", "b": 2.5, "c": null}, "query": "ignored"}'
    )
    assert event == Event(
        "feeds.x-1", 1180681800_000000, 1180681800_500000, {"a": "x", "b": 2.5, "c": None}
    )
    assert event.values(("c", "b", "zz")) == (None, 2.5, None)


def test_result_records_are_canonical() -> None:
    a = Result("q", "P", 0, 1, (("n", 3.0), ("s", "é")))
    b = Result("q", "P", 0, 1, (("n", 3), ("s", "é")))
    assert a == b and hash(a) == hash(b) and a.id == b.id
    record = json.loads(a.to_json())
    assert record == {
        "query": "q",
        "stream": "P",
        "start": "1970-01-01T00:00:00Z",
        "end": "1970-01-01T00:00:00.000001Z",
        "attrs": {"n": 3, "s": "é"},
        "id": a.id,
    }
    assert re.fullmatch(r"[0-9a-f]{32}", a.id)
    assert Result("q", None, 0, 1, (("n", 3),)).id != Result("q", "P", 0, 1, (("n", 3),)).id
