"""The compiled table gives back what was compiled, and the engines built from it equal
the engines built from the query texts, internal tables and var ids included.

That the results then equal ``xscl.reference`` is checked where the job's executor
functions are driven without Spark (``tests/spark/test_spark_job_groups.py`` draws
whether the registry is compiled).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given

from tests.profiles import examples
from tests.workloads import HEADER, NAMESPACES, Workload, query_texts, workloads
from xscl.engine.subscriptions import Subscriptions
from xscl.lang.normal_form import normalize
from xscl.lang.parser import parse_query
from xscl.lang.printer import format_query
from xscl.service import live_queries as queries
from xscl.service.compiled import table
from xscl.service.compiled.sources import FromTable, FromTexts
from xscl.service.compiled.table import compiled_folder
from xscl.service.compiled.values import Decoder, encode
from xscl.service.subscriptions import SubscriptionLog
from xscl.spark_plugin.compile_job import compile_in_process
from xscl.templates import assign_template
from xscl.templates.registry import QueryRow


@examples(100)
@given(text=query_texts())
def test_every_part_of_a_compiled_query_decodes_to_itself(text: str) -> None:
    query = parse_query(text, namespaces=NAMESPACES)
    normal = normalize(query)
    assignment = assign_template(normal)
    parts: list[Any] = [
        query.blocks, query.ops, query.namespaces, normal.blocks, normal.ops,
        normal.equalities, assignment.template, assignment.definitions,
    ]  # fmt: skip
    decoder = Decoder()
    for part in parts:
        assert decoder.value(encode(part)) == part
    # a definition is built once, whichever value holds it
    first = decoder.value(encode(normal.blocks))[0].exists
    assert decoder.value(encode(normal.blocks[0].exists)) is first


def _registry(folder: Path, text: str) -> SubscriptionLog:
    """Event 1 subscribes ``text``; event 2 unsubscribes its first query; event 3
    subscribes that query again (all applied at offsets 0, 3, 5)."""
    log = SubscriptionLog(folder)
    first = log.subscribe(text, source="workload.xscl").queries()[0]
    log.unsubscribe([first.qid])
    log.subscribe(HEADER + format_query(first) + ";\n", source="again.xscl")
    for version, offset in ((1, 0), (2, 3), (3, 5)):
        log.record_applied(version, offset)
    return log


def test_the_table_gives_back_the_compiled_queries_in_order(tmp_path: Path) -> None:
    text = HEADER + "".join(
        f"Q{i}: S//item->i[./a->x] JOIN {{x = y, {i}s}} T//entry[./b->y];\n" for i in range(40)
    )
    log = _registry(tmp_path, text)
    assert compile_in_process(tmp_path, 1)
    assert not compile_in_process(tmp_path, 1)  # once per event
    assert compiled_folder(tmp_path, 1).is_dir() and not compiled_folder(tmp_path, 2).exists()
    event = log.event(1)
    from_table = list(FromTable(tmp_path).compiled(event))
    assert [c.qid for c in from_table] == [f"Q{i}" for i in range(40)]
    assert from_table == list(FromTexts().compiled(event))


def test_an_event_is_read_a_batch_at_a_time_in_position_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``iter_event`` merges the files by position, a few rows at a time, with a decoder
    that keeps forgetting; a file out of position order is read whole and sorted."""
    text = HEADER + "".join(
        f"Q{i}: S//item->i[./a->x][contains(., 'w{i}')] JOIN {{x = y, {i}s}} T//entry[./b->y];\n"
        for i in range(23)
    )
    log = _registry(tmp_path, text)
    assert compile_in_process(tmp_path, 1)
    folder = compiled_folder(tmp_path, 1)
    (written,) = folder.glob("*.parquet")
    rows = pq.read_table(written)
    written.unlink()
    evens = rows.filter(pc.equal(pc.bit_wise_and(rows["position"], 1), 0))
    odds = rows.filter(pc.equal(pc.bit_wise_and(rows["position"], 1), 1))
    pq.write_table(evens, folder / "part-0.parquet")  # in position order, as a task writes
    pq.write_table(odds.take(list(reversed(range(odds.num_rows)))), folder / "part-1.parquet")
    monkeypatch.setattr(table, "ROWS_PER_BATCH", 3)
    monkeypatch.setattr(table, "DECODED_CELLS", 4)
    expected = list(FromTexts().compiled(log.event(1)))
    assert list(table.iter_event(tmp_path, 1)) == expected
    assert [c.qid for c in expected] == [f"Q{i}" for i in range(23)]


