"""Document envelopes (spec section 4): timestamps, JSONL read/write, dead letters."""

from __future__ import annotations

import io
import json
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.profiles import examples
from xscl.connectors.dead_letters import DeadLetter
from xscl.connectors.document import (
    Document,
    format_ts,
    parse_envelope,
    parse_ts,
    read_envelope_file,
    read_envelopes,
    write_envelopes,
)
from xscl.errors import ConnectorError


@pytest.mark.parametrize(
    ("text", "micros"),
    [
        ("1970-01-01T00:00:00Z", 0),
        ("2006-06-01T10:00:00Z", 1_149_156_000_000_000),
        ("2006-06-01 10:00:00", 1_149_156_000_000_000),  # no offset = UTC
        ("2006-06-01T12:00:00+02:00", 1_149_156_000_000_000),
        ("2006-06-01T10:00:00.1234569Z", 1_149_156_000_123_456),  # truncated, not rounded
        ("1969-12-31T23:59:59.9999999Z", -1),
        ("2016-12-31T23:59:60Z", 1_483_228_799_999_999),  # leap second folded
    ],
)
def test_parse_rfc3339(text: str, micros: int) -> None:
    assert parse_ts(text) == micros


@pytest.mark.parametrize(
    ("value", "micros"),
    [(0, 0), (1, 1_000_000), (Decimal("1.0000019"), 1_000_001), (Decimal("-0.0000001"), -1)],
)
def test_parse_numbers(value: object, micros: int) -> None:
    assert parse_ts(value) == micros


@pytest.mark.parametrize(
    "value",
    [
        "yesterday",
        "2006-13-01T00:00:00Z",
        "2006-06-01T10:00Z",
        True,
        None,
        "2006-06-01T10:00:00+25:00",
        Decimal("1e30"),
        "NaN",
    ],
)
def test_bad_timestamps(value: object) -> None:
    with pytest.raises(ConnectorError) as info:
        parse_ts(value, source="f", line=3)
    assert info.value.code == "XSCL-C003"
    assert "f:3" in str(info.value)


@examples(200)
@given(st.integers(min_value=-62_135_596_800_000_000, max_value=253_402_300_799_999_999))
def test_format_parse_round_trip(micros: int) -> None:
    assert parse_ts(format_ts(micros)) == micros


def test_envelope_round_trip() -> None:
    docs = [
        Document("S", "d1", 1_149_156_000_000_001, "<book>é</book>"),
        Document("news.en", "d2", 0, "<a/>", "http://x/feed", {"form": "raw"}),
    ]
    out = io.StringIO()
    assert write_envelopes(docs, out) == 2
    first = json.loads(out.getvalue().splitlines()[0])
    assert first == {
        "stream": "S",
        "docid": "d1",
        "ts": "2006-06-01T10:00:00.000001Z",
        "xml": "<book>é</book>",
    }
    assert list(read_envelopes(out.getvalue().splitlines())) == docs


def test_spec_example_and_numeric_ts() -> None:
    line = '{"stream": "S", "docid": "d1", "ts": "2006-06-01T10:00:00Z", "xml": "<book>...</book>"}'
    assert parse_envelope(line).ts_micros == 1_149_156_000_000_000
    assert parse_envelope('{"stream":"S","docid":7,"ts":1.5,"xml":"<a/>"}') == Document(
        "S", "7", 1_500_000, "<a/>"
    )


@pytest.mark.parametrize(
    ("line", "code"),
    [
        ("not json", "XSCL-C001"),
        ("[1, 2]", "XSCL-C001"),
        ('{"stream": "S", "docid": "d", "xml": "<a/>"}', "XSCL-C002"),
        ('{"stream": "S", "docid": "", "ts": 0, "xml": "<a/>"}', "XSCL-C002"),
        ('{"stream": "S", "docid": "d", "ts": 0, "xml": 5}', "XSCL-C002"),
        ('{"stream": "1bad", "docid": "d", "ts": 0, "xml": "<a/>"}', "XSCL-C004"),
        ('{"stream": "S", "docid": "d", "ts": "soon", "xml": "<a/>"}', "XSCL-C003"),
        ('{"stream": "S", "docid": "d", "ts": NaN, "xml": "<a/>"}', "XSCL-C001"),
    ],
)
def test_bad_envelopes(line: str, code: str) -> None:
    with pytest.raises(ConnectorError) as info:
        parse_envelope(line)
    assert info.value.code == code
    assert isinstance(info.value, ValueError)


def test_bad_lines_become_dead_letters_and_reading_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "docs.jsonl"
    good = '{"stream":"S","docid":"d1","ts":0,"xml":"<a/>"}\n'
    bad_ts = '{"stream":"S","docid":"d2","ts":"x","xml":"<a/>"}\n'
    path.write_bytes(
        good.encode() + b"\n" + bad_ts.encode() + b'{"xml": "\xff\xfe"}\n' + good.encode()
    )
    items = list(read_envelope_file(path))
    assert [type(i).__name__ for i in items] == ["Document", "DeadLetter", "DeadLetter", "Document"]
    letter = items[1]
    assert isinstance(letter, DeadLetter)
    assert letter.to_dict() == {
        "source": str(path),
        "line": 3,
        "stream": "S",
        "docid": "d2",
        "reason": letter.reason,
        "code": "XSCL-C003",
    }
    assert isinstance(items[2], DeadLetter) and items[2].line == 4 and items[2].code == "XSCL-C001"
    assert json.loads(letter.to_json())["code"] == "XSCL-C003"
