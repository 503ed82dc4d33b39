"""CEL subscriptions are data on Spark too (issue 38, deliverable 3; docs/cel.md 10.7).

The CEL streaming query (``cel.plan``, what ``xscl serve --cel-queries`` runs) is
driven by availableNow runs of one checkpoint, with CEL queries subscribed and
unsubscribed in its registry (``service.cel_subscriptions``) between them. Each
query must commit exactly the reference's results over the events of the epochs
processed while it was subscribed: from the job's watermark when it took effect
(the clock before that batch, slack 0) to the watermark when it was removed. A
query that reads a stream PUBLISHed by a query subscribed earlier sees that
stream's events from its start on, whatever their own inputs' times.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.spark.cel_events import dead_letters, generated_events, publish
from tests.spark.served import QUERIES
from xscl.cli.main import main as cli_main
from xscl.connectors.spool import Spool
from xscl.events.envelope import Event
from xscl.events.event_folder import events_folder
from xscl.events.reference import evaluate
from xscl.events.results import Result
from xscl.lang.cel.parser import parse_file
from xscl.lang.cel.validation import validate
from xscl.results.read import read_results
from xscl.service.cel_subscriptions import CelSubscriptionLog
from xscl.spark_plugin.cel.batch import result_of
from xscl.spark_plugin.cel.plan import CelPlan, start_cel_job
from xscl.spark_plugin.submit import main as serve_main

pytestmark = pytest.mark.spark

DECLARE = "DECLARE STREAM S(a, b);\nDECLARE STREAM T(a, b, c);\n"
FIRST = {
    "k0": "SELECT a, b FROM S NEXT{$1.a = $2.a AND $2.b > $1.b} S PUBLISH P",
    "k1": "FROM P NEXT{$2.a = $1.a} T",
    "g0": "FROM S NEXT{$2.b > $1.b} T",
}
#: Subscribed at the second run: a new keyed class (k2), a reader of k0's P that joins
#: k0's class (k3), a new class of its own (f0), and a query with an error.
SECOND = {
    "k2": "FROM (SELECT a, b, 0 AS n FROM S) FOLD{$2.a = $.a, $2.b >= $.b, $.n + 1 AS n} S",
    "k3": "FROM P NEXT{$2.a = $1.a AND $2.b < $1.b} S",
    "f0": "FROM FILTER{b = 2}(T)",
    "bad": "FROM S NEXT{$2.nope = $1.a} S",
}
#: Subscribed alone at the fourth run, with no new event.
FOURTH = {"g1": "FROM S NEXT{$2.b < $1.b} T"}
SEC = 1_000_000


def _file(queries: dict[str, str]) -> str:
    return DECLARE + "".join(f"{qid}: {text};\n" for qid, text in queries.items())


def _reference(qid: str, events: Sequence[Event], low: int, high: int) -> set[Result]:
    """The reference's results of ``qid`` over the events ending in ``[low, high)``; a
    reader of P gets k0's P events of that range, computed over every earlier event."""
    window = [e for e in events if low <= e.end < high]
    text = DECLARE
    if qid in ("k1", "k3"):
        program, errors = validate(parse_file(_file({"k0": FIRST["k0"]})))
        assert not errors
        published = evaluate(program, [e for e in events if e.end < high])
        window += [Event("P", r.start, r.end, dict(r.attrs)) for r in published if r.end >= low]
        text += "DECLARE STREAM P(a, b);\n"
    query = {**FIRST, **SECOND, **FOURTH}[qid]
    program, errors = validate(parse_file(f"{text}{qid}: {query};\n"))
    assert not errors, errors
    return {r for r in evaluate(program, window) if r.query == qid}


def _batches(offsets: Path) -> int:
    """How many micro-batches Spark's offset log holds."""
    return sum(1 for p in offsets.iterdir() if p.name.isdigit())


def _run(spark: object, plan: CelPlan) -> None:
    """One availableNow run of the job's checkpoint."""
    query = start_cel_job(spark, plan)
    query.awaitTermination()
    assert query.exception() is None, query.exception()


def test_cel_queries_subscribed_and_unsubscribed_while_the_job_runs(
    spark: object, tmp_path: Path
) -> None:
    events = sorted(generated_events(7), key=lambda e: e.end)
    files = [
        [e for e in events if e.end <= 6 * SEC],
        [e for e in events if 6 * SEC < e.end <= 13 * SEC],
        [e for e in events if 13 * SEC < e.end <= 17 * SEC],
        [e for e in events if e.end > 17 * SEC],
    ]
    log = CelSubscriptionLog(tmp_path / "registry", {})
    first, errors = log.subscribe(_file(FIRST), source="first.cel")
    assert first is not None and not errors
    plan = CelPlan(
        cel_registry=str(log.folder),
        catalog=log.catalog_json,
        output=str(tmp_path / "results"),
        checkpoint=str(tmp_path / "checkpoint"),
        name=f"xscl_cel_subscriptions_{uuid.uuid4().hex}",
        events=str(tmp_path / "events"),
        once=True,
    )
    offsets = tmp_path / "checkpoint" / "offsets"

    publish(tmp_path / "events", files[0])
    _run(spark, plan)  # clock 6 s: epochs below it processed

    second, errors = log.subscribe(_file(SECOND), source="second.cel")
    assert second is not None and list(second.ids) == ["k2", "k3", "f0"]
    assert [(e.code, e.qid) for e in errors] == [("CEL-V001", "bad")]
    log.unsubscribe(["g0"])
    publish(tmp_path / "events", files[1])
    _run(spark, plan)  # k2, k3, f0 from 6 s; g0 until 6 s; clock 13 s

    log.unsubscribe(["f0"])
    publish(tmp_path / "events", files[2])
    _run(spark, plan)  # f0 until 13 s; clock 17 s

    batches = _batches(offsets)
    fourth, errors = log.subscribe(_file(FOURTH), source="fourth.cel")
    assert fourth is not None and not errors
    _run(spark, plan)  # no event: a batch of ticks alone subscribes g1 from 17 s
    assert _batches(offsets) == batches + 1

    publish(tmp_path / "events", files[3])
    _run(spark, plan)  # clock 20 s: every epoch below it processed

    assert dead_letters(tmp_path / "results") == []
    records = list(read_results(tmp_path / "results", key="id"))
    got = {result_of(r) for r in records}
    assert len(got) == len(records)
    end = max(e.end for e in events)
    windows = {
        "k0": (-(2**62), end),
        "k1": (-(2**62), end),
        "g0": (-(2**62), 6 * SEC),
        "k2": (6 * SEC, end),
        "k3": (6 * SEC, end),
        "f0": (6 * SEC, 13 * SEC),
        "g1": (17 * SEC, end),
    }
    for qid, (low, high) in windows.items():
        expected = _reference(qid, events, low, high)
        assert expected, f"{qid}: the workload finds nothing in its window"
        assert {r for r in got if r.query == qid} == expected, qid
    assert {r.query for r in got} == set(windows)


