"""CLI errors a user can act on: one line naming the path or the query, an exit code.

Exit codes: 0 success, 1 I/O (a path cannot be written, no feed could be read),
2 usage or invalid input.  Tests run as root, where ``chmod`` stops nothing, so
an unwritable path is one *under a regular file* (``some_file/sub``): creating
a directory there fails with ENOTDIR for any user.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from xscl.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def _blocked(tmp_path: Path) -> Path:
    """A regular file: any path under it cannot be created (even by root)."""
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory\n")
    return blocker


def _one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


# -- validation: the caret is under the unbound variable -------------------------------


def test_check_points_the_caret_at_the_unbound_variable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    queries = tmp_path / "q.xscl"
    queries.write_text("Q1: S//a->x\n  FOLLOWED BY {x = y1, 1h}\n  T//b->y\n")
    assert main(["check", str(queries)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].endswith("Q1:2:20: XSCL-V001 unbound variable 'y1' in the join predicate "
                           "(expected: x, y)")
    assert err[1:3] == ["    FOLLOWED BY {x = y1, 1h}", " " * 21 + "^"]


# -- dead letters name one line number: the file's ------------------------------------


@pytest.mark.parametrize("engine", ["local", "reference"])
def test_dead_letters_name_the_file_line_only(engine: str, tmp_path: Path) -> None:
    good = (EXAMPLES / "thesis" / "documents.jsonl").read_text(encoding="utf-8").splitlines()
    lines = [
        good[0],
        "",  # blank lines are skipped but counted
        "this is not json",  # line 3
        '{"stream": "S", "docid": "x", "ts": 1, "xml": "<a>"}',  # line 4: bad XML
        '{"stream": "S", "docid": "y", "ts": 1, "xml": "<a/>",}',  # line 5: trailing comma
    ]
    docs = tmp_path / "docs.jsonl"
    docs.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "r.jsonl"
    code = main(["run", "--engine", engine, "--queries", str(EXAMPLES / "thesis" / "queries.xscl"),
                 "--input", str(docs), "--output", str(out)])
    assert code == 0
    dead = [json.loads(line) for line in (tmp_path / "r.deadletter.jsonl").read_text().splitlines()]
    assert [d["line"] for d in dead] == [3, 4, 5]
    assert dead[0]["reason"].endswith("not valid JSON: Expecting value at column 1")
    assert dead[2]["reason"].endswith(
        "not valid JSON: Expecting property name enclosed in double quotes at column 54"
    )
    for letter in (dead[0], dead[2]):
        assert "line 1" not in letter["reason"] and "char" not in letter["reason"]


# -- run: an --output that cannot be written --------------------------------------------


@pytest.mark.parametrize("engine", ["local", "reference"])
def test_run_with_an_output_under_a_file_exits_1_in_one_line(
    engine: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Unwritable --output: a path under a regular file (root cannot create it either)."""
    out = _blocked(tmp_path) / "sub" / "results.jsonl"
    code = main(["run", "--engine", engine, "--queries", str(EXAMPLES / "thesis" / "queries.xscl"),
                 "--input", str(EXAMPLES / "thesis" / "documents.jsonl"), "--output", str(out)])
    assert code == 1
    line = _one_line(capsys.readouterr().err)
    assert line == (
        f"xscl run: cannot write --output {out}: {tmp_path / 'a_file'} is a file, not a "
        "directory; give --output a file path in a directory you can write to"
    )


def test_run_with_a_read_only_output_folder_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only folder, simulated: ``os.access`` says no (root would pass a chmod)."""
    folder = tmp_path / "ro"
    folder.mkdir()
    real_access = os.access
    monkeypatch.setattr(
        os, "access", lambda p, mode: False if Path(p) == folder else real_access(p, mode)
    )
    code = main(["run", "--queries", str(EXAMPLES / "thesis" / "queries.xscl"),
                 "--input", str(EXAMPLES / "thesis" / "documents.jsonl"),
                 "--output", str(folder / "r.jsonl")])
    assert code == 1
    line = _one_line(capsys.readouterr().err)
    assert f"cannot write --output {folder / 'r.jsonl'}: {folder} is not writable" in line
    assert list(folder.iterdir()) == []
