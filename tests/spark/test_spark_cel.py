"""CEL on Spark: ``xscl cel run --engine spark`` equals the reference (docs/cel.md 10).

One availableNow run per case on the shared session; the cases are the
examples and a few generated keyed and unkeyed workloads (several groups,
resubscription, FOLD aggregates).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.engine_local.test_engine_local_feeds import DATA as FEEDS
from tests.engine_local.test_engine_local_feeds import feed_documents
from tests.spark.cel_events import GENERATED, generated_events
from xscl import reference
from xscl.connectors.spool import Spool
from xscl.events.envelope import Event, read_events
from xscl.events.from_xscl import published_streams, result_event, xscl_catalog
from xscl.events.reference import evaluate
from xscl.lang.cel.parser import parse_file
from xscl.lang.cel.validation import validate
from xscl.lang.parser import parse_queries
from xscl.results.read import read_results
from xscl.spark_plugin.cel.batch import evaluate_on_spark, result_of
from xscl.spark_plugin.submit import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "cel"


def _read(path: Path) -> list[Event]:
    with open(path, encoding="utf-8") as handle:
        return [e for _, e in read_events(handle) if isinstance(e, Event)]


def _check(text: str, events: list[Event]) -> None:
    program, errors = validate(parse_file(text))
    assert not errors
    expected = evaluate(program, events)
    assert evaluate_on_spark(text, events) == expected


@pytest.mark.parametrize("name", ["stocks"])
def test_examples_on_spark_equal_the_reference(spark: object, name: str) -> None:
    _check(
        (EXAMPLES / f"{name}.cel").read_text(encoding="utf-8"), _read(EXAMPLES / f"{name}.jsonl")
    )


def test_generated_workload_on_spark_equals_the_reference(spark: object) -> None:
    events = generated_events(7)
    program, _ = validate(parse_file(GENERATED))
    assert len(evaluate(program, events)) > 10  # the workload finds something
    _check(GENERATED, events)


@pytest.mark.skipif(not FEEDS.is_dir(), reason=f"shared test data not found at {FEEDS}")
def test_xscl_feeds_cel_end_to_end_on_real_feeds(
    spark: Any, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """``xscl serve --once --cel-queries``: XSCL PUBLISHes same-author pairs of real feed
    items, CEL finds three posts within a day; equal to both reference evaluators fed
    the same way (XSCL results -> ``from_xscl`` events -> the CEL reference)."""
    docs = feed_documents(days=2)
    home = tmp_path / "home"
    with Spool(home / "spool", sync=False) as writer:
        writer.append(docs)
    xscl_text = (EXAMPLES / "crosspost.xscl").read_text(encoding="utf-8")
    cel_text = (EXAMPLES / "crosspost.cel").read_text(encoding="utf-8")
    args = [
        "--queries", str(EXAMPLES / "crosspost.xscl"), "--home", str(home), "--once",
        "--quiet", "--cel-queries", str(EXAMPLES / "crosspost.cel"),
    ]  # fmt: skip
    assert main(args) == 0
    queries = list(parse_queries(xscl_text))
    ref_docs = [reference.make_document(d.stream, d.docid, d.ts_micros, d.xml) for d in docs]
    streams = published_streams(queries)
    events = [
        result_event(r.to_json_dict(), streams[r.query])
        for r in reference.evaluate(queries, ref_docs)
    ]
    program, errors = validate(parse_file(cel_text), catalog=xscl_catalog(queries))
    assert not errors
    expected = evaluate(program, events)
    assert {r.query for r in expected} == {"three_posts", "runs"}
    got = [result_of(r) for r in read_results(home / "results" / "xscl.cel", key="id")]
    assert len(got) == len(set(got)) and set(got) == expected
    # tried as a new user (issue 36): the last line also says what the CEL query found
    last = capfd.readouterr().err.strip().splitlines()[-1]
    assert f"; {len(got)} CEL results in {home.resolve() / 'results' / 'xscl.cel'} (" in last
    feeds = home / "results" / "xscl.cel" / "feeds"
    assert {p.name for p in feeds.iterdir()} == {"three_posts.atom", "runs.atom"}
    # issue 36, defect 14: each feed says where readers find it after any restart, and an
    # entry links only what a reader opens (these results carry no URL: no link at all)
    from lxml import etree

    atom = "{http://www.w3.org/2005/Atom}"
    for feed in feeds.iterdir():
        root = etree.fromstring(feed.read_bytes())
        links = [(x.get("rel"), x.get("href")) for x in root.iter(atom + "link")]
        stable = (home.resolve() / "results" / "xscl.cel" / "feeds" / feed.name).as_uri()
        assert links == [("self", stable)], feed.name


def test_xscl_channel_lines_feed_cel_as_channel_tuples(spark: Any, tmp_path: Path) -> None:
    """Three identical XSCL queries PUBLISH three streams of one schema, so each match is
    one channel line (``results.channels``) and one CEL channel tuple (``from_xscl``,
    ``spark_plugin.cel``: a row of several streams, engines declaring the catalog's
    channels); the CEL results equal the reference fed one event per record."""
    from xscl.connectors.document import Document
    from xscl.results.channels import line_members
    from xscl.results.read import visible_markers

    xscl_text = "".join(
        f"{q}: S//item[./a->x] FOLLOWED BY {{x = y, 1d}} S//item[./a->y] PUBLISH {p};\n"
        for q, p in (("qa", "pa"), ("qb", "pb"), ("qc", "pc"))
    )
    cel_text = (
        "one: FROM pa NEXT{$2.x = $1.x AND DUR <= 1h} pb;\n"
        "two: FROM (pa UNION pc) NEXT{$2.x = $1.x} pb;\n"
        "three: FROM FILTER{x != 'v0'}(pc) NEXT pa"
    )
    (tmp_path / "q.xscl").write_text(xscl_text, encoding="utf-8")
    (tmp_path / "q.cel").write_text(cel_text, encoding="utf-8")
    docs = [
        Document("S", f"d{n}", 600_000_000 * (n + 1), f"<item><a>v{n % 3}</a></item>")
        for n in range(24)
    ]
    home = tmp_path / "home"
    with Spool(home / "spool", sync=False) as writer:
        writer.append(docs)
    args = [
        "--queries", str(tmp_path / "q.xscl"), "--home", str(home), "--once", "--quiet",
        "--cel-queries", str(tmp_path / "q.cel"),
    ]  # fmt: skip
    assert main(args) == 0
    shared = [
        members
        for folder, marker in visible_markers(home / "results" / "xscl")
        for part in marker["parts"]
        for line in (folder / part["file"]).read_bytes().splitlines()
        if (members := line_members(line)) is not None
    ]
    assert any(len({q for q, _ in m}) == 3 for m in shared), "no channel line of the three"
    queries = list(parse_queries(xscl_text))
    ref_docs = [reference.make_document(d.stream, d.docid, d.ts_micros, d.xml) for d in docs]
    streams = published_streams(queries)
    events = [
        result_event(r.to_json_dict(), streams[r.query])
        for r in reference.evaluate(queries, ref_docs)
    ]
    program, errors = validate(parse_file(cel_text), catalog=xscl_catalog(queries))
    assert not errors
    # the epoch at the job's clock waits for a later one (docs/cel.md 10.4): --once ends first
    clock = max(e.end for e in events)
    expected = evaluate(program, [e for e in events if e.end < clock])
    assert {r.query for r in expected} == {"one", "two", "three"}
    got = [result_of(r) for r in read_results(home / "results" / "xscl.cel", key="id")]
    assert len(got) == len(set(got)) and set(got) == expected
