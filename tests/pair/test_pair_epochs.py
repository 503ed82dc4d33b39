"""Epochs (``xscl.service.pair.epochs``): what a new primary forks, what readers see.

A fake checkpoint stands for Spark's: batches 0-4 committed, batch 5 planned (its
offsets logged) and half run (a state version 6 file written), as a primary killed or
paused in batch 5 leaves it. The new epoch must take exactly what belongs to batches
up to 4 (and batch 5's offsets, to replay it with the same range), and readers must
not see what the old epoch commits afterwards.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xscl.errors import LeaseLostError, LegacyHomeError
from xscl.results.commit import StagedPart, commit_batch
from xscl.results.read import committed_markers, read_results, visible_markers
from xscl.service.pair.epochs import EpochFolders, newest_epoch, start_epoch
from xscl.service.pair.file_lease import FileLease
from xscl.service.pair.lease import Identity
from xscl.service.subscriptions import SubscriptionLog
from xscl.spark_plugin.job.sink import JobOutputWriter, fence_of

OFFSETS = "v1\n{{}}\n{{\"offset\": {}}}"


def _checkpoint(folder: Path, committed: int, planned: int) -> None:
    """A Spark-like checkpoint: batch b read offsets [3b, 3b+3)."""
    for sub in ("offsets", "commits", "sources/0", "state/0/0/_metadata", "state/0/0/SSTs"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    (folder / "metadata").write_text('{"id": "q"}')
    (folder / "sources/0/0").write_text("v1\n0")
    (folder / "state/0/0/_metadata/schema").write_text("schema")
    (folder / "state/0/0/SSTs/000001-a.sst").write_text("sst")
    (folder / "state/0/0/3.zip").write_text("snapshot 3")
    for batch in range(planned + 1):
        (folder / "offsets" / str(batch)).write_text(OFFSETS.format(3 * batch + 3))
        (folder / "offsets" / f".{batch}.crc").write_text("crc")
        (folder / "state/0/0" / f"{batch + 1}.changelog").write_text(f"v{batch + 1}")
        (folder / "state/0/0" / f".{batch + 1}.changelog.crc").write_text("crc")
    for batch in range(committed + 1):
        (folder / "commits" / str(batch)).write_text("v1\n{}")


def _results(folder: Path, batch: int, ids: list[str]) -> None:
    staged = folder / f"staged-{batch}.jsonl"
    folder.mkdir(parents=True, exist_ok=True)
    staged.write_text("".join(json.dumps({"result_id": i}) + "\n" for i in ids))
    commit_batch(str(folder), f"{batch:020d}", [StagedPart(0, str(staged), len(ids))])


def _first_epoch(root: Path) -> EpochFolders:
    first = EpochFolders(root, "job", 1)
    assert start_epoch(first) == -1
    _checkpoint(first.checkpoint, committed=4, planned=5)
    for batch in range(6):  # batch 5's marker is written, Spark has not logged it
        _results(first.results, batch, [f"r{batch}"])
    first.hot_values.mkdir(parents=True)
    for batch in (2, 5):
        (first.hot_values / f"{batch:020d}.json").write_text(json.dumps([f"hot{batch}"]))
    log = SubscriptionLog(first.registry, first.applied)
    for version, offset in ((1, 0), (2, 15), (3, 18)):
        log.record_applied(version, offset)
    (first.results / "feeds" / "q.atom").write_text("<feed/>")
    return first


def test_a_new_epoch_forks_what_the_old_committed_and_no_more(tmp_path: Path) -> None:
    first = _first_epoch(tmp_path)
    second = first.at(2)
    assert start_epoch(second) == 4
    new = second.checkpoint
    assert sorted(p.name for p in (new / "offsets").iterdir() if p.name.isdigit()) == [
        "0", "1", "2", "3", "4", "5"]  # batch 5 replays its logged range
    assert sorted(p.name for p in (new / "commits").iterdir()) == ["0", "1", "2", "3", "4"]
    versions = sorted(p.name for p in (new / "state/0/0").glob("*.changelog"))
    assert versions == [f"{v}.changelog" for v in range(1, 6)]  # not 6: batch 5's
    for kept in ("metadata", "sources/0/0", "state/0/0/_metadata/schema", "state/0/0/3.zip",
                 "state/0/0/SSTs/000001-a.sst", "offsets/.5.crc"):
        assert (new / kept).samefile(first.checkpoint / kept), kept  # a hard link
    assert [p.name for p in second.hot_values.iterdir()] == [f"{2:020d}.json"]
    # batch 4 read up to offset 15: events applied there or earlier are kept
    assert SubscriptionLog(second.registry, second.applied).applied() == {1: 0, 2: 15}
    feeds = (tmp_path / "results" / "job" / "feeds").resolve()
    assert feeds == (second.results / "feeds").resolve()
    assert (feeds / "q.atom").read_text() == "<feed/>"


def test_readers_cut_the_old_epoch_where_the_new_one_continues(tmp_path: Path) -> None:
    first = _first_epoch(tmp_path)
    second = first.at(2)
    start_epoch(second)
    root = second.results_root
    assert [m["batch"] for m in committed_markers(root)] == [f"{b:020d}" for b in range(5)]
    _results(second.results, 5, ["r5"])  # the new primary replays batch 5
    _results(first.results, 6, ["zombie"])  # the old one, fenced out, commits on
    seen = [(folder.name, int(m["batch"])) for folder, m in visible_markers(root)]
    assert seen == [("e00000001", b) for b in range(5)] + [("e00000002", 5)]
    assert [r["result_id"] for r in read_results(root)] == [f"r{b}" for b in range(6)]
    # epoch 2 dies after its marker of batch 5, before Spark logged the batch: epoch 3
    # continues after batch 4 as well, and replays batch 5
    assert start_epoch(second.at(3)) == 4
    assert [r["result_id"] for r in read_results(root)] == [f"r{b}" for b in range(5)]


def test_a_home_from_before_epochs_is_refused_with_its_code(tmp_path: Path) -> None:
    (tmp_path / "checkpoints" / "job" / "offsets").mkdir(parents=True)
    with pytest.raises(LegacyHomeError, match="without process pairs") as refused:
        start_epoch(EpochFolders(tmp_path, "job", 1))
    assert refused.value.code == "XSCL-S022"


def test_cel_reads_only_xscl_batches_in_their_epochs_commit_log(tmp_path: Path) -> None:
    """Killed after batch 5's marker but before Spark logged it: the next epoch replays
    batch 5 under its own number, so CEL must not have read the first epoch's copy."""
    from xscl.spark_plugin.cel.source import _markers

    first = _first_epoch(tmp_path)  # markers 0..5, commit log 0..4
    checkpoints = str(first.checkpoint.parent)
    keys = [key for key, _f, _m in _markers(str(first.results_root), checkpoints)]
    assert keys == [(1, b) for b in range(5)]
    second = first.at(2)
    assert start_epoch(second) == 4
    _results(second.results, 5, ["r5 again"])
    (second.checkpoint / "commits" / "5").write_text("v1\n{}")
    keys = [key for key, _f, _m in _markers(str(first.results_root), checkpoints)]
    assert keys == [*((1, b) for b in range(5)), (2, 5)]


