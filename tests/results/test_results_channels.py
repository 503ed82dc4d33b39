"""Channels (``results.channels``, ``results.record_lines``): a part written with them
reads back as exactly the part written without, per query and record.

Random workloads on the local engine, each query copied under other ids so that many
queries share each match; the records are staged by ``GroupParts`` with and without
channels, in two tasks, and committed. Every reader must then see the same records in
the same order: ``read_results``, ``part_records``, ``result_ids``, each query's cursor
pages, the markers' row counts, and the Parquet format. A part of the old format (plain
lines only, as before channels) still reads, mixed with channel parts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.profiles import examples
from tests.workloads import HEADER, Workload, workloads
from xscl.connectors.document import Document
from xscl.engine import LocalEngine
from xscl.engine.output import ResultRecord
from xscl.lang.parser import parse_queries
from xscl.results import part_index, record_lines
from xscl.results.atom import EntryRenderer
from xscl.results.channels import CHANNEL_START, line_records
from xscl.results.commit import STAGING, StagedPart, commit_batch
from xscl.results.cursor import page
from xscl.results.group_parts import GroupParts
from xscl.results.read import committed_markers, part_records, read_results, result_ids

_QUERY = re.compile(r"^(\w+): (.*)$", re.DOTALL)


def with_copies(text: str, copies: int) -> str:
    """``text`` with each query that PUBLISHes nothing repeated ``copies`` times under
    the ids ``<id>c<n>`` (the same definition: every match shared by its copies)."""
    queries = [q for q in text.removeprefix(HEADER).split(";\n") if q.strip()]
    out = list(queries)
    for query in queries:
        found = _QUERY.match(query.strip())
        if found is None or "PUBLISH" in found.group(2):
            continue
        out += [f"{found.group(1)}c{n}: {found.group(2)}" for n in range(copies)]
    return HEADER + ";\n".join(out) + ";\n"


def local_records(workload: Workload, copies: int) -> list[ResultRecord]:
    """The local engine's records, in the order it made them."""
    text = with_copies(workload.text, copies)
    return LocalEngine(parse_queries(text)).process(workload.docs)


def commit(root: Path, tasks: Sequence[Sequence[ResultRecord]], parts: GroupParts) -> None:
    """Stage each task's records as the join groups do and commit them as one batch."""
    staged = []
    for partition, records in enumerate(tasks):
        for kind, _q, _rid, _end, line in parts.rows(records, partition, EntryRenderer(1 << 20)):
            if kind == "part":
                body = json.loads(line)
                staged.append(StagedPart(partition, body["file"], body["rows"]))
    commit_batch(root, f"{0:020d}", staged)


def paged(root: Path, qid: str, limit: int) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []
    cursor = None
    while True:
        result = page(root, qid, cursor, limit)
        got.extend(result.records)
        if not result.records:
            return got
        cursor = result.cursor


def part_files(root: Path) -> list[Path]:
    return [root / p["file"] for m in committed_markers(root) for p in m["parts"]]


def assert_same_reading(plain: Path, channelled: Path) -> None:
    """Every reader sees the same records, per query, in the same order."""
    expected = list(read_results(plain))
    assert list(read_results(channelled)) == expected
    assert [list(part_records(f)) for f in part_files(channelled)] == [
        list(part_records(f)) for f in part_files(plain)
    ]
    assert result_ids(channelled) == result_ids(plain)
    assert [m["rows"] for m in committed_markers(channelled)] == [
        m["rows"] for m in committed_markers(plain)
    ]
    for qid in sorted({r["query"] for r in expected}):
        mine = [r for r in expected if r["query"] == qid]
        for limit in (1, 3):
            assert paged(channelled, qid, limit) == mine


def check(tmp_path: Path, records: list[ResultRecord], part_format: str) -> tuple[int, int]:
    """Commit ``records`` (two tasks) as plain JSON Lines and with channels in
    ``part_format``; compare; the plain and the channelled parts' bytes."""
    part_index._INDEXES.clear()
    half = len(records) // 2
    tasks = [records[:half], records[half:]]
    plain, channelled = tmp_path / "plain", tmp_path / "channels"
    commit(plain, tasks, GroupParts(str(plain), "jsonl", 3, channels=False))
    commit(channelled, tasks, GroupParts(str(channelled), part_format, 3, channels=True))
    expected = []
    seen: set[tuple[int, str]] = set()
    for task, chunk in enumerate(tasks):  # each task writes a result id once
        for record in chunk:
            if (task, record.result_id) not in seen:
                seen.add((task, record.result_id))
                expected.append(record.to_json_dict())
    assert [r for f in part_files(plain) for r in part_records(f)] == expected
    assert_same_reading(plain, channelled)
    size = sum(f.stat().st_size for f in part_files(plain))
    return size, sum(f.stat().st_size for f in part_files(channelled))


