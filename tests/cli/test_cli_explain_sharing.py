"""``xscl explain --sharing``: a file's groups in process, and the errors said before Spark
starts (the registry's groups on Spark: tests/spark/test_spark_sharing.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from xscl.cli import explain_sharing
from xscl.cli.main import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def no_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if the command would start Spark."""

    def refuse(_args: Any) -> Any:
        raise AssertionError("Spark was started")

    monkeypatch.setattr(explain_sharing, "_session", refuse)


def test_the_sharing_groups_of_a_file(capsys: pytest.CaptureFixture[str], no_spark: None) -> None:
    queries = str(EXAMPLES / "rss" / "queries.xscl")
    assert main(["explain", "--sharing", queries]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"sharing groups of {queries}\n")
    assert "found by union-find (in process)" in out
    assert main(["explain", "--sharing", queries, "--json", "--top", "1"]) == 0
    summary = json.loads(capsys.readouterr().out)
    # the PUBLISHed stream joins its publisher and readers into one group
    assert (summary["queries"], summary["groups"], summary["published_streams"]) == (4, 2, 1)
    assert summary["largest"] == [
        {"size": 3, "templates": 2, "definitions": 5,
         "qids": ["advisory_coverage", "busy_author", "busy_then_release"]}
    ]  # fmt: skip


def test_a_file_with_errors_is_summarised_without_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_spark: None
) -> None:
    queries = tmp_path / "q.xscl"
    queries.write_text(
        "good: S//a->x JOIN {x=y, 1h} T//b->y;\nbad: S//a->x JOIN {x=z, 1h} T//b->y;\n"
    )
    assert main(["explain", "--sharing", str(queries), "--json"]) == 2
    captured = capsys.readouterr()
    assert "XSCL-V001" in captured.err and json.loads(captured.out)["queries"] == 1


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--home", "{home}"], "XSCL-S015"),  # the home does not exist
        (["--home", "{tmp}"], "XSCL-S015"),  # a home without the job's registry
        (["--home", "{tmp}", "--name", "empty"], "XSCL-S015"),  # a registry without events
        (["{file}", "--home", "{tmp}"], "not both"),
        ([], "not both"),
        (["{file}", "--top", "-1"], "--top"),
    ],
)
def test_what_cannot_be_explained_exits_2_in_one_line(
    args: list[str], says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], no_spark: None
) -> None:
    (tmp_path / "registry" / "empty").mkdir(parents=True)
    values = {"home": str(tmp_path / "missing"), "tmp": str(tmp_path),
              "file": str(EXAMPLES / "thesis" / "queries.xscl")}  # fmt: skip
    assert main(["explain", "--sharing", *(a.format(**values) for a in args)]) == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_explain_without_sharing_needs_a_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain"]) == 2
    assert "give a query FILE" in capsys.readouterr().err
