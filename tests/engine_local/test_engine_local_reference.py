"""Set-equality of the local engine with the reference evaluator (spec 3.3, 3.4).

The workloads come from ``tests/workloads.py`` (the generator every engine's
agreement test uses); each test varies what the engine may not depend on:
arrival order, the view cache, queries registered twice under other ids, and the
allowed lateness.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.profiles import examples
from tests.workloads import Workload, reference_records, workloads
from xscl.connectors.document import Document, read_envelopes
from xscl.engine import LocalEngine
from xscl.lang.parser import parse_queries
from xscl.lang.printer import format_query

ROOT = Path(__file__).resolve().parents[2]
LATENESS = st.sampled_from([None, 0, 1_000_000, 2_500_000])
CACHES = [{"view_cache": False}, {"view_cache_max_rows": 2}]


def canonical(records: Sequence[Mapping[str, Any]]) -> set[str]:
    return {json.dumps(r, sort_keys=True) for r in records}


def reference_results(
    text: str, docs: Sequence[Document], lateness: int | None = None
) -> set[str]:
    return canonical(reference_records(text, docs, lateness))


def engine_results(text: str, docs: Sequence[Document], **options: Any) -> set[str]:
    engine = LocalEngine(parse_queries(text), **options)
    return canonical([r.to_json_dict() for r in engine.process(docs)])


@examples(400)
@given(workload=workloads(), lateness=LATENESS)
def test_generated_workloads_equal_reference(workload: Workload, lateness: int | None) -> None:
    expected = reference_results(workload.text, workload.docs, lateness)
    got = engine_results(workload.text, workload.docs, allowed_lateness_micros=lateness)
    assert got == expected


@examples(100)
@given(workload=workloads(), data=st.data())
def test_another_arrival_order_equals_reference(workload: Workload, data: st.DataObject) -> None:
    """Results depend on timestamps, not arrival: any order gives the reference's results
    for that order (re-deliveries: the first delivery wins)."""
    docs = data.draw(st.permutations(workload.docs))
    assert engine_results(workload.text, docs) == reference_results(workload.text, docs)


@examples(100)
@given(workload=workloads(), cache=st.sampled_from(CACHES))
def test_view_cache_off_or_tiny_equals_reference(
    workload: Workload, cache: dict[str, Any]
) -> None:
    expected = reference_results(workload.text, workload.docs)
    assert engine_results(workload.text, workload.docs, **cache) == expected


@examples(60)
@given(workload=workloads(queries=(1, 3)))
def test_queries_repeated_under_other_ids_equal_reference(workload: Workload) -> None:
    """Each query twice, under two ids: the second is registered from the shape memo."""
    queries = parse_queries(workload.text)  # a literal may hold a newline: not a line each
    again = "".join(
        format_query(dataclasses.replace(q, qid=f"again_{q.qid}")) + ";\n" for q in queries
    )
    both = workload.text + again
    engine = LocalEngine(parse_queries(both))
    assert engine.shapes.hits >= len(queries)
    got = canonical([r.to_json_dict() for r in engine.process(workload.docs)])
    assert got == reference_results(both, workload.docs)


def test_thesis_example_equals_reference() -> None:
    queries = (ROOT / "examples" / "thesis" / "queries.xscl").read_text(encoding="utf-8")
    lines = (ROOT / "examples" / "thesis" / "documents.jsonl").read_text(encoding="utf-8")
    docs = [d for d in read_envelopes(lines.splitlines()) if isinstance(d, Document)]
    expected = reference_results(queries, docs)
    got = engine_results(queries, docs)
    assert got == expected
    assert {json.loads(r)["query"] for r in got} == {"Q1", "Q2"}


def test_chain_with_publish_feeds_results_back() -> None:
    text = """
    P: S/item[./a->x1] JOIN {x1=y1, 5s} T/item[./a->y1] PUBLISH pairs;
    R: pairs/result[./item/b->p1] FOLLOWED BY {p1=z1, INF} S/item[./b->z1];
    C: S/item[./a->x1] FOLLOWED BY {x1=y1, INF} T/item[./a->y1] JOIN {y1=z1 AND x1=z1, INF} S//a->z1
    """
    docs = [
        Document("S", "s1", 1_000_000, "<item><a>v</a><b>w</b></item>"),
        Document("T", "t1", 2_000_000, "<item><a>v</a><b>q</b></item>"),
        Document("S", "s2", 9_000_000, "<item><a>v</a><b>w</b></item>"),
    ]
    expected = reference_results(text, docs)
    assert {json.loads(r)["query"] for r in expected} == {"P", "R", "C"}
    assert engine_results(text, docs) == expected
    assert engine_results(text, list(reversed(docs))) == expected


def test_prefixed_names_after_a_minus_equal_reference() -> None:
    """Issue 36 defect 1: a declared prefix right after XPath's ``-`` operator."""
    text = """DECLARE NAMESPACE a = "http://www.w3.org/2005/Atom";
    Q1: S/a:entry[sum(a:n)-a:m = 0];
    Q2: S/a:entry[boolean(5-a:m = 2)];
    Q3: S/a:entry[number(a:n) -a:m = 0];
    """
    xml = '<entry xmlns="http://www.w3.org/2005/Atom"><n>3</n><m>3</m></entry>'
    docs = [Document("S", "d1", 0, xml)]
    expected = reference_results(text, docs)
    assert {json.loads(r)["query"] for r in expected} == {"Q1", "Q2", "Q3"}
    assert engine_results(text, docs) == expected


def test_xpath_comments_in_function_predicates_equal_reference() -> None:
    """Issue 36 defect 3: XPath comments (with quotes and brackets) are whitespace."""
    text = """DECLARE NAMESPACE a = "http://www.w3.org/2005/Atom";
    Q1: S/a:entry[true() (: it's :)];
    Q2: S/a:entry[exists(a:n) (: a ] b :)];
    Q3: S/a:entry[true() (: it's (: a:x :) ' :) and a:m = 3];
    Q4: S/a:entry[true() (: (: :) :) and a:m = 4];
    """
    xml = '<entry xmlns="http://www.w3.org/2005/Atom"><n>3</n><m>3</m></entry>'
    docs = [Document("S", "d1", 0, xml)]
    expected = reference_results(text, docs)
    assert {json.loads(r)["query"] for r in expected} == {"Q1", "Q2", "Q3"}
    assert engine_results(text, docs) == expected


def test_the_implicit_timezone_is_utc_in_both_engines() -> None:
    """Issue 36 defect 7: elementpath has no implicit timezone unless told, so
    ``current-dateTime()`` had none; both engines set UTC (docs/language.md)."""
    text = """
    Q1: S/d[exists(timezone-from-dateTime(current-dateTime()))];
    Q2: S/d[timezone-from-dateTime(current-dateTime()) = xs:dayTimeDuration('PT0S')];
    Q3: S/d[xs:dateTime(./t) = xs:dateTime('2020-01-01T00:00:00Z')];
    """
    docs = [Document("S", "d1", 0, "<d><t>2020-01-01T00:00:00</t></d>")]
    expected = reference_results(text, docs)
    assert {json.loads(r)["query"] for r in expected} == {"Q1", "Q2", "Q3"}
    assert engine_results(text, docs) == expected
