"""``xscl.engine.run_batch``: the batch contract of spec section 4, against the reference."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xscl import reference
from xscl.engine import LocalEngine, run_batch
from xscl.errors import PublishCycleError
from xscl.lang.parser import parse_queries

QUERIES = """
Q1: S/item[./a->x] FOLLOWED BY {x=y, 10s} S/item[./a->y];
Q2: SELECT x, k FROM S/item[./a->x][./@k->k] JOIN {x=y, INF} T//a->y;
"""

ENVELOPES = [
    {
        "stream": "S",
        "docid": "s1",
        "ts": "2026-01-01T00:00:05Z",
        "xml": "<item k='1'><a>v</a></item>",
    },
    "not json at all",
    {"stream": "S", "docid": "bad", "ts": "2026-01-01T00:00:06Z", "xml": "<item><a>v</item>"},
    {"stream": "T", "docid": "t1", "ts": "2026-01-01T00:00:30Z", "xml": "<x><a>v</a><a>w</a></x>"},
    {"stream": "S", "docid": "s2", "ts": "2026-01-01T00:00:09Z", "xml": "<item><a>v</a></item>"},
    {
        "stream": "S",
        "docid": "s1",
        "ts": "2026-01-01T00:00:07Z",
        "xml": "<item><a>other</a></item>",
    },
    {"stream": "S", "docid": "s3", "ts": 1767225601, "xml": "<item k='2'><a> v </a><a/></item>"},
]


def write_input(path: Path) -> None:
    lines = [e if isinstance(e, str) else json.dumps(e) for e in ENVELOPES]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def read_results(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_run_batch_matches_reference_and_writes_dead_letters(tmp_path: Path) -> None:
    source = tmp_path / "docs.jsonl"
    write_input(source)
    queries = list(parse_queries(QUERIES))
    summary = run_batch(queries, source, tmp_path / "local.jsonl")
    reference.run_batch(queries, source, tmp_path / "ref.jsonl")
    mine, theirs = read_results(tmp_path / "local.jsonl"), read_results(tmp_path / "ref.jsonl")
    assert mine == theirs  # same records, same (query, result_id) order
    assert summary.results == len(mine) > 0
    dead = (tmp_path / "local.deadletter.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(dead) == 2 == summary.dead_letters  # the non-JSON line and the malformed XML
    assert summary.duplicates == 1
    assert not list(tmp_path.glob(".*.tmp"))


def test_allowed_lateness_dead_letters_late_documents(tmp_path: Path) -> None:
    source = tmp_path / "docs.jsonl"
    write_input(source)
    queries = list(parse_queries(QUERIES))
    summary = run_batch(queries, source, tmp_path / "out.jsonl", allowed_lateness_micros=10_000_000)
    reference.run_batch(queries, source, tmp_path / "ref.jsonl", allowed_lateness_micros=10_000_000)
    assert summary.late == 2  # s2 (9s) and s3 (1s) arrive after t1 (30s)
    assert read_results(tmp_path / "out.jsonl") == read_results(tmp_path / "ref.jsonl")
    dead = [json.loads(x) for x in (tmp_path / "out.deadletter.jsonl").read_text().splitlines()]
    assert [d["reason"] for d in dead if d["code"] == "XSCL-R008"] == ["late", "late"]


def test_eviction_bounds_state_without_changing_results() -> None:
    queries = list(parse_queries("Q: S/item[./a->x] FOLLOWED BY {x=y, 2s} S/item[./a->y]"))
    docs = [("S", f"d{i}", i * 1_000_000, f"<item><a>{i % 3}</a></item>") for i in range(40)]
    bounded = LocalEngine(queries, allowed_lateness_micros=1_000_000)
    unbounded = LocalEngine(queries)
    assert {r.result_id for r in bounded.process(docs)} == {
        r.result_id for r in unbounded.process(docs)
    }
    assert len(bounded.docs) <= 5 and bounded.stats.evicted >= 35
    assert bounded.cache.rows <= 5


def test_publish_cycle_is_rejected() -> None:
    text = "A: S/a->x JOIN {x=y, 1s} P/b->y PUBLISH Q; B: Q/c->x JOIN {x=y, 1s} S/d->y PUBLISH P"
    with pytest.raises(PublishCycleError):
        LocalEngine(parse_queries(text))


def test_add_and_remove_queries_while_running() -> None:
    engine = LocalEngine()
    first = parse_queries("Q1: S/item[./a->x] JOIN {x=y, INF} S/item[./a->y]")[0]
    twin = parse_queries("Q2: S/item[./a->p] JOIN {p=q, INF} S/item[./a->q]")[0]
    engine.add_query(first)
    engine.add_query(twin)
    assert engine.template_count == 1
    assert len(engine.process([("S", "d1", 0, "<item><a>v</a></item>")])) == 0
    engine.remove_query("Q1")
    out = engine.process([("S", "d2", 1, "<item><a>v</a></item>")])
    assert {r.query for r in out} == {"Q2"} and len(out) == 2  # (d1, d2) and (d2, d1)


def test_namespaced_output_equals_reference() -> None:
    from xscl import reference

    text = """
    DECLARE NAMESPACE a = "urn:a";
    N1: S//a:entry[./a:t->x] JOIN {x=y, INF} T/item[./t->y];
    N2: SELECT x, w FROM S//a:entry[./a:t->x][./@w->w] FOLLOWED BY {x=y, INF} T/item[./t->y]
    """
    xml_s = (
        '<feed xmlns="urn:a" xmlns:b="urn:b"><entry w="1"><t>v</t><b:z>q</b:z></entry>'
        "<!-- c --><entry><t>v</t>tail</entry></feed>"
    )
    docs = [("S", "s1", 0, xml_s), ("T", "t1", 5, "<item><t> v </t></item>")]
    queries = list(parse_queries(text))
    ref_docs = [reference.make_document(*d) for d in docs]
    expected = {r.to_json_line() for r in reference.evaluate(queries, ref_docs)}
    got = {r.to_json_line() for r in LocalEngine(queries).process(docs)}
    assert got == expected and len(got) == 3


def test_publish_cycle_added_later_is_rejected_and_leaves_engine_intact() -> None:
    engine = LocalEngine(parse_queries("A: S/a->x JOIN {x=y, 1s} P/b->y PUBLISH Q"))
    closing = parse_queries("B: Q/c->x JOIN {x=y, 1s} S/d->y PUBLISH P")[0]
    with pytest.raises(PublishCycleError):
        engine.add_query(closing)
    assert set(engine.outputs) == {"A"}


def test_many_queries_register_with_the_gc_paused_and_restored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """1,000+ queries register with the cyclic GC off (then one collection): the same
    results as one by one, and the collector is on again afterwards."""
    import gc

    from xscl.lang import gc_pause

    text = ";\n".join(
        f"Q{i}: S//a->x[./b='v{i % 7}'] JOIN {{x=y, 1h}} T//c->y" for i in range(1_200)
    )
    queries = parse_queries(text)
    seen: list[bool] = []
    real_add = LocalEngine.add_query

    def add(self: LocalEngine, query: object, **kwargs: object) -> None:
        seen.append(gc.isenabled())
        real_add(self, query, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(LocalEngine, "add_query", add)
    bulk = LocalEngine(queries)
    assert gc.isenabled() and len(seen) == 1_200 and not any(seen)
    monkeypatch.setattr(gc_pause, "GC_PAUSE_QUERIES", 10**9)
    seen.clear()
    one_by_one = LocalEngine(queries)
    assert all(seen)
    docs = [("S", "s1", 1, "<a><b>v3</b></a>"), ("T", "t1", 2, "<c>v3</c>")]
    assert (
        {r.result_id for d in docs for r in bulk.process_one(*d)}
        == {r.result_id for d in docs for r in one_by_one.process_one(*d)}
        != set()
    )


def test_a_dead_lettered_first_delivery_still_wins() -> None:
    """A re-delivery is ignored even when the first delivery was late or its XML was
    rejected (spec 1; the spool keeps only the first delivery too)."""
    engine = LocalEngine(
        parse_queries("Q: S//a->x JOIN {x=y, INF} T//b->y"), allowed_lateness_micros=10_000_000
    )
    fed = [
        ("T", "t", 100_000_000, "<b>v</b>"),
        ("S", "late", 0, "<a>v</a>"),
        ("S", "late", 100_000_000, "<a>v</a>"),
        ("S", "bad", 100_000_000, "<a>v"),
        ("S", "bad", 100_000_000, "<a>v</a>"),
    ]
    assert [r for doc in fed for r in engine.process_one(*doc)] == []
    assert (engine.stats.late, engine.stats.rejected, engine.stats.duplicates) == (1, 1, 2)
