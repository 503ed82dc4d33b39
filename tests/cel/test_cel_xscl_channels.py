"""XSCL result channel lines into CEL channel tuples (events.from_xscl, Hong 2009 §5.3.2):
one match that is a result of queries PUBLISHing different streams of one schema is one
``ChannelEvent``; engines declaring the catalog's channels give every CEL query the
results of the per-record events (``result_event``), and the reference's."""

from __future__ import annotations

import json
import random
from pathlib import Path

from xscl.events.channels import ChannelEvent
from xscl.events.engine import Engine
from xscl.events.envelope import Event
from xscl.events.from_xscl import line_events, result_event, xscl_catalog, xscl_channels
from xscl.events.reference import evaluate
from xscl.lang.cel.parser import parse_file
from xscl.lang.cel.validation import validate
from xscl.lang.parser import parse_file as parse_xscl
from xscl.results.channels import channel_line
from xscl.results.read import part_lines, part_records

XSCL = """
A: SELECT t FROM S//item[./author->a][./title->t] JOIN{a = b, 1h} S//item[./author->b] PUBLISH P1;
B: SELECT t FROM S//item[./author->a][./title->t] JOIN{a = b, 1h} S//item[./author->b] PUBLISH P2;
C: SELECT t FROM S//item[./author->a][./title->t] JOIN{a = b, 1h} S//item[./author->b] PUBLISH P3;
D: SELECT t FROM S//item[./author->a][./title->t] JOIN{a = b, 1h} S//item[./author->b]
"""
STREAMS = {"A": "P1", "B": "P2", "C": "P3"}
CEL = """
one: FROM P1 NEXT{$2.a = $1.a AND DUR <= 2h} P2;
two: FROM P2 NEXT{$2.a = $1.a AND DUR <= 2h} P3;
three: FROM FILTER{t != 'x'}(P3) NEXT{DUR <= 1h} P1;
both: FROM (P1 UNION P3) NEXT{$2.t = $1.t} P2
"""


def ts(minute: int) -> str:
    return f"2024-01-01T{10 + minute // 60:02d}:{minute % 60:02d}:00Z"


def part(tmp: Path, rng: random.Random) -> Path:
    """A part file of channel lines (random members) and plain lines."""
    lines = []
    for n in range(60):
        minute = 3 * n
        docs = f'[{{"stream":"S","docid":"d{n}","ts":"{ts(minute)}"}}]'
        author = rng.choice(["ann", "bob"])
        values = f'{{"a":"{author}","b":"{author}"}}'
        title = rng.choice(["x", "y"])
        body = f'<var name="t">{title}</var>'
        queries = [q for q in "ABCD" if rng.random() < 0.6] or ["A"]
        if len(queries) == 1:
            q = queries[0]
            record = {
                "query": q,
                "result_id": f"r{n}{q}",
                "docs": json.loads(docs),
                "nodes": {},
                "values": json.loads(values),
                "xml": f'<result query="{q}">{body}</result>',
            }
            lines.append(json.dumps(record) + "\n")
            continue
        members = [(q, f"r{n}{q}") for q in queries]
        lines.append(channel_line(members, docs, "{}", values, body).decode("utf-8"))
    file = tmp / "part-0.jsonl"
    file.write_text("".join(lines), encoding="utf-8")
    return file


def test_channel_lines_are_channel_tuples_with_the_records_results(tmp_path: Path) -> None:
    queries = list(parse_xscl(XSCL).queries)
    catalog = xscl_catalog(queries)
    assert xscl_channels(catalog) == {"xscl:P1": (("a", "b", "t"), ("P1", "P2", "P3"))}
    program, errors = validate(parse_file(CEL), catalog=catalog)
    assert not errors
    file = part(tmp_path, random.Random(4))
    per_record = [
        result_event(r, STREAMS[r["query"]]) for r in part_records(file) if r["query"] in STREAMS
    ]
    tuples = [e for records in part_lines(file) for e in line_events(records, STREAMS)]
    assert any(isinstance(e, ChannelEvent) and len(e.streams) > 1 for e in tuples)
    decoded = [d for e in tuples for d in (e.decode() if isinstance(e, ChannelEvent) else [e])]
    assert sorted(map(repr, decoded)) == sorted(map(repr, per_record))

    engine = Engine()
    for name, (schema, streams) in xscl_channels(catalog).items():
        engine.declare_channel(name, schema, streams)
    engine.subscribe(program)
    expected = evaluate(program, per_record)
    assert engine.run(tuples) == expected
    plain = Engine()
    plain.subscribe(program)
    assert plain.run(per_record) == expected
    assert {r.query for r in expected} == {"one", "two", "three", "both"}


def test_a_single_stream_line_stays_a_plain_event() -> None:
    record = {
        "query": "A",
        "values": {"a": "ann", "b": "ann"},
        "docs": [{"stream": "S", "docid": "1", "ts": ts(0)}],
        "xml": '<result query="A"><var name="t">y</var></result>',
    }
    (event,) = line_events([record, dict(record, query="D")], STREAMS)
    assert isinstance(event, Event) and event.stream == "P1"
