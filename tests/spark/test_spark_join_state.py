"""The join state on disk (``JoinStateStore``) gives the same results as the in-memory engine.

The streaming pipeline is driven without Spark (``EnginePipeline.process_rows``,
the driver half of a micro-batch) over random workloads cut into random
micro-batches, with Stage 1 on the driver or as the executors' witness rows. The
expected records come from the reference evaluator (without lateness) or from
the in-memory ``LocalEngine`` fed in the same arrival order (with an allowed
lateness, which makes arrival order matter: late documents are dead letters).
Replays, restarts with a new pipeline (registry rebuilt, nothing replayed),
eviction by watermark and published results joining stored documents are covered.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.engine_local.workloads import Doc, random_workload
from xscl import reference
from xscl.engine import LocalEngine
from xscl.lang.parser import parse_queries
from xscl.spark_plugin.errors import JoinStateError, JoinStateMismatchError
from xscl.spark_plugin.job_args import RESULTS_FORMATS
from xscl.spark_plugin.join_state import JoinStateStore
from xscl.spark_plugin.pipeline import EnginePipeline
from xscl.spark_plugin.results_sink import read_results
from xscl.spark_plugin.witness_task import witness_batch

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))


def _rows(docs: Sequence[Doc], start: int = 0) -> list[dict[str, Any]]:
    return [
        {"offset": start + i, "stream": d.stream, "docid": d.docid, "ts": d.ts_micros, "xml": d.xml}
        for i, d in enumerate(docs)
    ]


def _as_executors(pipeline: EnginePipeline, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows as ``mapInArrow`` returns them: Stage 1's output beside each document."""
    import pyarrow as pa

    batch = pa.RecordBatch.from_pylist(rows)
    return witness_batch(pipeline.engine.stage1, batch).to_pylist()  # type: ignore[no-any-return]


def _cuts(rng: random.Random, count: int) -> list[tuple[int, int]]:
    """Random micro-batch boundaries over ``count`` rows."""
    bounds, at = [], 0
    while at < count:
        size = rng.randint(1, 4)
        bounds.append((at, min(count, at + size)))
        at += size
    return bounds


def _pipeline(
    text: str,
    root: Path,
    lateness: int | None = None,
    hold_bytes: int = 0,
    results_format: str = "jsonl",
) -> EnginePipeline:
    return EnginePipeline(
        parse_queries(text),
        root / "spool",
        root / "out",
        allowed_lateness_micros=lateness,
        join_state=JoinStateStore(root / "state" / "join.sqlite"),
        hold_bytes=hold_bytes,
        results_format=results_format,
    )


def _run(
    text: str,
    docs: Sequence[Doc],
    root: Path,
    rng: random.Random,
    *,
    lateness: int | None = None,
    executors: bool = False,
    restart_every: int = 0,
    hold_bytes: int = 0,
    results_format: str | None = "jsonl",
) -> tuple[set[str], EnginePipeline]:
    """Every micro-batch through ``process_rows``; the committed records, canonical.

    ``results_format`` None: each (re)started pipeline draws one, so a results
    directory holds both formats.
    """
    rows = _rows(docs)

    def start() -> EnginePipeline:
        fmt = results_format or rng.choice(RESULTS_FORMATS)
        return _pipeline(text, root, lateness, hold_bytes, fmt)

    pipeline = start()
    for batch_id, (lo, hi) in enumerate(_cuts(rng, len(rows))):
        if restart_every and batch_id and batch_id % restart_every == 0:
            assert pipeline.join_state is not None
            pipeline.join_state.close()
            pipeline = start()
        part = rows[lo:hi]
        if executors and pipeline.next_offset is not None:
            part = _as_executors(pipeline, part)
        pipeline.process_rows(batch_id, part)
    got = {json.dumps(r, sort_keys=True) for r in read_results(root / "out")}
    return got, pipeline


def _reference(text: str, docs: Sequence[Doc]) -> set[str]:
    ref_docs = [reference.make_document(d.stream, d.docid, d.ts_micros, d.xml) for d in docs]
    return {
        json.dumps(r.to_json_dict(), sort_keys=True)
        for r in reference.evaluate(list(parse_queries(text)), ref_docs)
    }