def test_the_cel_source_reads_each_xscl_marker_once(tmp_path: Path) -> None:
    """The driver asks twice per micro-batch; markers are written once and never change,
    so a reader parses each one once (here: a marker spoiled after its first read)."""
    from xscl.spark_plugin.cel.source import SeenMarkers, _markers

    first = _first_epoch(tmp_path)
    seen = SeenMarkers()
    checkpoints = str(first.checkpoint.parent)
    before = _markers(str(first.results_root), checkpoints, seen)
    assert len(seen.markers) == 6 and len(seen.logged) == 5
    for marker in (first.results / "_commits").glob("*.json"):
        marker.write_text("not JSON any more")
    assert _markers(str(first.results_root), checkpoints, seen) == before


def test_a_new_lease_store_continues_above_the_epochs_the_home_already_has(
    tmp_path: Path,
) -> None:
    """One driver ran epochs 1 and 2 under its file lease; the job then moves to a
    pair with a fresh lease store (as a Kubernetes Lease starts): its first epoch is
    3, not a second epoch 1 hidden behind the newer ones."""
    first = _first_epoch(tmp_path)
    start_epoch(first.at(2))
    assert newest_epoch(tmp_path, "job") == 2
    fresh = FileLease(tmp_path / "another-store")
    taken = fresh.acquire(None, newest_epoch(tmp_path, "job"))
    assert taken is not None and taken.epoch == 3
    assert start_epoch(first.at(taken.epoch)) == 4  # continues after epoch 1's last batch
    assert newest_epoch(tmp_path, "other-job") == 0


def test_the_sink_refuses_to_commit_once_a_newer_epoch_holds_the_lease(tmp_path: Path) -> None:
    old = FileLease(tmp_path / "pair")
    old.acquire(None)
    writer = JobOutputWriter(str(tmp_path / "out"), "jsonl", 10, fence=fence_of(old.spec(), 1))
    writer.commit([], 0)
    assert len(committed_markers(tmp_path / "out")) == 1
    new = FileLease(tmp_path / "pair")
    new.acquire(new.read())
    with pytest.raises(LeaseLostError, match="taken over by epoch 2"):
        writer.commit([], 1)
    assert len(committed_markers(tmp_path / "out")) == 1


def test_status_reports_the_pair_the_last_visible_batch_and_the_lag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from xscl.cli.main import main
    from xscl.connectors.document import Document
    from xscl.connectors.spool import Spool

    first = _first_epoch(tmp_path)
    with Spool(tmp_path / "spool", sync=False) as spool:
        spool.append([Document("S", f"d{i}", i, "<a/>") for i in range(20)])
    lease = FileLease(tmp_path / "pair" / "job", Identity("h", 4242, "elsewhere.example"))
    lease.acquire(None)
    start_epoch(first.at(2))
    assert main(["status", "--home", str(tmp_path), "--name", "job", "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert (status["primary"]["pid"], status["primary"]["host"]) == (4242, "elsewhere.example")
    assert status["primary"]["epoch"] == 1 and status["primary"]["live"]
    assert status["standbys"] == []
    # batch 4 is the newest readers see (5 is above the cut); it read up to offset 15
    assert (status["last_batch"], status["committed_offset"]) == (4, 15)
    assert (status["spool_head"], status["lag"], status["results"]) == (20, 5, 5)
    assert main(["status", "--home", str(tmp_path), "--name", "job"]) == 0
    text = capsys.readouterr().out
    assert "last committed batch: 4 (spool offset 15)" in text and "lag 5" in text


def test_an_unwritable_results_folder_is_one_coded_error_naming_the_path(tmp_path: Path) -> None:
    from xscl.errors import OutputWriteError

    blocked = tmp_path / "results"
    blocked.write_text("a file where the folder should be")
    writer = JobOutputWriter(str(blocked / "e00000001"), "jsonl", 10)
    with pytest.raises(OutputWriteError, match="cannot be written") as failed:
        writer.commit([], 0)
    assert failed.value.code == "XSCL-S023" and str(blocked) in str(failed.value)
