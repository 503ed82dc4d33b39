"""One fault, one code: the local engine and the reference dead-letter the same lines alike.

Each envelope line below has one fault; both engines must name the same file line
and the same public code (``xscl.errors.ERROR_CODES``) for it, whatever their own
readers and XML parsers decide on the way.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xscl.engine.batch import run_batch as local_run
from xscl.errors import ERROR_CODES
from xscl.lang.parser import parse_queries
from xscl.reference import run_batch as reference_run


def _line(docid: str, xml: str, ts: object = "2026-01-01T00:00:00Z", stream: str = "S") -> str:
    return json.dumps({"stream": stream, "docid": docid, "ts": ts, "xml": xml})


#: (envelope line, the code both engines give it; None: accepted)
LINES: list[tuple[str, str | None]] = [
    (_line("ok", "<a><b>1</b></a>", "2026-01-02T00:00:00Z"), None),
    ("not json", "XSCL-C001"),
    ('{"stream": "S", "docid": "c", "ts": 0, "xml": "<a/>",}', "XSCL-C001"),
    ("[1, 2]", "XSCL-C001"),
    ('{"stream": "S", "ts": 0, "xml": "<a/>"}', "XSCL-C002"),
    (_line("xml-not-text", 5), "XSCL-C002"),  # type: ignore[arg-type]
    (_line("bad-ts", "<a/>", "yesterday"), "XSCL-C003"),
    (_line("bad-ts-2", "<a/>", True), "XSCL-C003"),
    (_line("bad-stream", "<a/>", stream="9lives"), "XSCL-C004"),
    (_line("malformed", "<a><b></a>"), "XSCL-X001"),
    (_line("empty", ""), "XSCL-X001"),
    (_line("deep", "<a>" * 300 + "</a>" * 300), "XSCL-X003"),
    (_line("surrogate", "<a>\ud800</a>"), "XSCL-X004"),
    (_line("entity", '<!DOCTYPE a [<!ENTITY e "x">]><a>&e;</a>'), "XSCL-X005"),
    (_line("late", "<a/>", "2026-01-01T00:00:00Z"), "XSCL-R008"),
    (_line("ok2", "<a><b>1</b></a>", "2026-01-02T00:00:01Z"), None),
]


@pytest.mark.parametrize("engine", ["local", "reference"])
def test_each_fault_gets_the_same_line_and_public_code(engine: str, tmp_path: Path) -> None:
    docs = tmp_path / "docs.jsonl"
    docs.write_text("\n".join(line for line, _code in LINES) + "\n", encoding="utf-8")
    queries = list(parse_queries("Q: S//a->x[./b->u] JOIN {u = v, 1d} S//a->y[./b->v];"))
    run = local_run if engine == "local" else reference_run
    run(queries, docs, tmp_path / "r.jsonl", allowed_lateness_micros=3_600_000_000)
    dead = [json.loads(t) for t in (tmp_path / "r.deadletter.jsonl").read_text().splitlines()]
    expected = [(n, code) for n, (_line, code) in enumerate(LINES, start=1) if code]
    assert [(d["line"], d["code"]) for d in dead] == expected
    assert all(d["code"] in ERROR_CODES and d["reason"] for d in dead)
    # one record (issue 36, deliverable 3): the same fields, in order, naming the file
    assert {tuple(d) for d in dead} == {("source", "line", "stream", "docid", "reason", "code")}
    assert {d["source"] for d in dead} == {str(docs)}
    assert len((tmp_path / "r.jsonl").read_text().splitlines()) == 2  # ok with ok2, both ways


#: docs/language.md: a document's XML may hold 16 MiB of UTF-8, a text node or an
#: attribute value 10,000,000 bytes (libxml2's limit without huge_tree).
DOCUMENT_LIMIT = 16 * 1024 * 1024
_OK = "2026-01-02T00:00:00Z"


def _sized(size: int) -> str:
    """A document of exactly ``size`` UTF-8 bytes: two text nodes under the libxml2
    limit, the second one's element ``c`` with the value ``x``."""
    half = (size - len("<z><c></c><c>x</c></z>")) // 2
    rest = size - len("<z><c></c><c>x</c></z>") - half
    return f"<z><c>{'y' * half}</c>{'y' * rest}<c>x</c></z>"


#: (envelope line, the code both engines give it; None: accepted). Issue 36, defect 11:
#: the reference allowed 10 MiB and the engines 16 MiB; a long text node was X001 in one
#: and X002 in the other.
SIZE_LINES: list[tuple[str, str | None]] = [
    (_line("eleven-mib", _sized(11 * 1024 * 1024), _OK), None),
    (_line("at-limit", _sized(DOCUMENT_LIMIT), _OK), None),
    (_line("over-limit", _sized(DOCUMENT_LIMIT + 1), _OK), "XSCL-X002"),
    (_line("long-text", "<z>" + "x" * 10_000_001 + "</z>", _OK), "XSCL-X002"),
    (_line("long-attribute", '<z a="' + "x" * 10_000_001 + '"/>', _OK), "XSCL-X002"),
    (_line("text-at-libxml2-limit", "<z>" + "x" * 10_000_000 + "</z>", _OK), None),
]


@pytest.mark.parametrize("engine", ["local", "reference"])
def test_one_size_limit_and_one_code_in_every_engine(engine: str, tmp_path: Path) -> None:
    assert len(_sized(DOCUMENT_LIMIT).encode()) == DOCUMENT_LIMIT
    docs = tmp_path / "docs.jsonl"
    docs.write_text("\n".join(line for line, _code in SIZE_LINES) + "\n", encoding="utf-8")
    queries = list(parse_queries("Q: S/z[./c = 'x'];"))
    run = local_run if engine == "local" else reference_run
    run(queries, docs, tmp_path / "r.jsonl")
    dead = [json.loads(t) for t in (tmp_path / "r.deadletter.jsonl").read_text().splitlines()]
    expected = [(n, code) for n, (_line, code) in enumerate(SIZE_LINES, start=1) if code]
    assert [(d["line"], d["code"]) for d in dead] == expected
    assert len((tmp_path / "r.jsonl").read_text().splitlines()) == 2  # eleven-mib, at-limit


@pytest.mark.parametrize("engine", ["local", "reference"])
def test_a_line_that_is_not_utf8_is_named_so(engine: str, tmp_path: Path) -> None:
    """Issue 36, defect 13: the local engine said "not valid JSON: Expecting value"."""
    docs = tmp_path / "docs.jsonl"
    good = _line("ok", "<a><b>1</b></a>").encode()
    docs.write_bytes(good.replace(b"<b>1</b>", b"<b>caf\xe9</b>") + b"\n" + good + b"\n")
    queries = list(parse_queries("Q: S//a;"))
    run = local_run if engine == "local" else reference_run
    run(queries, docs, tmp_path / "r.jsonl")
    (dead,) = [json.loads(t) for t in (tmp_path / "r.deadletter.jsonl").read_text().splitlines()]
    assert (dead["line"], dead["code"]) == (1, "XSCL-C001")
    assert dead["stream"] is None and dead["docid"] is None  # not readable as written
    assert dead["reason"].endswith("not UTF-8 text: byte 0xE9 at column 79")
