"""The error model: codes table, rendering, excerpt/caret, pickling, JSON form."""

from __future__ import annotations

import json
import pickle

import pytest

from xscl.errors import (
    ERROR_CODES,
    XsclError,
    XsclSyntaxError,
    XsclValidationError,
    excerpt_at,
    line_column,
)


def test_codes_table_has_parser_and_validation_codes() -> None:
    for n in range(1, 10):
        assert f"XSCL-V00{n}" in ERROR_CODES
    assert ERROR_CODES["XSCL-V007"].template == "duplicate query id"
    assert ERROR_CODES["XSCL-V008"].template == "unknown namespace prefix"
    for code, (cls, _template) in ERROR_CODES.items():
        if code.startswith("XSCL-P"):
            assert cls is XsclSyntaxError
        elif code.startswith("XSCL-V"):
            assert issubclass(cls, XsclValidationError)


def test_line_column_and_excerpt() -> None:
    text = "Q1: S//a\n  JOIN {x=y, 1h} }"
    offset = text.rindex("}")
    assert line_column(text, offset) == (2, 18)
    assert excerpt_at(text, offset) == "  JOIN {x=y, 1h} }\n                 ^"
    assert line_column(text, 0) == (1, 1)
    assert line_column(text, len(text)) == (2, 19)


def test_excerpt_keeps_tabs_and_drops_cr() -> None:
    assert excerpt_at("\tS//a x\r\nnext", 6) == "\tS//a x\n\t     ^"


def test_str_renders_location_code_expected_and_caret() -> None:
    text = "S//a\n  JOIN {x=y, 1h} }"
    err = XsclError.from_code(
        "XSCL-P003", "unexpected '}'", text=text, offset=text.rindex("}"), qid="Q1",
        expected=("a variable", "TRUE"),
    )  # fmt: skip
    assert type(err) is XsclSyntaxError
    assert str(err) == (
        "Q1:2:18: XSCL-P003 unexpected '}' (expected: a variable, TRUE)\n"
        "    JOIN {x=y, 1h} }\n"
        "                   ^"
    )


def test_str_without_position() -> None:
    err = XsclValidationError("unknown stream 'T'", code="XSCL-V004", qid="q2")
    assert str(err) == "q2: XSCL-V004 unknown stream 'T'"
    assert str(XsclError.from_code("XSCL-V005")) == "XSCL-V005 PUBLISH cycle"


def test_subclasses_match_builtins() -> None:
    syntax = XsclSyntaxError("unexpected 'x'", code="XSCL-P003", line=3, column=4,
                             excerpt="ab\n ^")  # fmt: skip
    assert isinstance(syntax, (XsclError, SyntaxError))
    assert (syntax.lineno, syntax.offset, syntax.text) == (3, 4, "ab")
    assert syntax.msg == "XSCL-P003 unexpected 'x'"
    assert isinstance(XsclValidationError("m", code="XSCL-V001"), (XsclError, ValueError))
    with pytest.raises(ValueError):
        raise XsclValidationError.from_code("XSCL-V001", "unbound variable 'x'")


@pytest.mark.parametrize("code", ["XSCL-P003", "XSCL-V001", "XSCL-V005"])
def test_pickle_round_trip(code: str) -> None:
    err = XsclError.from_code(
        code, "unexpected ','", qid="Q9", line=2, column=7, excerpt="a,\n ^",
        expected=("'['",), source="f.xscl",
    )  # fmt: skip
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is ERROR_CODES[code].cls
    assert back == err
    assert back.to_dict() == err.to_dict()
    assert str(back) == str(err)


def test_to_dict_is_json_ready() -> None:
    err = XsclSyntaxError("invalid window unit 'H'", code="XSCL-P005", qid="q1", line=1,
                          column=18, expected=("a unit (ms, s, m, h or d)",))  # fmt: skip
    data = json.loads(json.dumps(err.to_dict()))
    assert data == {
        "code": "XSCL-P005",
        "message": "invalid window unit 'H'",
        "qid": "q1",
        "line": 1,
        "column": 18,
        "excerpt": "",
        "expected": ["a unit (ms, s, m, h or d)"],
        "source": None,
    }


def test_source_prefixes_location() -> None:
    err = XsclSyntaxError("unexpected 'x'", code="XSCL-P003", qid="Q1", line=1, column=2,
                          source="my.xscl")  # fmt: skip
    assert str(err).startswith("my.xscl:Q1:1:2: XSCL-P003")
