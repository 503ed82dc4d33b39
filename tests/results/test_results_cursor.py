"""Result cursors and invoke (``xscl.results.cursor``): every committed record of a
query once per cursor, across epochs and a batch replayed by a take-over."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from xscl.connectors.document import format_ts, parse_ts
from xscl.errors import ResultCursorError
from xscl.lang.parser import parse_file
from xscl.results.commit import StagedPart, commit_batch, open_epoch
from xscl.results.cursor import Cursor, decode_cursor, invoke, page, query_window
from xscl.results.read import read_results, visible_markers
from xscl.results.window import ResultsWindow


def _record(rid: str, query: str, ts: str = "2026-01-01T00:00:00Z") -> dict[str, Any]:
    return {"query": query, "result_id": rid, "docs": [{"stream": "S", "docid": rid, "ts": ts}]}


def _commit(folder: Path, batch: int, parts: list[list[dict[str, Any]]]) -> None:
    staged = []
    for index, rows in enumerate(parts):
        path = folder / f"staged-{batch}-{index}.jsonl"
        folder.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        staged.append(StagedPart(index, str(path), len(rows)))
    commit_batch(folder, f"{batch:020d}", staged)


def _batch(batch: int) -> list[list[dict[str, Any]]]:
    """Batch b: two parts of Q1 and Q2 results, ids b-0 .. b-4."""
    rows = [_record(f"{batch}-{i}", "Q1" if i % 3 else "Q2") for i in range(5)]
    return [rows[:3], rows[3:]]


def _all_pages(root: Path, qid: str, limit: int, after: Cursor | None = None) -> list[str]:
    ids: list[str] = []
    while True:
        got = page(root, qid, after, limit)
        assert len(got.records) <= limit
        if not got.records:
            again = page(root, qid, got.cursor, limit)  # at the end: it stays there
            assert again.records == [] and again.cursor == got.cursor
            return ids
        ids += [r["result_id"] for r in got.records]
        assert got.cursor is not None
        after = decode_cursor(got.cursor.encode(), qid)


def _two_epochs(root: Path) -> None:
    first = open_epoch(root, 1, -1)
    for batch in range(4):
        _commit(first, batch, _batch(batch))
    second = open_epoch(root, 2, 1)  # batches 2 and 3 replayed: other parts, other order
    for batch in (2, 3):
        rows = [r for part in _batch(batch) for r in part][::-1]
        _commit(second, batch, [rows])
    _commit(second, 4, _batch(4))


@pytest.mark.parametrize("limit", [1, 2, 3, 100])
def test_paging_reads_every_record_once_across_epochs(tmp_path: Path, limit: int) -> None:
    _two_epochs(tmp_path)
    for qid in ("Q1", "Q2"):
        expected = [r["result_id"] for r in read_results(tmp_path) if r["query"] == qid]
        assert _all_pages(tmp_path, qid, limit) == expected
    assert len(_all_pages(tmp_path, "Q1", limit)) == 3 * 5


def test_a_cursor_inside_a_batch_the_next_epoch_replays(tmp_path: Path) -> None:
    """A client read part of batch 2 of epoch 1; epoch 2 takes over after batch 1 and
    replays batch 2 in another order: the client gets the rest, each once."""
    first = open_epoch(tmp_path, 1, -1)
    for batch in range(3):
        _commit(first, batch, _batch(batch))
    read: list[str] = []
    after: Cursor | None = None
    while not read or read[-1] != "2-1":
        got = page(tmp_path, "Q1", after, 1)
        read += [r["result_id"] for r in got.records]
        after = got.cursor
    assert after is not None and (after.epoch, int(after.batch)) == (1, 2)
    second = open_epoch(tmp_path, 2, 1)
    _commit(second, 2, [[r for part in _batch(2) for r in part][::-1]])
    _commit(second, 3, _batch(3))
    rest = _all_pages(tmp_path, "Q1", 2, after)
    assert sorted(read + rest) == sorted(
        r["result_id"] for r in read_results(tmp_path) if r["query"] == "Q1"
    )
    assert len(read + rest) == len(set(read + rest)) == 4 * 3


def test_a_plain_results_folder_and_new_batches(tmp_path: Path) -> None:
    _commit(tmp_path, 0, _batch(0))
    first = page(tmp_path, "Q1", None, 10)
    assert [r["result_id"] for r in first.records] == ["0-1", "0-2", "0-4"]
    assert page(tmp_path, "Q1", first.cursor, 10).records == []
    _commit(tmp_path, 1, _batch(1))
    assert [r["result_id"] for r in page(tmp_path, "Q1", first.cursor, 10).records] == [
        "1-1",
        "1-2",
        "1-4",
    ]
    assert page(tmp_path, "Q1", None, 10).cursor is not None
    assert page(tmp_path / "none", "Q1", None, 10).cursor is None


def test_foreign_and_malformed_cursors_are_refused(tmp_path: Path) -> None:
    _commit(tmp_path, 0, _batch(0))
    cursor = page(tmp_path, "Q2", None, 1).cursor
    assert cursor is not None
    with pytest.raises(ResultCursorError) as foreign:
        decode_cursor(cursor.encode(), "Q1")
    assert foreign.value.code == "XSCL-A010"
    with pytest.raises(ResultCursorError):
        page(tmp_path, "Q1", cursor, 1)
    for bad in ("", "not a cursor", "e30", cursor.encode()[:-3], "../etc"):
        with pytest.raises(ResultCursorError):
            decode_cursor(bad, "Q2")


def test_invoke_applies_the_window_as_of_now(tmp_path: Path) -> None:
    (query,) = parse_file("Q1: S//a->x FOLLOWED BY {x=y, 1h} S//b->y;").queries
    window = query_window(query)
    assert window == 3600 * 10**6
    rows = [
        _record("old", "Q1", "2026-01-01T08:00:00Z"),
        _record("edge", "Q1", "2026-01-01T09:00:00Z"),
        _record("new", "Q1", "2026-01-01T09:59:00Z"),
        _record("other", "Q2", "2026-01-01T09:59:00Z"),
    ]
    _commit(tmp_path, 0, [rows])
    now = parse_ts("2026-01-01T10:00:00Z")
    assert [r["result_id"] for r in invoke(tmp_path, "Q1", now, window)] == ["edge", "new"]
    assert [r["result_id"] for r in invoke(tmp_path, "Q1", now, None)] == ["old", "edge", "new"]
    (infinite,) = parse_file("Q9: S//a->x FOLLOWED BY {x=y, INF} S//b->y;").queries
    assert query_window(infinite) is None


def test_a_batch_replayed_twice_under_a_cursor(tmp_path: Path) -> None:
    """Epoch 2 replays batch 2 and the client reads into it; epoch 3 is cut after batch 1
    too and replays batch 2 once more, in a third order: still each record once."""
    first = open_epoch(tmp_path, 1, -1)
    for batch in range(3):
        _commit(first, batch, _batch(batch))
    rows = [r for part in _batch(2) for r in part]

    def read(after: Cursor | None, count: int) -> tuple[list[str], Cursor | None]:
        got = page(tmp_path, "Q1", after, count)
        return [r["result_id"] for r in got.records], got.cursor

    read_1, after = read(None, 7)  # batches 0 and 1, and 2-1 of epoch 1's batch 2
    _commit(open_epoch(tmp_path, 2, 1), 2, [rows[::-1]])
    read_2, after = read(after, 1)  # 2-4, the first of epoch 2's copy it had not passed
    assert after is not None and after.passed == ((1, 0, 2),)
    assert decode_cursor(after.encode(), "Q1") == after
    third = open_epoch(tmp_path, 3, 1)
    _commit(third, 2, [rows[2:], rows[:2]])
    _commit(third, 3, _batch(3))
    rest = _all_pages(tmp_path, "Q1", 100, after)
    everything = read_1 + read_2 + rest
    assert len(everything) == len(set(everything)) == 4 * 3
    assert set(everything) == {r["result_id"] for r in read_results(tmp_path) if r["query"] == "Q1"}


def test_a_forged_cursor_cannot_name_a_path(tmp_path: Path) -> None:
    forged = Cursor("Q1", 1, "../../etc", 0, 0).encode()
    with pytest.raises(ResultCursorError):
        decode_cursor(forged, "Q1")


def test_the_results_structure_reads_each_part_once_and_agrees_with_invoke(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ResultsWindow``: invoked as time goes on and batches arrive (across an epoch),
    it answers as a full scan does, and reads each committed part once in all."""
    import xscl.results.cursor as cursor_module

    opened: list[Path] = []
    reader = cursor_module.query_rows

    def counting(file: Path, qid: str) -> Any:
        opened.append(file)
        return reader(file, qid)

    hour = 3600 * 10**6
    start = parse_ts("2026-01-01T00:00:00Z")

    def batch(number: int) -> list[list[dict[str, Any]]]:
        ts = [format_ts(start + number * hour + i * hour // 2) for i in range(3)]
        rows = [_record(f"{number}-{i}", "Q1", ts[i]) for i in range(3)]
        return [rows[:2], rows[2:]]

    folder = open_epoch(tmp_path, 1, -1)
    structure = ResultsWindow(tmp_path, "Q1", 2 * hour)
    for number in range(6):
        if number == 3:
            folder = open_epoch(tmp_path, 2, 2)
        _commit(folder, number, batch(number))
        now = start + (number + 1) * hour + hour // 4
        with monkeypatch.context() as patch:
            patch.setattr(cursor_module, "query_rows", counting)
            got = [r["result_id"] for r in structure.invoke(now)]
        assert got == [r["result_id"] for r in invoke(tmp_path, "Q1", now, 2 * hour)]
    assert got == ["4-1", "4-2", "5-0", "5-1", "5-2"]  # 4-0 (4 h) left the window at 6.25 h
    parts = [f / part["file"] for f, m in visible_markers(tmp_path) for part in m["parts"]]
    assert sorted(opened) == sorted(parts)  # each part once, over all six invocations
