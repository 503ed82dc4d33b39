"""Subscriptions as data: the registry log, and subscribe/unsubscribe while a job runs.

The streaming test keeps ONE streaming query running across three rounds of new
documents (same query id, no restart) and changes its subscriptions between
rounds with the ``xscl subscribe`` / ``xscl unsubscribe`` commands. Expected
results come from the reference evaluator: a query sees every document from the
round its subscription took effect on; an unsubscribed one produces nothing more.
A second run from the same checkpoint and registry then replays with the events
at their recorded offsets and must add exactly the new round's results.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from xscl.cli.main import main
from xscl.connectors.document import Document
from xscl.connectors.spool import Spool
from xscl.errors import SubscriptionError
from xscl.lang.parser import parse_file
from xscl.reference import evaluate, make_document
from xscl.results.read import read_results
from xscl.service.subscriptions import SubscriptionLog
from xscl.spark_plugin.compile_job import compile_registry
from xscl.spark_plugin.job.plan import JobPlan, start_job

BY_AUTHOR = "by_author: S//item->i[./author->a] JOIN {a = b, INF} S//item->j[./author->b];\n"
SAME_TAG = "same_tag: S//item->i[./tag->x] JOIN {x = y, INF} S//item->j[./tag->y];\n"
FOLLOW = (
    "follow: S//item->i[./author->a][./tag->x] FOLLOWED BY {a = b AND x = y, 20s} "
    "S//item->j[./author->b][./tag->y];\n"
)
BASE_TS = 1_149_156_000_000_000


def _docs(start: int, count: int) -> list[Document]:
    return [
        Document(
            "S",
            f"d{i}",
            BASE_TS + i * 3_000_000,
            f"<item><author>a{i % 3}</author><tag>g{i % 2}</tag></item>",
        )
        for i in range(start, start + count)
    ]


def _expected(text: str, docs: list[Document], qid: str) -> set[str]:
    queries = [q for q in parse_file(text).queries if q.qid == qid]
    ref = [make_document(d.stream, d.docid, d.ts_micros, d.xml) for d in docs]
    return {r.result_id for r in evaluate(queries, ref)}


# ------------------------------------------------------------------ the log
def test_log_validates_numbers_and_replays_events(tmp_path: Path) -> None:
    log = SubscriptionLog(tmp_path / "reg")
    assert log.subscribe(BY_AUTHOR, source="a.xscl").version == 1
    assert log.subscribe(SAME_TAG, source="b.xscl").ids == ("same_tag",)
    with pytest.raises(SubscriptionError) as taken:
        log.subscribe(BY_AUTHOR, source="again.xscl")
    assert taken.value.code == "XSCL-S011"
    with pytest.raises(SubscriptionError) as bad:
        log.subscribe("broken: S//item->i JOIN {i = , 1h} S//x->j;", source="bad.xscl")
    assert bad.value.code == "XSCL-S010" and bad.value.errors
    with pytest.raises(SubscriptionError) as unknown:
        log.unsubscribe(["nope"])
    assert unknown.value.code == "XSCL-S012"
    assert log.unsubscribe(["by_author"]).version == 3
    assert sorted(log.current()) == ["same_tag"]
    assert sorted(log.current(upto=2)) == ["by_author", "same_tag"]
    # a rejected change wrote nothing
    assert log.versions() == [1, 2, 3]
    # where an event took effect is recorded once, then kept
    assert log.record_applied(2, 40) == 40
    assert log.record_applied(2, 99) == 40
    assert log.applied() == {2: 40}


def test_log_rejects_a_publish_cycle(tmp_path: Path) -> None:
    log = SubscriptionLog(tmp_path / "reg")
    log.subscribe("p: A//x->u[./k->a] JOIN {a = b, INF} A//y->v[./k->b] PUBLISH B;", source="p")
    with pytest.raises(SubscriptionError) as cycle:
        log.subscribe("r: B//x->u[./k->a] JOIN {a = b, INF} B//y->v[./k->b] PUBLISH A;",
                      source="r")
    assert cycle.value.code == "XSCL-S013"


def test_concurrent_writers_get_distinct_event_numbers(tmp_path: Path) -> None:
    folder = tmp_path / "reg"
    pids = []
    for n in range(4):
        pid = os.fork()
        if pid == 0:  # child: one subscription each, then exit without cleanup
            try:
                SubscriptionLog(folder).subscribe(
                    f"q{n}x: S//item->i[./k{n}->a] JOIN {{a = b, INF}} S//item->j[./k{n}->b];",
                    source=f"{n}",
                )
                os._exit(0)
            except BaseException:
                os._exit(1)
        pids.append(pid)
    assert all(os.waitpid(pid, 0)[1] == 0 for pid in pids)
    log = SubscriptionLog(folder)
    assert log.versions() == [1, 2, 3, 4]
    assert sorted(log.current()) == ["q0x", "q1x", "q2x", "q3x"]


def test_cli_subscribe_unsubscribe_and_list(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    queries = tmp_path / "more.xscl"
    queries.write_text(BY_AUTHOR + SAME_TAG, encoding="utf-8")
    home = ["--home", str(tmp_path / "home"), "--name", "job"]
    assert main(["subscribe", str(queries), *home]) == 0
    assert main(["subscribe", str(queries), *home]) == 2
    assert "already subscribed: by_author, same_tag" in capsys.readouterr().err
    assert main(["unsubscribe", "same_tag", *home]) == 0
    assert main(["unsubscribe", "same_tag", *home]) == 2
    capsys.readouterr()
    assert main(["subscriptions", *home]) == 0
    assert capsys.readouterr().out.split() == ["by_author"]


def test_serve_with_a_bad_queries_file_exits_2_and_subscribes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    queries = tmp_path / "bad.xscl"
    queries.write_text(BY_AUTHOR + "broken: S//item->i JOIN;\n", encoding="utf-8")
    home = ["--home", str(tmp_path / "home"), "--name", "job"]
    assert main(["serve", "--queries", str(queries), "--once", *home]) == 2
    err = capsys.readouterr().err
    assert "1 invalid quer(ies) in" in err and f"{queries}:broken:2:24: XSCL-P004" in err
    assert "xscl 0." not in err  # exits before starting Spark
    assert SubscriptionLog(tmp_path / "home" / "registry" / "job").versions() == []


# ------------------------------------------------------------- while running
def _results(output: Path) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for record in read_results(output):
        out.setdefault(record["query"], set()).add(record["result_id"])
    return out


@pytest.mark.spark
def test_subscribe_and_unsubscribe_while_the_query_runs(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = ["--home", str(tmp_path / "home"), "--name", "job"]
    registry = tmp_path / "home" / "registry" / "job"
    spool_path, output = tmp_path / "spool", tmp_path / "out"
    first = tmp_path / "first.xscl"
    first.write_text(BY_AUTHOR + SAME_TAG, encoding="utf-8")
    later = tmp_path / "later.xscl"
    later.write_text(FOLLOW, encoding="utf-8")
    assert main(["subscribe", str(first), *home]) == 0
    rounds = [_docs(0, 6), _docs(6, 6), _docs(12, 6)]
    plan = JobPlan(
        spool=str(spool_path),
        registry=str(registry),
        output=str(output),
        checkpoint=str(tmp_path / "checkpoint"),
        name=f"subscriptions_{tmp_path.name}",
        trigger_seconds=0.2,
        state_partitions=2,
        buckets=16,
    )
    spool = Spool(spool_path, sync=False)
    query = start_job(spark, plan)
    try:
        spool.append(rounds[0])
        query.processAllAvailable()
        assert main(["subscribe", str(later), *home]) == 0  # round 1 on
        spool.append(rounds[1])
        query.processAllAvailable()
        assert main(["unsubscribe", "same_tag", *home]) == 0  # round 2 on
        spool.append(rounds[2])
        query.processAllAvailable()
        running_id = query.id
    finally:
        query.stop()
    assert query.exception() is None
    text = BY_AUTHOR + SAME_TAG + FOLLOW
    all_docs = [d for r in rounds for d in r]
    expected = {
        "by_author": _expected(text, all_docs, "by_author"),
        "same_tag": _expected(text, rounds[0] + rounds[1], "same_tag"),
        "follow": _expected(text, rounds[1] + rounds[2], "follow"),
    }
    assert all(expected.values()), "every query has results to compare"
    assert _expected(text, all_docs, "follow") > expected["follow"], "the cut-off matters"
    assert _results(output) == expected
    assert SubscriptionLog(registry).applied() == {1: 0, 2: 6, 3: 12}
    # Restart from the checkpoint twice: the state comes back from Spark's state store,
    # each event is applied at its recorded offset, nothing is replayed on the driver.
    # The subscribe events are compiled first, as ``xscl serve`` does at its start: a
    # worker that registered from the texts and one that loads the table agree.
    assert compile_registry(spark, registry) == [1, 2]
    for restart in range(2):
        extra = _docs(18 + 6 * restart, 6)
        rounds.append(extra)
        spool.append(extra)
        query = start_job(spark, plan)
        try:
            query.processAllAvailable()
            assert query.id == running_id  # the same streaming query, resumed
        finally:
            query.stop()
        assert query.exception() is None
        all_docs = [d for r in rounds for d in r]
        expected["by_author"] = _expected(text, all_docs, "by_author")
        expected["follow"] = _expected(text, [d for r in rounds[1:] for d in r], "follow")
        assert _results(output) == expected, f"restart {restart}"
    spool.close()