def _row(row: QueryRow) -> tuple[object, ...]:
    return (row.qid, row.var_ids, row.windows, row.kinds, row.names)


def _tables(subs: Subscriptions) -> dict[str, Any]:
    """What registering built: R_T tables, Stage 1, claims, outputs, placed plans."""
    stage1 = subs.stage1
    return {
        "R_T": [
            (t.template, t.template_id, [_row(r) for r in t.rows.values()])
            for t in subs.registry.tables()
        ],
        "definitions": stage1.registered,
        "requirements": (sorted(stage1._values), sorted(stage1._nodes), sorted(stage1._pairs)),
        "claims": dict(subs.claim_counts),
        "publishers": subs.publishers,
        "chain_streams": subs.chain_streams,
        "outputs": {
            q: ([b and b.signature for b in o.blocks], o.select, o.select_blocks)
            for q, o in subs.outputs.items()
        },
        "plans": subs.plan_sets,  # role plans with their R_T tries, per placement
        "placement": subs.placement,
        "publish": subs.publish,
        "since": subs.since,
    }


def _built(registry: Path, version: int) -> dict[str, Any]:
    built = queries.LiveQueries().at(str(registry), version)
    return {
        "subscriptions": _tables(built.subscriptions),
        "added_at": built.added_at,
        "routing": built.routing(),
    }


@examples(25, suppress=[HealthCheck.function_scoped_fixture])
@given(workload=workloads(queries=(1, 5)))
def test_engines_from_the_table_equal_engines_from_the_texts(
    tmp_path_factory: Any, workload: Workload
) -> None:
    texts = tmp_path_factory.mktemp("texts")
    _registry(texts, workload.text)
    compiled = tmp_path_factory.mktemp("compiled")
    shutil.copytree(texts, compiled, dirs_exist_ok=True)
    partly = tmp_path_factory.mktemp("partly")
    shutil.copytree(texts, partly, dirs_exist_ok=True)
    assert compile_in_process(compiled, 1) and compile_in_process(compiled, 3)
    assert compile_in_process(partly, 3)  # event 1 from its texts, event 3 from the table
    for version in (1, 3):
        expected = _built(texts, version)
        assert _built(compiled, version) == expected
        assert _built(partly, version) == expected


def test_feed_subtitles_from_the_table_equal_those_from_the_texts(tmp_path: Path) -> None:
    """The Atom feeds' subtitles (``SubscribedTexts``) read compiled events from the
    table and the others from their files: the same texts, unsubscriptions applied."""
    from xscl.results.atom import SubscribedTexts

    queries_text = "".join(
        f"Q{i}: S//item->i[./a->x] FOLLOWED BY {{x = y, {i}m}} T//entry[./b->y];\n"
        for i in range(1, 6)
    )
    log = _registry(tmp_path, HEADER + queries_text)  # events 1-3: Q1 out, then in again
    log.unsubscribe(["Q2"])
    from_texts = dict(SubscribedTexts(tmp_path)())
    assert compile_in_process(tmp_path, 1) and compile_in_process(tmp_path, 3)
    assert dict(SubscribedTexts(tmp_path)()) == from_texts
    assert sorted(from_texts) == ["Q1", "Q3", "Q4", "Q5"]
    third = next(q for q in log.event(1).queries() if q.qid == "Q3")
    assert from_texts["Q3"] == format_query(third, with_id=False)


def test_feed_subtitles_decode_only_the_queries_asked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker writing a few feeds decodes those queries' rows, not every subscription."""
    from xscl.results.atom import SubscribedTexts
    from xscl.service.compiled import table

    queries_text = "".join(
        f"Q{i}: S//item->i[./a->x] FOLLOWED BY {{x = y, {i}m}} T//entry[./b->y];\n"
        for i in range(1, 40)
    )
    log = SubscriptionLog(tmp_path)
    log.subscribe(HEADER + queries_text, source="q.xscl")
    assert compile_in_process(tmp_path, 1)
    decoded: list[str] = []
    real = table._query

    def counted(decoder: Any, cells: dict[str, Any]) -> Any:
        decoded.append(cells["qid"])
        return real(decoder, cells)

    monkeypatch.setattr(table, "_query", counted)
    texts = SubscribedTexts(tmp_path)()
    assert len(texts) == 39 and decoded == []
    third = next(q for q in log.event(1).queries() if q.qid == "Q3")
    assert texts["Q3"] == texts["Q3"] == format_query(third, with_id=False)
    assert decoded == ["Q3"]
