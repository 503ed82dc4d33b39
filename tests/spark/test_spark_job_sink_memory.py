"""A sink task holds neither its results nor its feeds' entries whole.

Found by the 100k-subscription heavy benchmark: a task kept every result line of its
batch (and then a joined copy, and a parsed copy for the feeds), and two Python
workers grew past 6 GB each. Now the results go to their staging part as they come
(``result_parts``), and the feeds' kept results spill to a file past a memory budget
(``sink.FeedRounds``). Each test states what must not change: the bytes of the part,
the feeds' entries, each feed written once per task.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xscl.connectors.document import format_ts
from xscl.results import atom
from xscl.results.atom import AtomFeedWriter, read_entries
from xscl.results.parts import staged_part
from xscl.spark_plugin.job.sink import FeedRounds

BASE = 1_149_156_000_000_000


def _line(query: str, n: int, size: int = 40) -> tuple[int, str, bytes]:
    """(end, result id, JSON line) of a result of ``query`` with ``size`` bytes of XML."""
    end = BASE + n * 1_000_000
    record = {
        "query": query,
        "result_id": f"{query}-{n:06d}",
        "docs": [{"stream": "S", "docid": f"d{n}", "ts": format_ts(end)}],
        "nodes": {},
        "values": {"x": str(n)},
        "xml": "<r>" + "x" * size + "</r>",
    }
    return end, str(record["result_id"]), (json.dumps(record) + "\n").encode()


def _results(seed: int, queries: int, count: int) -> list[tuple[str, int, str, bytes]]:
    rng = random.Random(seed)
    rows = []
    for n in range(count):
        query = f"q{rng.randrange(queries)}"
        end, result_id, line = _line(query, n, rng.randrange(10, 400))
        rows.append((query, end, result_id, line))
    rng.shuffle(rows)  # rows of one query arrive scattered, as from several groups
    return rows


def _feeds(folder: Path) -> dict[str, list[tuple[str, int]]]:
    return {
        feed.stem: [(e.entry_id, e.updated_micros) for e in read_entries(feed)]
        for feed in sorted(folder.glob("*.atom"))
    }


def _run(
    tmp_path: Path, name: str, rows: list[tuple[str, int, str, bytes]], **budget: int
) -> tuple[FeedRounds, AtomFeedWriter]:
    writer = AtomFeedWriter(tmp_path / name / "feeds", max_entries=5)
    rounds = FeedRounds(lambda: writer, 5, tmp_path / name / "staging", **budget)
    for query, end, result_id, line in rows:
        rounds.add(query, end, result_id, line)
    rounds.finish()
    return rounds, writer


def _run_at(tmp_path: Path, name: str, rows: list[tuple[str, int, str, bytes]]) -> None:
    """As a join group's ``entry-at`` rows: the entries rendered into a staged file, the
    feeds told where each one is (``FeedRounds.add_entry``)."""
    writer = AtomFeedWriter(tmp_path / name / "feeds", max_entries=5)
    rounds = FeedRounds(lambda: writer, 5, tmp_path / name / "staging")
    renderer = atom.EntryRenderer(1 << 20)
    staged = tmp_path / name / "group.entries"
    staged.parent.mkdir(parents=True)
    with open(staged, "wb") as entries:
        for query, end, result_id, line in rows:
            data = renderer.entry(json.loads(line), end).data
            rounds.add_entry(query, end, result_id, str(staged), entries.tell(), len(data))
            entries.write(data)
    rounds.finish()


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    queries=st.integers(1, 12),
    count=st.integers(0, 120),
    memory=st.integers(0, 4000),
    round_bytes=st.integers(1, 4000),
)
def test_feeds_do_not_depend_on_the_memory_budget(
    tmp_path_factory: pytest.TempPathFactory,
    seed: int,
    queries: int,
    count: int,
    memory: int,
    round_bytes: int,
) -> None:
    """Spilled or held, in one round or many, or rendered already and read back from a
    group's entries file: the same entries in every feed, each query's newest 5, and no
    spill file left behind."""
    tmp_path = tmp_path_factory.mktemp("rounds")
    rows = _results(seed, queries, count)
    _run(tmp_path, "held", rows)
    _run(tmp_path, "bounded", rows, memory_bytes=memory, round_bytes=round_bytes)
    _run_at(tmp_path, "staged", rows)
    held = _feeds(tmp_path / "held" / "feeds")
    assert _feeds(tmp_path / "bounded" / "feeds") == held
    assert _feeds(tmp_path / "staged" / "feeds") == held
    expected: dict[str, list[tuple[int, str]]] = {}
    for query, end, result_id, _line_bytes in rows:
        expected.setdefault(query, []).append((end, result_id))
    assert held == {
        q: [(f"urn:xscl:result:{rid}", end) for end, rid in sorted(kept, reverse=True)[:5]]
        for q, kept in sorted(expected.items())
    }
    assert list((tmp_path / "bounded" / "staging").glob("*")) == []


def test_past_the_budget_lines_wait_on_disk_and_each_feed_is_written_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = _results(7, 30, 600)
    written: list[str] = []
    real = atom.render_feed

    def counting(query_id: str, *args: Any, **kwargs: Any) -> bytes:
        written.append(query_id)
        return real(query_id, *args, **kwargs)

    monkeypatch.setattr(atom, "render_feed", counting)
    rounds, writer = _run(tmp_path, "t", rows, memory_bytes=2_000, round_bytes=5_000)
    assert rounds._held <= 2_000  # what stayed in memory
    assert rounds.rounds > 1
    assert sorted(written) == sorted({q for q, *_ in rows})  # once each
    assert writer.cached_feeds == 30


@pytest.mark.parametrize("part_format", ["jsonl", "parquet"])
def test_a_part_is_written_as_lines_come_and_a_failed_task_leaves_none(
    tmp_path: Path, part_format: str
) -> None:
    lines = [_line("q", n)[2] for n in range(50)]
    with staged_part(part_format, tmp_path, 3) as part:
        for line in lines:
            part.add(line)
        staged = part.close()
    assert (staged.partition, staged.rows) == (3, 50)
    assert staged.staged is not None
    if part_format == "jsonl":
        assert Path(staged.staged).read_bytes() == b"".join(lines)
    else:
        table = pq.read_table(staged.staged)
        assert table.column("result_id").to_pylist() == [f"q-{n:06d}" for n in range(50)]
    with pytest.raises(RuntimeError), staged_part(part_format, tmp_path / "failed", 0) as part:
        for line in lines:
            part.add(line)
        raise RuntimeError("the task failed")
    assert list((tmp_path / "failed").glob("*")) == []
    with staged_part(part_format, tmp_path / "empty", 0) as part:
        assert part.close().staged is None