@examples(40)
@given(workload=workloads(queries=(1, 3), documents=(2, 10)), copies=st.integers(0, 4))
def test_channel_parts_read_as_plain_parts(
    tmp_path_factory: pytest.TempPathFactory, workload: Workload, copies: int
) -> None:
    records = local_records(workload, copies)
    plain, channelled = check(tmp_path_factory.mktemp("w"), records, "jsonl")
    assert channelled <= plain


@examples(10)
@given(workload=workloads(queries=(1, 3), documents=(2, 8)))
def test_parquet_parts_of_channel_lines_hold_every_record(
    tmp_path_factory: pytest.TempPathFactory, workload: Workload
) -> None:
    check(tmp_path_factory.mktemp("p"), local_records(workload, 2), "parquet")


def shared_workload(copies: int) -> list[ResultRecord]:
    text = "".join(
        f"A{n}: S//item->i[./a->x] JOIN {{x = y, INF}} S//item->j[./a->y];\n" for n in range(copies)
    )
    text += "".join(f"B{n}: SELECT x FROM S//item->i[./a->x] FOLLOWED BY {{x = y, INF}} "
                    f"S//item->j[./a->y];\n" for n in range(copies))  # fmt: skip
    docs = [
        Document("S", f"d{n}", n * 1_000_000, f"<item><a>v{n % 2}</a><b>{'t' * 300}</b></item>")
        for n in range(6)
    ]
    return LocalEngine(parse_queries(text)).process(docs)


def test_many_queries_sharing_matches_are_one_line_per_match(tmp_path: Path) -> None:
    records = shared_workload(30)
    plain, channelled = check(tmp_path, records, "jsonl")
    files = part_files(tmp_path / "channels")
    lines = [line for f in files for line in f.read_bytes().splitlines(keepends=True)]
    assert all(line.startswith(CHANNEL_START) for line in lines)
    # each line: every query of one match (30 SELECT * or 30 SELECT x copies)
    assert sum(len(line_records(line)) for line in lines) == len(records)
    assert {len(line_records(line)) for line in lines} == {30}
    assert plain > 10 * channelled


def test_old_plain_parts_still_read_beside_channel_parts(tmp_path: Path) -> None:
    """A results folder from before channels (plain lines written by the old writer:
    ``to_json_line``) and a batch committed with channels read as one result set."""
    records = shared_workload(4)
    root = tmp_path / "job"
    staging = root / STAGING
    staging.mkdir(parents=True)
    old = staging / "old.jsonl"
    first = records[: len(records) // 2]
    old.write_text("".join(r.to_json_line() + "\n" for r in first), encoding="utf-8")
    commit_batch(root, f"{0:020d}", [StagedPart(0, str(old), len(first))])
    rest = records[len(records) // 2 :]
    parts = GroupParts(str(root), "jsonl", 3)
    staged = []
    for kind, _q, _rid, _end, line in parts.rows(rest, 0, EntryRenderer(1 << 20)):
        if kind == "part":
            body = json.loads(line)
            staged.append(StagedPart(0, body["file"], body["rows"]))
    commit_batch(root, f"{1:020d}", staged)
    expected = [r.to_json_dict() for r in records]
    assert list(read_results(root)) == expected
    assert result_ids(root) == {r.result_id for r in records}
    for qid in sorted({r.query for r in records}):
        assert paged(root, qid, 2) == [r for r in expected if r["query"] == qid]


def test_a_long_run_is_split_at_max_members(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(record_lines, "MAX_MEMBERS", 7)
    records = shared_workload(30)
    check(tmp_path, records, "jsonl")
    lines = [
        line for f in part_files(tmp_path / "channels") for line in f.read_bytes().splitlines()
    ]
    sizes = [len(line_records(line)) for line in lines]
    assert max(sizes) == 7 and sum(sizes) == len(records)
