"""``xscl cel check`` and ``xscl cel run`` (the batch contract of ``xscl run``, for events)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xscl.cli.main import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "cel"


def test_check_lists_valid_queries_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cel", "check", str(EXAMPLES / "stocks.cel")]) == 0
    assert "4 valid, 0 invalid" in capsys.readouterr().out


def test_check_prints_each_error_with_its_place_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.cel"
    path.write_text("DECLARE STREAM S(a);\nok: FROM S;\nbad: FROM S NEXT{a > 1} S\n")
    assert main(["cel", "check", str(path)]) == 2
    captured = capsys.readouterr()
    assert f"{path}:bad:3:18: CEL-V002 attribute a is in more than one input" in captured.err
    assert "expected: $1.a, $2.a" in captured.err and "^" in captured.err
    assert "1 valid, 1 invalid" in captured.out
    assert main(["cel", "check", "--json", str(path)]) == 2
    record = json.loads(capsys.readouterr().err.splitlines()[0])
    assert (record["code"], record["line"], record["column"]) == ("CEL-V002", 3, 18)


def test_run_writes_the_same_results_with_either_engine(tmp_path: Path) -> None:
    outputs = {}
    for engine in ("local", "reference"):
        out = tmp_path / f"{engine}.jsonl"
        args = ["cel", "run", "--queries", str(EXAMPLES / "stocks.cel")]
        args += ["--input", str(EXAMPLES / "stocks.jsonl"), "--output", str(out)]
        assert main([*args, "--engine", engine]) == 0
        outputs[engine] = out.read_text()
        dead = [
            json.loads(x)
            for x in (tmp_path / f"{engine}.deadletter.jsonl").read_text().splitlines()
        ]
        assert [(d["code"], d["line"]) for d in dead] == [("CEL-E003", 11)]
    assert outputs["local"] == outputs["reference"]
    records = [json.loads(line) for line in outputs["local"].splitlines()]
    assert {r["query"] for r in records} == {"ibm", "ibm_then_msft", "fall_then_rise", "rising"}
    falls = [r for r in records if r["query"] == "fall_then_rise"]
    assert [r["attrs"] for r in falls] == [
        {"Name": "IBM", "MaxPrice": 90, "MinPrice": 81, "FinalPrice": 91}
    ]


def test_run_with_a_reorder_slack_dead_letters_late_events(tmp_path: Path) -> None:
    queries = tmp_path / "q.cel"
    queries.write_text("DECLARE STREAM S(a);\nFROM S NEXT S PUBLISH P")
    events = tmp_path / "e.jsonl"
    lines = [
        {"stream": "S", "end": 10, "attrs": {"a": 1}},
        {"stream": "S", "end": 8, "attrs": {"a": 2}},
        {"stream": "S", "end": 5, "attrs": {"a": 3}},
        {"stream": "P", "end": 11, "attrs": {"a_1": 1, "a": 1}},
        {"stream": "Other", "end": 11, "attrs": {}},
    ]
    events.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp_path / "r.jsonl"
    args = ["cel", "run", "--queries", str(queries), "--input", str(events), "--output", str(out)]
    assert main([*args, "--reorder-slack", "2s"]) == 0
    dead = [json.loads(x) for x in (tmp_path / "r.deadletter.jsonl").read_text().splitlines()]
    assert sorted((d["code"], d["line"]) for d in dead) == [("CEL-E006", 4), ("CEL-E007", 3)]
    results = [json.loads(x) for x in out.read_text().splitlines()]
    assert [(r["attrs"], r["start"][-3:], r["end"][-3:]) for r in results] == [
        ({"a_1": 2, "a": 1}, "08Z", "10Z")
    ]


def test_run_refuses_invalid_queries_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    queries = tmp_path / "q.cel"
    queries.write_text("FROM Nowhere")
    out = tmp_path / "r.jsonl"
    args = ["cel", "run", "--queries", str(queries), "--input", str(EXAMPLES / "stocks.jsonl")]
    assert main([*args, "--output", str(out)]) == 2
    assert "CEL-V004" in capsys.readouterr().err and not out.exists()
    assert main([*args, "--output", str(tmp_path)]) == 2  # invalid queries come first
    queries.write_text("DECLARE STREAM S(a);\nFROM S")
    assert main([*args, "--output", str(tmp_path)]) == 1
    assert "is a directory" in capsys.readouterr().err
    assert main([*args, "--output", str(out), "--reorder-slack", "soon"]) == 2


@pytest.mark.parametrize("engine", ["local", "reference"])
def test_a_bad_query_never_affects_the_others(
    engine: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 38: one file, two bad queries among the good ones of stocks.cel: each bad
    one's coded error with its line and column, the results of the others equal to the
    reference's on those alone, and exit 2 (as ``xscl cel check`` of the same file)."""
    good = (EXAMPLES / "stocks.cel").read_text()
    head, tail = good.split("-- Example 14")
    line = head.count("\n") + 1
    mixed = tmp_path / "mixed.cel"
    mixed.write_text(
        head + "broken: SELECT Price AS FROM Stock;\nnowhere: FROM Nowhere;\n-- Example 14" + tail
    )
    events = str(EXAMPLES / "stocks.jsonl")
    alone = tmp_path / "alone.jsonl"
    args = ["cel", "run", "--input", events, "--output", str(alone), "--engine", "reference"]
    assert main([*args, "--queries", str(EXAMPLES / "stocks.cel")]) == 0
    capsys.readouterr()
    out = tmp_path / "mixed.jsonl"
    args = ["cel", "run", "--input", events, "--output", str(out), "--engine", engine]
    assert main([*args, "--queries", str(mixed)]) == 2
    err = capsys.readouterr().err
    assert f"{mixed}:broken:{line}:25: CEL-P010 " in err
    assert f"{mixed}:nowhere:{line + 1}:15: CEL-V004 " in err
    assert "2 error(s) above" in err and "Traceback" not in err
    assert out.read_text() == alone.read_text()
    assert {json.loads(r)["query"] for r in out.read_text().splitlines()} == {
        "ibm", "ibm_then_msft", "fall_then_rise", "rising"
    }  # fmt: skip
    assert main(["cel", "check", str(mixed)]) == 2


def test_explain_prints_the_merged_automaton(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cel", "explain", str(EXAMPLES / "stocks.cel")]) == 0
    merged = capsys.readouterr().out
    assert "FOLD state reading Stock" in merged and "filter e.Name = S" in merged
    assert "fall_then_rise" in merged and "ibm PUBLISH IBMStock" in merged
    assert main(["cel", "explain", "--no-merging", str(EXAMPLES / "stocks.cel")]) == 0
    separate = capsys.readouterr().out
    assert int(separate.split()[0]) >= int(merged.split()[0])
