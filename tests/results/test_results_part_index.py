"""Cursor pages read only their query's rows of each part (``results.part_index``), and
give what a full scan of every record gives: JSON Lines written by the job (the query
id first), lines written otherwise (keys in another order, an id with escapes), and
Parquet parts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from xscl.results import part_index
from xscl.results.commit import commit_batch
from xscl.results.cursor import page
from xscl.results.parts import staged_part
from xscl.results.read import read_results

QUERIES = ["Q1", "Q2", 'we"ird\\id', "Q\u00e9"]


def _record(rid: str, query: str) -> dict[str, Any]:
    return {
        "query": query,
        "result_id": rid,
        "docs": [{"stream": "S", "docid": rid, "ts": "2026-01-01T00:00:00Z"}],
        "nodes": {},
        "values": {},
        "xml": "<result/>",
    }


def _line(record: dict[str, Any], n: int) -> bytes:
    if n % 4 == 3:  # keys in another order: the index parses the line
        record = dict(reversed(list(record.items())))
    return (json.dumps(record, ensure_ascii=n % 2 == 0) + "\n").encode("utf-8")


def _commit(root: Path, batch: int, part_format: str) -> None:
    staged = []
    for index in range(2):
        with staged_part(part_format, root / "_staging", index) as part:
            for n in range(7):
                rid = f"{batch:02d}{index}{n}"
                part.add(_line(_record(rid, QUERIES[(n + index + batch) % 4]), n))
            staged.append(part.close())
    commit_batch(root, f"{batch:020d}", staged)


def _paged(root: Path, qid: str, limit: int) -> list[str]:
    got: list[str] = []
    cursor = None
    while True:
        result = page(root, qid, cursor, limit)
        got.extend(r["result_id"] for r in result.records)
        if not result.records:
            return got
        cursor = result.cursor


@pytest.mark.parametrize("part_format", ["jsonl", "parquet"])
def test_paging_through_the_index_equals_a_full_scan(tmp_path: Path, part_format: str) -> None:
    part_index._INDEXES.clear()
    for batch in range(3):
        _commit(tmp_path, batch, part_format)
    everything = list(read_results(tmp_path))
    for qid in QUERIES:
        expected = [r["result_id"] for r in everything if r["query"] == qid]
        assert expected
        for limit in (1, 2, 100):
            assert _paged(tmp_path, qid, limit) == expected
    assert len(part_index._INDEXES) == 6  # each part indexed once, whatever was asked
