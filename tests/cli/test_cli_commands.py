"""The command line under the batch contract of spec section 4, on the shipped examples."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from xscl.cli.main import main
from xscl.cli.run import ENGINES

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def _records(path: Path) -> list[dict[str, object]]:
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines]


def _keyed(records: list[dict[str, object]]) -> dict[object, dict[str, object]]:
    return {r["result_id"]: r for r in records}


@pytest.mark.parametrize("engine", [e for e in sorted(ENGINES) if e != "spark"])
@pytest.mark.parametrize("example", ["thesis", "rss"])
def test_run_gives_the_expected_results(engine: str, example: str, tmp_path: Path) -> None:
    folder = EXAMPLES / example
    out = tmp_path / "results.jsonl"
    code = main(["run", "--engine", engine, "--queries", str(folder / "queries.xscl"),
                 "--input", str(folder / "documents.jsonl"), "--output", str(out)])
    assert code == 0
    expected = _keyed(_records(folder / "expected-results.jsonl"))
    assert _keyed(_records(out)) == expected
    assert (tmp_path / "results.deadletter.jsonl").exists()


def test_thesis_example_has_one_result_for_q1_and_q2_and_none_for_q3(tmp_path: Path) -> None:
    records = _records(EXAMPLES / "thesis" / "expected-results.jsonl")
    assert sorted(str(r["query"]) for r in records) == ["Q1", "Q2"]
    q1 = next(r for r in records if r["query"] == "Q1")
    # d1: announcement=0 publisher=1 book=2 title=3 author=4 author=5; d2: blog=0 title=1 author=2
    assert q1["nodes"] == {"x2": "5", "x3": "3", "x5": "2", "x6": "1"}
    assert q1["values"] == {"x2": "Danny Ayers", "x3": "Semantic Web Programming",
                            "x5": "Danny Ayers", "x6": "Semantic Web Programming"}
    assert [d["docid"] for d in q1["docs"]] == ["d1", "d2"]  # type: ignore[union-attr]


@pytest.mark.parametrize("engine", [e for e in sorted(ENGINES) if e != "spark"])
def test_malformed_documents_go_to_dead_letters_and_the_run_goes_on(
    engine: str, tmp_path: Path
) -> None:
    docs = tmp_path / "docs.jsonl"
    good = (EXAMPLES / "thesis" / "documents.jsonl").read_text(encoding="utf-8").splitlines()
    bad = [
        json.dumps({"stream": "S", "docid": "broken", "ts": "2009-04-01T09:10:00Z",
                    "xml": "<book><author>x</book>"}),
        json.dumps({"stream": "S", "docid": "badts", "ts": "yesterday", "xml": "<a/>"}),
        "this is not json",
    ]
    docs.write_text("\n".join([good[0], *bad, good[1]]) + "\n", encoding="utf-8")
    out = tmp_path / "r.jsonl"
    code = main(["run", "--engine", engine, "--queries",
                 str(EXAMPLES / "thesis" / "queries.xscl"),
                 "--input", str(docs), "--output", str(out)])
    assert code == 0
    assert sorted(str(r["query"]) for r in _records(out)) == ["Q1", "Q2"]
    dead = _records(tmp_path / "r.deadletter.jsonl")
    assert len(dead) == 3
    assert all(d.get("reason") for d in dead)


@pytest.mark.parametrize("engine", [e for e in sorted(ENGINES) if e != "spark"])
def test_an_invalid_query_writes_nothing_and_exits_2(
    engine: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    queries = tmp_path / "q.xscl"
    queries.write_text(
        "ok: S//a->x JOIN {x=y, 1h} S//b->y;\nbad: S//a->x JOIN {x=z, 1h} S//b->y;\n"
    )
    out = tmp_path / "r.jsonl"
    code = main(["run", "--engine", engine, "--queries", str(queries),
                 "--input", str(EXAMPLES / "thesis" / "documents.jsonl"), "--output", str(out)])
    assert code == 2
    assert not out.exists()
    err = capsys.readouterr().err
    assert "bad" in err and "XSCL-V001" in err


def test_check_reports_every_bad_query_with_position(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    queries = tmp_path / "q.xscl"
    queries.write_text(
        "good: S//a->x JOIN {x=y, 1h} S//b->y;\n"
        "oops: S//a->x FOLLOWED {x=y, 1h} S//b->y;\n"
        "good2: S//a->x JOIN {x=y, 2 d} S//b->y;\n"
        "late: S//a->x JOIN {x=y, 1 week} S//b->y;\n"
    )
    assert main(["check", str(queries)]) == 2
    captured = capsys.readouterr()
    assert "oops:2:" in captured.err and "late:4:" in captured.err
    assert "2 valid, 2 invalid" in captured.out
    assert main(["check", str(EXAMPLES / "thesis" / "queries.xscl")]) == 0


def test_a_join_that_grows_without_bound_is_accepted_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    queries = tmp_path / "q.xscl"
    queries.write_text(
        "all: S//a->x\n  FOLLOWED BY {TRUE, INF} S//b->y;\nhour: S//a->x JOIN {TRUE, 1h} S//b->y;\n"
    )
    assert main(["check", str(queries)]) == 0
    said = capsys.readouterr().err.splitlines()
    assert said == [
        "xscl check: warning: all (line 2, column 3): FOLLOWED BY {TRUE, INF} pairs every two "
        "documents of its sides and keeps them all; give it a window or a value condition"
    ]
    assert main(["subscribe", str(queries), "--home", str(tmp_path / "home")]) == 0
    assert capsys.readouterr().err.splitlines() == [said[0].replace("check", "subscribe", 1)]


def test_check_with_a_stream_catalog_rejects_unknown_streams(tmp_path: Path) -> None:
    queries = tmp_path / "q.xscl"
    queries.write_text("S//a->x JOIN {x=y, 1h} T//b->y;\n")
    assert main(["check", "--stream", "S", "--stream", "T", str(queries)]) == 0
    assert main(["check", "--stream", "S", str(queries)]) == 2


def test_explain_shows_normal_form_and_sharing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", str(EXAMPLES / "thesis" / "queries.xscl")]) == 0
    out = capsys.readouterr().out
    assert "S//book/author" in out
    assert "Q1.x2" in out and "Q2.x2" in out


def test_explain_says_where_the_job_evaluates_each_query(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["explain", str(EXAMPLES / "rss" / "queries.xscl")]) == 0
    where = capsys.readouterr().out.split("Where `xscl serve` evaluates each query")[1]
    lines = dict(line.strip().split(": ", 1) for line in where.splitlines()[1:] if line.strip())
    assert lines["advisory_coverage"] == "the value groups, partitioned by the value of cve = term"
    assert lines["busy_author"] == (
        "the value groups, partitioned by the value of a1 = a2; its results are documents "
        "of busy_authors from the next micro-batch"
    )
    assert lines["busy_then_release"] == (
        "the value groups, partitioned by time buckets of its window"
    )


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    args = ["run", "--queries", str(EXAMPLES / "thesis" / "queries.xscl"),
            "--output", str(tmp_path / "o.jsonl")]
    assert main([*args, "--input", str(tmp_path / "missing.jsonl")]) == 2
    assert main([*args, "--input", str(EXAMPLES / "thesis" / "documents.jsonl"),
                 "--allowed-lateness", "soon"]) == 2
    assert main([*args, "--input", str(EXAMPLES / "thesis" / "documents.jsonl"),
                 "--allowed-lateness", "\u0665s"]) == 2  # Arabic-Indic 5: ASCII digits only
    assert main([]) == 2


def test_demo_batch_part_agrees_with_reference_and_expected(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from xscl.demo import main as demo_main

    assert demo_main(["--no-spark"]) == 0
    out = capsys.readouterr().out
    assert out.count("matches the reference evaluator and expected-results.jsonl") == 2


@pytest.mark.parametrize("umask", [0o022, 0o077])
@pytest.mark.parametrize(
    "command",
    [["run", "--engine", "local"], ["run", "--engine", "reference"], ["cel", "run"]],
    ids=lambda c: "-".join(c),
)
def test_outputs_get_the_mode_the_umask_gives(
    command: list[str], umask: int, tmp_path: Path
) -> None:
    """Issue 36, defect 16: every output was 0600 whatever the umask (mkstemp's mode)."""
    cel = command[0] == "cel"
    queries = EXAMPLES / ("cel/stocks.cel" if cel else "thesis/queries.xscl")
    docs = EXAMPLES / ("cel/stocks.jsonl" if cel else "thesis/documents.jsonl")
    out = tmp_path / "results.jsonl"
    previous = os.umask(umask)
    try:
        assert main([*command, "--queries", str(queries), "--input", str(docs),
                     "--output", str(out)]) == 0  # fmt: skip
    finally:
        os.umask(previous)
    for path in (out, tmp_path / "results.deadletter.jsonl"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask, path.name
