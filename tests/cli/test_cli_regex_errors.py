"""Invalid regular expressions are refused at ``xscl check`` and ``xscl subscribe``.

``\\b``, ``(?i)`` and look-around are not XPath regex syntax (F&O 7.6.1):
such a predicate would fail on every document, so it would never match.
It is refused with ``XSCL-V010`` at the line and column of the offending
character of the pattern; the other queries of the file are unaffected.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from xscl.cli.main import main

GOOD = "ok: F//item->x[contains(title, 'rust')] JOIN {x = y, 1h} F//item->y;\n"
BAD = (
    "b1: F//item->x[matches(title, '\\bword\\b')] JOIN {x = y, 1h} F//item->y;\n"
    "b2: F//item->x[matches(title, 'rust(?i)')] JOIN {x = y, 1h} F//item->y;\n"
    "b3: F//item->x\n"
    "    [matches(description, 'a(?=b)', 'i')] JOIN {x = y, 1h} F//item->y;\n"
    "b4: F//item->x[contains(title, 'x')][matches(title, 'go', 'iq')]"
    " JOIN {x = y, 1h} F//item->y;\n"
)
#: (query id, line, column) of each error: the offending character, or the flags
WHERE = [("b1", 2, 32), ("b2", 3, 36), ("b3", 5, 29), ("b4", 6, 59)]


def _errors(err: str) -> list[tuple[str, int, int]]:
    found = []
    for line in err.splitlines():
        if "XSCL-V010" in line:
            location = line.split(": XSCL-V010")[0]
            _path, qid, row, column = location.rsplit(":", 3)
            found.append((qid, int(row), int(column)))
    return found


def test_check_refuses_invalid_regexes_with_their_positions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    queries = tmp_path / "q.xscl"
    queries.write_text(GOOD + BAD, encoding="utf-8")
    assert main(["check", str(queries)]) == 2
    out, err = capsys.readouterr()
    assert _errors(out + err) == WHERE
    assert "1 valid, 4 invalid" in out


def test_subscribe_refuses_invalid_regexes_and_adds_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    queries = tmp_path / "q.xscl"
    queries.write_text(GOOD + BAD, encoding="utf-8")
    home = ["--home", str(tmp_path / "home"), "--name", "job"]
    assert main(["subscribe", str(queries), *home]) == 2
    out, err = capsys.readouterr()
    assert _errors(out + err) == WHERE
    good = tmp_path / "good.xscl"
    good.write_text(GOOD, encoding="utf-8")
    assert main(["subscribe", str(good), *home]) == 0
    capsys.readouterr()
    assert main(["subscriptions", *home]) == 0
    assert capsys.readouterr().out.split() == ["ok"]


def test_a_refused_pattern_is_shown_as_the_query_wrote_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not Python's repr: one backslash, and a quote doubled as XPath doubles it."""
    queries = tmp_path / "q.xscl"
    queries.write_text("Q: S//item[matches(title, '\\bit''s')];\n", encoding="utf-8")
    assert main(["check", str(queries)]) == 2
    out, err = capsys.readouterr()
    assert "the pattern '\\bit''s' of matches():" in out + err