def test_a_replayed_batch_runs_with_the_registry_events_its_offsets_logged(
    spark: object, tmp_path: Path
) -> None:
    """A batch whose commit is lost (the job killed after its results, before Spark logged
    it) is replayed with the registry version of its logged offsets: an event written
    meanwhile takes effect at the next batch, as it would have without the crash."""
    events = sorted(generated_events(7), key=lambda e: e.end)
    log = CelSubscriptionLog(tmp_path / "registry", {})
    log.subscribe(_file(FIRST), source="first.cel")
    plan = CelPlan(
        cel_registry=str(log.folder),
        catalog=log.catalog_json,
        output=str(tmp_path / "results"),
        checkpoint=str(tmp_path / "checkpoint"),
        name=f"xscl_cel_replay_{uuid.uuid4().hex}",
        events=str(tmp_path / "events"),
        once=True,
    )
    publish(tmp_path / "events", [e for e in events if e.end <= 6 * SEC])
    _run(spark, plan)
    log.subscribe(_file({"k2": SECOND["k2"]}), source="k2.cel")
    publish(tmp_path / "events", [e for e in events if 6 * SEC < e.end <= 13 * SEC])
    _run(spark, plan)  # batch 1: k2 from 6 s
    commits = tmp_path / "checkpoint" / "commits"
    for lost in (commits / "1", commits / ".1.crc"):
        lost.unlink(missing_ok=True)
    log.subscribe(_file({"f0": SECOND["f0"]}), source="f0.cel")
    _run(spark, plan)  # batch 1 again, with k2 only; batch 2: f0 from 13 s
    assert (commits / "1").is_file()  # replayed and committed again
    publish(tmp_path / "events", [e for e in events if e.end > 13 * SEC])
    _run(spark, plan)

    records = list(read_results(tmp_path / "results", key="id"))
    got = {result_of(r) for r in records}
    assert len(got) == len(records)
    end = max(e.end for e in events)
    windows = {
        "k0": (-(2**62), end),
        "k1": (-(2**62), end),
        "g0": (-(2**62), end),
        "k2": (6 * SEC, end),
        "f0": (13 * SEC, end),
    }
    for qid, (low, high) in windows.items():
        expected = _reference(qid, events, low, high)
        assert expected, f"{qid}: the workload finds nothing in its window"
        assert {r for r in got if r.query == qid} == expected, qid


def test_serve_runs_a_cel_subscription_recorded_while_no_job_ran(
    spark: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``xscl cel subscribe`` with no job running records the event; the next ``xscl serve
    --cel-queries`` (the registry is no longer empty: the file is only checked) runs it
    from its first batch on, beside the queries of the first run, whose state it keeps."""
    events = [e for e in sorted(generated_events(7), key=lambda e: e.end) if e.end <= 13 * SEC]
    home = tmp_path / "home"
    with Spool(home / "spool", sync=False):
        pass  # no documents: the XSCL query beside it has nothing to do
    first = tmp_path / "first.cel"
    first.write_text(_file(FIRST), encoding="utf-8")
    options = ["--queries", str(QUERIES), "--home", str(home), "--cel-queries", str(first),
               "--quiet", "--once"]  # fmt: skip
    publish(events_folder(home, "xscl"), [e for e in events if e.end <= 6 * SEC])
    assert serve_main(options) == 0
    more = tmp_path / "more.cel"
    more.write_text(_file({"f0": SECOND["f0"], **FOURTH}), encoding="utf-8")
    assert cli_main(["cel", "subscribe", str(more), "--home", str(home)]) == 0
    publish(events_folder(home, "xscl"), [e for e in events if e.end > 6 * SEC])
    capsys.readouterr()
    assert serve_main(options) == 0
    assert "--cel-queries" in capsys.readouterr().err  # "... is only checked"

    got = {result_of(r) for r in read_results(home / "results" / "xscl.cel", key="id")}
    end = 13 * SEC
    windows = {
        "k0": (-(2**62), end),
        "k1": (-(2**62), end),
        "g0": (-(2**62), end),
        "f0": (6 * SEC, end),
        "g1": (6 * SEC, end),
    }
    for qid, (low, high) in windows.items():
        expected = _reference(qid, events, low, high)
        assert expected, f"{qid}: the workload finds nothing in its window"
        assert {r for r in got if r.query == qid} == expected, qid
    assert {r.query for r in got} == set(windows)
