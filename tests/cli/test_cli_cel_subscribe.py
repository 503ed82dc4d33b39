"""``xscl cel subscribe`` / ``xscl cel unsubscribe``: a job's CEL registry (docs/cel.md 10.7).

No job runs here: the events are recorded for the next start (what a running job
does with them is tests/spark/test_spark_cel_subscriptions.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xscl.cli.main import main
from xscl.service.cel_subscriptions import CelSubscriptionLog, cel_registry

DECLARE = "DECLARE STREAM S(a, b);\n"


def _write(folder: Path, name: str, text: str) -> str:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def _ids(home: Path) -> list[str]:
    return CelSubscriptionLog(cel_registry(home, "xscl"), {}).live().ids()


def test_subscribe_records_the_queries_for_the_next_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    first = _write(tmp_path, "first.cel", DECLARE + "x: FROM S NEXT{$2.a = $1.a} S")
    assert main(["cel", "subscribe", first, "--home", str(home)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("subscribed x (CEL registry event 1 in ")
    more = _write(tmp_path, "more.cel", DECLARE + "y: FROM FILTER{b = 1}(S)")
    assert main(["cel", "subscribe", more, "--home", str(home)]) == 0
    assert _ids(home) == ["x", "y"]
    event = json.loads((cel_registry(home, "xscl") / "00000002.json").read_text())
    assert (event["op"], event["ids"]) == ("subscribe", ["y"])


def test_a_bad_query_is_rejected_with_its_code_and_the_others_are_subscribed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    text = DECLARE + "good: FROM S NEXT S;\nbad: FROM S NEXT{$2.nope = $1.a} S"
    path = _write(tmp_path, "mixed.cel", text)
    assert main(["cel", "subscribe", path, "--home", str(home)]) == 2
    captured = capsys.readouterr()
    assert "mixed.cel:bad:3:18: CEL-V001" in captured.err and "CEL-V001" in captured.err
    assert "Traceback" not in captured.err
    assert captured.out.startswith("subscribed good ")
    assert _ids(home) == ["good"]


def test_a_taken_id_is_rejected_and_a_file_without_a_valid_query_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    path = _write(tmp_path, "q.cel", DECLARE + "q: FROM S NEXT S")
    assert main(["cel", "subscribe", path, "--home", str(home)]) == 0
    capsys.readouterr()
    assert main(["cel", "subscribe", path, "--home", str(home)]) == 2
    err = capsys.readouterr().err
    assert "CEL-S001" in err and "nothing was subscribed" in err
    assert CelSubscriptionLog(cel_registry(home, "xscl"), {}).versions() == [1]


def test_a_stream_declared_with_other_attributes_is_cel_s002(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    assert main(["cel", "subscribe", _write(tmp_path, "a.cel", DECLARE + "a: FROM S NEXT S"),
                 "--home", str(home)]) == 0  # fmt: skip
    other = _write(tmp_path, "b.cel", "DECLARE STREAM S(a, c);\nb: FROM FILTER{c = 1}(S)")
    assert main(["cel", "subscribe", other, "--home", str(home)]) == 2
    err = capsys.readouterr().err
    assert "CEL-S002" in err and "Traceback" not in err
    assert _ids(home) == ["a"]


def test_a_query_that_cannot_join_a_keyed_class_is_cel_s005(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """k0's class is partitioned by S.a and P.a; a reader of P keyed by b cannot join it."""
    home = tmp_path / "home"
    keyed = DECLARE + "k0: SELECT a, b FROM S NEXT{$2.a = $1.a} S PUBLISH P"
    assert main(["cel", "subscribe", _write(tmp_path, "k.cel", keyed), "--home", str(home)]) == 0
    reader = _write(tmp_path, "r.cel", DECLARE + "r: FROM P NEXT{$2.b = $1.b} S")
    assert main(["cel", "subscribe", reader, "--home", str(home)]) == 2
    err = capsys.readouterr().err
    assert "CEL-S005" in err and "cannot join the running job's groups" in err
    assert _ids(home) == ["k0"]


def test_unsubscribe_removes_ids_and_refuses_unknown_ones_and_read_streams(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    text = DECLARE + "p: SELECT a, b FROM S NEXT S PUBLISH P;\nr: FROM P NEXT S;\nz: FROM S NEXT S"
    assert main(["cel", "subscribe", _write(tmp_path, "q.cel", text), "--home", str(home)]) == 0
    capsys.readouterr()
    assert main(["cel", "unsubscribe", "nope", "--home", str(home)]) == 2
    assert "CEL-S003" in capsys.readouterr().err
    assert main(["cel", "unsubscribe", "p", "--home", str(home)]) == 2
    err = capsys.readouterr().err
    assert "CEL-S004" in err and "r read(s)" in err
    assert main(["cel", "unsubscribe", "z", "--home", str(home)]) == 0
    assert capsys.readouterr().out.startswith("unsubscribed z (CEL registry event 2 in ")
    assert main(["cel", "unsubscribe", "r", "p", "--home", str(home)]) == 0
    assert _ids(home) == []


def test_an_unwritable_home_is_exit_1_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    path = _write(tmp_path, "q.cel", DECLARE + "q: FROM S NEXT S")
    assert main(["cel", "subscribe", path, "--home", str(blocker / "home")]) == 1
    err = capsys.readouterr().err
    assert "cannot write the job's CEL registry" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
