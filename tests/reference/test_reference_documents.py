"""Envelopes, timestamps, dead letters and the batch run of the reference evaluator (spec 1, 4)."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from xscl.errors import InvalidQueriesError, TimestampError
from xscl.reference import (
    format_ts,
    parse_ts,
    read_envelopes,
    run_batch,
)


def _line(docid: str, ts: object, xml: str, stream: str = "S") -> str:
    return json.dumps({"stream": stream, "docid": docid, "ts": ts, "xml": xml})


@pytest.mark.parametrize(
    ("text", "micros"),
    [
        ("1970-01-01T00:00:00Z", 0),
        ("1970-01-01T00:00:01.5Z", 1_500_000),
        ("1970-01-01T00:00:00.0000019Z", 1),  # truncated, not rounded
        ("1970-01-01T01:00:00+01:00", 0),
        ("1969-12-31T23:00:00-01:00", 0),
        ("1970-01-01 00:00:02", 2_000_000),  # no offset = UTC
        ("1970-01-01t00:00:03z", 3_000_000),
    ],
)
def test_parse_rfc3339(text: str, micros: int) -> None:
    assert parse_ts(text) == micros


@pytest.mark.parametrize(
    ("value", "micros"),
    [(0, 0), (1, 1_000_000), (Decimal("1.0000019"), 1_000_001), (Decimal("-0.0000005"), -1)],
)
def test_parse_seconds(value: object, micros: int) -> None:
    assert parse_ts(value) == micros


@pytest.mark.parametrize(
    "value",
    ["2006-06-01", "2006-06-01T25:00:00Z", "2006-02-30T00:00:00Z", "23:59:60", "1", True, None],
)
def test_bad_timestamps(value: object) -> None:
    with pytest.raises(TimestampError):
        parse_ts(value)


def test_format_ts() -> None:
    assert format_ts(parse_ts("2006-06-01T10:00:00Z")) == "2006-06-01T10:00:00Z"
    assert format_ts(parse_ts("2006-06-01T10:00:00.00025+00:00")) == "2006-06-01T10:00:00.000250Z"
    assert format_ts(-1) == "1969-12-31T23:59:59.999999Z"


def test_malformed_lines_become_dead_letters_and_reading_continues() -> None:
    lines = [
        _line("ok1", "2006-06-01T10:00:00Z", "<a/>"),
        "not json",
        "[1, 2]",
        json.dumps({"stream": "S", "docid": "x", "ts": 0}),
        _line("bad-ts", "yesterday", "<a/>"),
        _line("bad-xml", 0, "<a><b></a>"),
        _line("bad-stream", 0, "<a/>", stream="9lives"),
        _line("entity", 0, '<!DOCTYPE a [<!ENTITY e SYSTEM "file:///etc/passwd">]><a>&e;</a>'),
        "",
        _line("deep", 0, "<a>" * 300 + "</a>" * 300),
        _line("ok2", 1, "<a/>"),
    ]
    docs, dead = read_envelopes(lines)
    assert [d.docid for d in docs] == ["ok1", "ok2"]  # the entity is never expanded: rejected
    assert [(d.line, d.docid, d.code) for d in dead] == [
        (2, None, "XSCL-C001"),
        (3, None, "XSCL-C001"),
        (4, "x", "XSCL-C002"),
        (5, "bad-ts", "XSCL-C003"),
        (6, "bad-xml", "XSCL-X001"),
        (7, "bad-stream", "XSCL-C004"),
        (8, "entity", "XSCL-X005"),
        (10, "deep", "XSCL-X003"),
    ]
    assert all(d.reason for d in dead)


def test_depth_and_size_limits_are_configurable() -> None:
    lines = [_line("d", 0, "<a><b><c/></b></a>"), _line("big", 0, "<a>" + "x" * 100 + "</a>")]
    docs, dead = read_envelopes(lines, max_depth=2, max_bytes=50)
    assert docs == []
    assert [d.code for d in dead] == ["XSCL-X003", "XSCL-X002"]
    assert "depth 3 exceeds the limit of 2" in dead[0].reason


def test_bad_utf8_line_is_a_dead_letter() -> None:
    docs, dead = read_envelopes([b"\xff\xfe", _line("ok", 0, "<a/>").encode()])
    assert [d.docid for d in docs] == ["ok"]
    assert dead[0].code == "XSCL-C001"


def test_redelivery_first_wins_and_late_documents_are_dead_lettered() -> None:
    lines = [
        _line("d1", 100, "<a>first</a>"),
        _line("d1", 0, "<a>second</a>"),
        _line("d2", 50, "<a/>"),
        _line("d3", 89, "<a/>"),
        _line("d4", 90, "<a/>"),
    ]
    docs, dead = read_envelopes(lines, allowed_lateness_micros=10_000_000)
    assert [(d.docid, d.ts_micros) for d in docs] == [("d1", 100_000_000), ("d4", 90_000_000)]
    assert docs[0].xml == "<a>first</a>"
    assert [(d.docid, d.reason, d.code) for d in dead] == [
        ("d2", "late", "XSCL-R008"),
        ("d3", "late", "XSCL-R008"),
    ]


def test_a_dead_lettered_first_delivery_still_wins() -> None:
    """Spec 1: a re-delivery is ignored whatever became of the first delivery; the
    spool the streaming job reads keeps only the first one too. A line that is not a
    delivery (no valid ``ts``) does not take the docid."""
    lines = [
        _line("d0", 100, "<a/>"),
        _line("late", 0, "<a/>"),
        _line("late", 100, "<a>again, on time</a>"),
        _line("bad", 100, "<a>"),
        _line("bad", 100, "<a>fixed</a>"),
        _line("nots", "yesterday", "<a/>"),
        _line("nots", 100, "<a/>"),
    ]
    docs, dead = read_envelopes(lines, allowed_lateness_micros=10_000_000)
    assert [d.docid for d in docs] == ["d0", "nots"]
    assert [(d.docid, d.code) for d in dead] == [
        ("late", "XSCL-R008"),
        ("bad", "XSCL-X001"),
        ("nots", "XSCL-C003"),
    ]


QUERY_TEXT = "Q1: S/item[a->x] FOLLOWED BY {x=y, 1h} S/item[a->y];"


def test_run_batch_writes_results_and_dead_letters(tmp_path: Path) -> None:
    source = tmp_path / "docs.jsonl"
    source.write_text(
        "\n".join(
            [
                _line("d1", "2006-06-01T10:00:00Z", "<item><a>v</a></item>"),
                "{broken",
                _line("d2", "2006-06-01T10:00:01Z", "<item><a>v</a></item>"),
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    output = tmp_path / "out" / "RESULTS.jsonl"
    summary = run_batch(QUERY_TEXT, source, output)
    assert (summary.documents, summary.dead_letters, summary.results) == (2, 1, 1)
    records = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    assert [r["query"] for r in records] == ["Q1"]
    assert list(records[0]) == ["query", "result_id", "docs", "nodes", "values", "xml"]
    dead = (tmp_path / "out" / "RESULTS.deadletter.jsonl").read_text(encoding="utf-8")
    assert json.loads(dead)["line"] == 2
    assert sorted(p.name for p in output.parent.iterdir()) == [
        "RESULTS.deadletter.jsonl",
        "RESULTS.jsonl",
    ]


def test_run_batch_with_invalid_queries_writes_nothing(tmp_path: Path) -> None:
    source = tmp_path / "docs.jsonl"
    source.write_text(_line("d1", 0, "<a/>") + "\n", encoding="utf-8")
    output = tmp_path / "RESULTS.jsonl"
    with pytest.raises(InvalidQueriesError) as caught:
        run_batch("Q1: S/a->x JOIN {x=zz, 1h} S/b->y; Q2: S/a[", source, output)
    assert len(caught.value.errors) == 2 and caught.value.code == "XSCL-V011"
    assert list(tmp_path.iterdir()) == [source]


def test_run_batch_lateness(tmp_path: Path) -> None:
    source = tmp_path / "docs.jsonl"
    source.write_text(
        "\n".join(
            [
                _line("d2", 3600, "<item><a>v</a></item>"),
                _line("d1", 0, "<item><a>v</a></item>"),
            ]
        ),
        encoding="utf-8",
    )
    output = tmp_path / "r.jsonl"
    assert run_batch(QUERY_TEXT, source, output).results == 1  # unbounded lateness
    summary = run_batch(QUERY_TEXT, source, output, allowed_lateness_micros=60_000_000)
    assert (summary.results, summary.late) == (0, 1)
    assert output.read_text(encoding="utf-8") == ""