def _local(text: str, docs: Sequence[Doc], lateness: int | None) -> set[str]:
    engine = LocalEngine(parse_queries(text), allowed_lateness_micros=lateness)
    return {json.dumps(r.to_json_dict(), sort_keys=True) for r in engine.process(docs)}


#: held between batches: nothing, a few documents (forgotten and read back), all
HOLDS = st.sampled_from([0, 6_000, 1 << 30])


@SETTINGS
@given(
    seed=st.integers(0, 10**9),
    executors=st.booleans(),
    hold=HOLDS,
    results_format=st.sampled_from(RESULTS_FORMATS),
)
def test_random_micro_batches_equal_reference(
    seed: int,
    executors: bool,
    hold: int,
    results_format: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    text, docs = random_workload(seed, queries=5, documents=12)
    got, _ = _run(text, docs, tmp_path_factory.mktemp("j"), random.Random(seed),
                  executors=executors, hold_bytes=hold, results_format=results_format)
    assert got == _reference(text, docs), text


@SETTINGS
@given(seed=st.integers(0, 10**9), hold=HOLDS)
def test_lateness_eviction_and_restarts_equal_the_in_memory_engine(
    seed: int, hold: int, tmp_path_factory: pytest.TempPathFactory
) -> None:
    text, docs = random_workload(seed, queries=5, documents=14)
    rng = random.Random(seed)
    shuffled = list(docs)
    rng.shuffle(shuffled)
    lateness = rng.choice((0, 1_000_000, 3_000_000))
    got, pipeline = _run(text, shuffled, tmp_path_factory.mktemp("j"), rng, lateness=lateness,
                         restart_every=rng.choice((0, 2, 3)), hold_bytes=hold,
                         results_format=None)
    assert got == _local(text, shuffled, lateness), text
    dead = [
        json.loads(line)
        for part in sorted((pipeline.output / "deadletters").glob("*.jsonl"))
        for line in part.read_text(encoding="utf-8").splitlines()
    ]
    engine = LocalEngine(parse_queries(text), allowed_lateness_micros=lateness)
    engine.process(shuffled)
    assert len(dead) == engine.stats.late + engine.stats.rejected


def test_replaying_a_batch_and_restarting_change_nothing(tmp_path: Path) -> None:
    text, docs = random_workload(11, queries=6, documents=16)
    rows = _rows(docs)
    expected = _reference(text, docs)
    pipeline = _pipeline(text, tmp_path)
    pipeline.process_rows(0, rows[:5])
    pipeline.process_rows(1, rows[5:10])
    # the driver dies after batch 1's state commit, before Spark logs it: replay 1
    assert pipeline.join_state is not None
    pipeline.join_state.close()
    again = _pipeline(text, tmp_path)
    again.process_rows(1, rows[5:10])
    assert again.warmed_up == 0  # nothing replayed: the state is on disk
    assert again.join_state is not None
    assert again.join_state.documents == 10
    again.process_rows(2, rows[10:])
    got = {json.dumps(r, sort_keys=True) for r in read_results(tmp_path / "out")}
    assert got == expected
    assert again.engine.docs == {}  # hold_bytes=0: the driver keeps no documents between batches


@pytest.mark.parametrize("hold", [0, 1 << 30])
def test_published_results_join_stored_documents(tmp_path: Path, hold: int) -> None:
    text = """
    P: S/item[./a->x1] JOIN {x1=y1, 5s} T/item[./a->y1] PUBLISH pairs;
    R: pairs/result[./item/b->p1] FOLLOWED BY {p1=z1, INF} S/item[./b->z1];
    E: pairs/result[./item/b->p1] JOIN {p1=z1, INF} S/item[./b->z1];
    C: S/item[./a->x1] FOLLOWED BY {x1=y1, INF} T/item[./a->y1] JOIN {y1=z1 AND x1=z1, INF} S//a->z1
    """
    docs = [
        # shares no string with the later documents, only with a result they publish
        Doc("S", "s0", 500_000, "<item><a>k</a><b>q</b></item>"),
        Doc("S", "s1", 1_000_000, "<item><a>v</a><b>w</b></item>"),
        Doc("T", "t1", 2_000_000, "<item><a>v</a><b>q</b></item>"),
        Doc("S", "s2", 9_000_000, "<item><a>v</a><b>w</b></item>"),
        Doc("S", "s3", 9_500_000, "<item><a>u</a><b>w</b></item>"),
    ]
    expected = _reference(text, docs)
    assert {json.loads(r)["query"] for r in expected} == {"P", "R", "E", "C"}
    assert any('"s0"' in r and json.loads(r)["query"] == "E" for r in expected)
    for cut in range(1, len(docs) + 1):
        root = tmp_path / f"cut{cut}"
        pipeline = _pipeline(text, root, hold_bytes=hold)
        rows = _rows(docs)
        pipeline.process_rows(0, rows[:cut])
        if cut < len(rows):
            pipeline.process_rows(1, rows[cut:])
        got = {json.dumps(r, sort_keys=True) for r in read_results(root / "out")}
        assert got == expected, cut


@pytest.mark.parametrize("hold", [0, 2_000, 1 << 30])  # 2,000: the newest document only
def test_a_document_two_links_away_is_loaded_for_a_three_block_template(
    tmp_path: Path, hold: int
) -> None:
    """d1 -p- d2 -r- d3: d3 shares no string with d1, yet (d1, d2, d3) is a match."""
    text = (
        "Q: S/item[./a->x] JOIN {x=y, INF} S/item[./a->y][./b->z] "
        "JOIN {z=w, INF} S/item[./b->w]"
    )
    docs = [
        Doc("S", "d1", 1_000_000, "<item><a>p</a><b>q</b></item>"),
        Doc("S", "d2", 2_000_000, "<item><a>p</a><b>r</b></item>"),
        Doc("S", "d3", 3_000_000, "<item><a>t</a><b>r</b></item>"),
    ]
    expected = _reference(text, docs)
    assert any('"d1"' in r and '"d3"' in r for r in expected)
    for cut in (1, 2):
        root = tmp_path / f"cut{cut}"
        pipeline = _pipeline(text, root, hold_bytes=hold)
        rows = _rows(docs)
        pipeline.process_rows(0, rows[:cut])
        pipeline.process_rows(1, rows[cut:])
        got = {json.dumps(r, sort_keys=True) for r in read_results(root / "out")}
        assert got == expected, cut


def test_a_state_file_of_another_format_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "join.sqlite"
    JoinStateStore(path).close()
    import sqlite3

    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value = 999 WHERE key = 'format'")
    with pytest.raises(JoinStateError, match=r"XSCL-S006 .* format 999"):
        JoinStateStore(path)


def test_a_lost_state_file_is_a_clear_error(tmp_path: Path) -> None:
    text, docs = random_workload(3, queries=3, documents=6)
    pipeline = _pipeline(text, tmp_path)
    pipeline.process_rows(0, _rows(docs[:3]))
    assert pipeline.join_state is not None
    pipeline.join_state.close()
    (tmp_path / "state" / "join.sqlite").unlink()
    fresh = _pipeline(text, tmp_path)
    with pytest.raises(JoinStateMismatchError, match=r"XSCL-S007 .*join state disagree"):
        fresh.process_rows(1, _rows(docs[3:], start=3))


@pytest.mark.parametrize("failing", ["add", "flush"])  # amid the joins, after the results
def test_a_batch_that_failed_half_way_is_redone_from_the_committed_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    """A foreachBatch retried in the same driver after an exception: the held
    documents of the failed attempt must not count as stored."""
    text, docs = random_workload(5, queries=6, documents=16)
    expected = _reference(text, docs)
    rows = _rows(docs)
    pipeline = _pipeline(text, tmp_path, hold_bytes=1 << 30)
    pipeline.process_rows(0, rows[:8])
    calls = {"n": 0}
    real = getattr(pipeline.feeds, failing)

    def fail_once(*args: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 2 or failing == "flush":
            raise OSError("disk full (injected)")
        return real(*args)

    monkeypatch.setattr(pipeline.feeds, failing, fail_once)
    with pytest.raises(OSError, match="injected"):
        pipeline.process_rows(1, rows[8:])
    monkeypatch.setattr(pipeline.feeds, failing, real)
    pipeline.process_rows(1, rows[8:])
    got = {json.dumps(r, sort_keys=True) for r in read_results(tmp_path / "out")}
    assert calls["n"] >= 1, "the injected failure happened"
    assert got == expected
