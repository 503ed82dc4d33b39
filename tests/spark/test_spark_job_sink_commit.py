"""The job sink's commit (driver side, no Spark): the join groups' staged parts are
committed with the sink tasks' own, numbered, and orphans are swept.

Each test states the layout it expects after the commit.
"""

from __future__ import annotations

import json
from pathlib import Path

from xscl.results.commit import COMMITS, STAGING, StagedPart
from xscl.results.read import committed_markers, read_results
from xscl.spark_plugin.job.sink import JobOutputWriter, TaskOutput


def _staged(path: Path, name: str, *result_ids: str) -> StagedPart:
    staging = path / STAGING
    staging.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"query": "q", "result_id": r}) + "\n" for r in result_ids]
    (staging / name).write_text("".join(lines))
    return StagedPart(0, str(staging / name), len(result_ids))


def test_group_parts_are_committed_under_the_marker_and_orphans_swept(tmp_path: Path) -> None:
    """Two tasks: one with its own part and a group's part (the same partition), one with
    a group's part only. All three are renamed part-<batch>-00000..00002 and listed in
    the marker; a part a retried group attempt left in staging is removed."""
    own = _staged(tmp_path, "own.jsonl", "a")
    group_0 = _staged(tmp_path, "g0.jsonl", "b", "c")
    group_1 = _staged(tmp_path, "g1.jsonl", "d")
    _staged(tmp_path, "orphan.jsonl", "z")
    writer = JobOutputWriter(str(tmp_path), "jsonl", 5)
    messages = [
        TaskOutput(own, [group_0]),
        TaskOutput(StagedPart(1, None, 0), [StagedPart(1, group_1.staged, 1)]),
    ]
    writer.commit(list(messages), 3)
    (marker,) = committed_markers(tmp_path)
    assert [p["file"] for p in marker["parts"]] == [
        f"part-{3:020d}-00000.jsonl",
        f"part-{3:020d}-00001.jsonl",
        f"part-{3:020d}-00002.jsonl",
    ]
    assert marker["rows"] == 4
    assert sorted(r["result_id"] for r in read_results(tmp_path)) == ["a", "b", "c", "d"]
    assert list((tmp_path / STAGING).iterdir()) == []


def test_a_replayed_batch_discards_the_group_parts_it_staged_again(tmp_path: Path) -> None:
    """The marker is there: what the replay staged, its groups' parts included, is
    discarded and the committed parts stay as they were."""
    writer = JobOutputWriter(str(tmp_path), "jsonl", 5)
    writer.commit([TaskOutput(StagedPart(0, None, 0), [_staged(tmp_path, "g.jsonl", "b")])], 0)
    again = _staged(tmp_path, "g2.jsonl", "b")
    writer.commit([TaskOutput(StagedPart(0, None, 0), [again])], 0)
    assert not Path(str(again.staged)).exists()
    assert len(list((tmp_path / COMMITS).iterdir())) == 1
    assert [r["result_id"] for r in read_results(tmp_path)] == ["b"]


def test_an_aborted_batch_removes_the_group_parts(tmp_path: Path) -> None:
    part = _staged(tmp_path, "g.jsonl", "b")
    JobOutputWriter(str(tmp_path), "jsonl", 5).abort(
        [TaskOutput(StagedPart(0, None, 0), [part])], 0
    )
    assert not Path(str(part.staged)).exists()
    assert committed_markers(tmp_path) == []
