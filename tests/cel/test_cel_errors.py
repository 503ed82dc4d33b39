"""CEL's errors (docs/cel.md section 7): one fixture per code, each saying what it expects.

A fixture starts with one line ``-- expect: CODE QID LINE:COLUMN EXPECTED`` per
error it must produce (in order), where QID is ``-`` for an error outside any
query and EXPECTED is the error's ``expected`` list joined with ``, `` (empty
when it has none).
"""

from __future__ import annotations

import pickle
import re
from pathlib import Path

import pytest

from xscl.errors import (
    CEL_ERROR_CODES,
    XsclError,
    XsclSyntaxError,
    XsclValidationError,
)
from xscl.lang.cel.parser import parse_file, parse_query
from xscl.lang.cel.validation import validate
from xscl.lang.source import decode_source

FIXTURES = Path(__file__).parent / "fixtures" / "errors"
DOC = Path(__file__).resolve().parents[2] / "docs" / "cel.md"
_HEADER = re.compile(r"-- expect: (\S+) (\S+) (\d+):(\d+) ?(.*)")


def _errors(text: str) -> list[XsclError]:
    parsed = parse_file(text, source="f.cel")
    _, problems = validate(parsed, text=text, source="f.cel")
    return [*parsed.errors, *problems]


def _fixture(path: Path) -> tuple[str, list[XsclError]]:
    """A fixture's text (undecodable bytes replaced) and its errors, read as the commands
    read a query file (a file that is not UTF-8 is one error, CEL-P012)."""
    data = path.read_bytes()
    try:
        text = decode_source(data, source="f.cel", code="CEL-P012")
    except XsclSyntaxError as error:
        return data.decode("utf-8", "replace"), [error]
    return text, _errors(text)


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.cel")), ids=lambda p: p.stem)
def test_fixture_error(path: Path) -> None:
    text, errors = _fixture(path)
    headers = [m for m in map(_HEADER.fullmatch, text.splitlines()) if m]
    assert headers, f"{path.name} must start with an '-- expect:' line"
    assert len(errors) == len(headers), [str(e) for e in errors]
    for header, error in zip(headers, errors, strict=True):
        _check(text, header.groups(), error)


def _check(text: str, want: tuple[str, ...], error: XsclError) -> None:
    code, qid, line, column, expected = want
    assert (error.code, error.qid or "-", error.line, error.column) == (
        code,
        qid,
        int(line),
        int(column),
    ), str(error)
    assert ", ".join(error.expected) == expected.strip()
    assert error.source == "f.cel"
    source_line, caret = error.excerpt.split("\n")
    assert source_line == text.splitlines()[int(line) - 1]
    assert caret.index("^") == int(column) - 1
    family = XsclSyntaxError if code.startswith("CEL-P") else XsclValidationError
    assert isinstance(error, family)


def test_every_code_has_a_fixture_and_a_line_in_the_doc() -> None:
    fixtured = {
        _HEADER.fullmatch(_fixture(p)[0].splitlines()[0]).group(1)  # type: ignore[union-attr]
        for p in FIXTURES.glob("*.cel")
    }
    documented = set(re.findall(r"^\| (CEL-[A-Z]\d{3}) \|", DOC.read_text(encoding="utf-8"), re.M))
    query_codes = {code for code in CEL_ERROR_CODES if code[4] in "PV"}  # a query's
    assert fixtured == query_codes and documented == set(CEL_ERROR_CODES)
    assert all(meaning and "\n" not in meaning for meaning in CEL_ERROR_CODES.values())


def test_syntax_errors_are_syntax_errors_and_pickle() -> None:
    with pytest.raises(SyntaxError) as caught:
        parse_query("FROM S NEXT {a = } S")
    error = caught.value
    assert isinstance(error, XsclSyntaxError)
    assert (error.lineno, error.offset) == (1, 18)
    assert pickle.loads(pickle.dumps(error)) == error
    assert error.to_dict()["code"] == "CEL-P003"


def test_one_bad_query_does_not_hide_the_others() -> None:
    text = (
        "DECLARE STREAM S(a);\n"
        "good1: FROM S;\n"
        "bad: FROM FILTER{a = 'x;y' AND}(S) -- ; in a string and a comment\n"
        "  NEXT S;\n"
        "good2: FROM S NEXT{$1.a = $2.a} S;\n"
        "FROM S"
    )
    parsed = parse_file(text)
    assert [q.qid for q in parsed.queries] == ["good1", "good2", "q4"]
    assert [(e.code, e.qid, e.line) for e in parsed.errors] == [("CEL-P003", "bad", 3)]


def test_a_rejected_publisher_makes_its_stream_unknown_to_readers() -> None:
    text = (
        "DECLARE STREAM S(a);\n"
        "p: FROM FILTER{b = 1}(S) PUBLISH P;\n"
        "r: FROM P;\n"
        "ok: FROM S PUBLISH Q;\n"
        "r2: FROM Q"
    )
    program, errors = validate(parse_file(text), text=text)
    assert [(e.code, e.qid) for e in errors] == [("CEL-V001", "p"), ("CEL-V004", "r")]
    assert [q.qid for q in program.queries] == ["ok", "r2"]


def test_a_query_reading_its_own_nested_publish_is_a_cycle() -> None:
    text = "DECLARE STREAM S(a);\nFROM (FROM S PUBLISH P) NEXT P"
    _, errors = validate(parse_file(text), text=text)
    assert [(e.code, e.line, e.column) for e in errors] == [("CEL-V005", 2, 30)]
