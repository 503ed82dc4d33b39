"""Spool retention: the policy keeps exactly the retained records at their offsets, and a
compaction interrupted at any step (an exception, or kill -9 of the writer) leaves the
spool before or after it, finished on the next open; readers never see half of one."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from xscl.connectors import retention
from xscl.connectors.document import Document
from xscl.connectors.spool import Spool, SpoolReader
from xscl.errors import SpoolExpiredError

DAY = 86_400 * 1_000_000
#: a retention whose cut (offset 30: the clock at day 30 of 39) is inside a sealed segment
INSIDE = 9 * DAY + DAY // 2


def _doc(i: int, day: int | None = None) -> Document:
    return Document("S", f"d{i}", (i if day is None else day) * DAY, f"<d n='{i}'>{'x' * 60}</d>")


def _fill(path: Path, count: int = 40) -> None:
    with Spool(path, segment_bytes=700) as spool:
        spool.append([_doc(i) for i in range(count)])


def _everything(path: Path) -> list[tuple[int, Document]]:
    reader = SpoolReader(path)
    return reader.read(reader.first_offset(), reader.next_offset())


def test_retention_keeps_exactly_the_recent_records_at_their_offsets(tmp_path: Path) -> None:
    _fill(tmp_path)
    before = _everything(tmp_path)
    with Spool(tmp_path, segment_bytes=700) as spool:
        done = spool.compact(10 * DAY)  # newest is day 39: the clock from day 29 on is kept
        assert (done.first_before, done.first) == (0, 29)
        assert done.removed_segments >= 2 and spool.first_offset() == 29
        # a re-delivered dropped document is still a duplicate; a new one gets the next offset
        assert spool.append([_doc(3), _doc(100)]) == [None, 40]
    kept = _everything(tmp_path)
    assert kept[:-1] == [(o, d) for o, d in before if o >= 29]
    assert min(int(p.stem) for p in tmp_path.glob("*.seg")) == 29
    with pytest.raises(SpoolExpiredError) as caught:
        SpoolReader(tmp_path).read(5, 10)
    assert caught.value.code == "XSCL-C033"
    with Spool(tmp_path) as spool:  # reopened: same range, same duplicates
        assert spool.first_offset() == 29 and spool.append([_doc(4)]) == [None]


def test_the_cut_follows_the_spools_clock_not_each_timestamp(tmp_path: Path) -> None:
    with Spool(tmp_path, segment_bytes=400) as spool:
        spool.append([_doc(i) for i in range(10)])
        spool.append([_doc(50, day=0)])  # an old document arriving late (offset 10)
        spool.append([_doc(i) for i in range(11, 30)])
        spool.compact(15 * DAY)  # newest day 29: the clock reaches day 14 at offset 14
        assert spool.first_offset() == 14
        assert spool.compact(15 * DAY).dropped == 0  # nothing more to drop
    assert [d.docid for _, d in _everything(tmp_path)][:2] == ["d14", "d15"]


def test_the_active_segment_is_never_compacted(tmp_path: Path) -> None:
    with Spool(tmp_path) as spool:  # one big segment: everything is in the active one
        spool.append([_doc(i) for i in range(20)])
        assert spool.compact(DAY).dropped == 0
    assert len(_everything(tmp_path)) == 20


def test_a_reader_indexed_before_a_compaction_reads_the_retained_records(tmp_path: Path) -> None:
    _fill(tmp_path)
    reader = SpoolReader(tmp_path)
    before = reader.read(0, 40)
    with Spool(tmp_path, segment_bytes=700) as spool:
        spool.compact(INSIDE)  # the segment holding offset 30 is rewritten from 30 on
    assert reader.read(30, 40) == before[30:]
    with pytest.raises(SpoolExpiredError):
        reader.read(0, 40)


def _crash_at(monkeypatch: pytest.MonkeyPatch, step: int) -> None:
    """Make the ``step``-th durable step of a compaction (a rename, a removal or an fsync
    of the folder) raise, as a crash there would stop it."""
    calls = {"n": 0}

    def counted(real):  # type: ignore[no-untyped-def]
        def wrapper(*args, **kwargs):  # type: ignore[no-untyped-def]
            calls["n"] += 1
            if calls["n"] == step:
                raise KeyboardInterrupt(f"crash at step {step}")
            return real(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(retention, "write_atomically", counted(retention.write_atomically))
    monkeypatch.setattr(retention, "fsync_dir", counted(retention.fsync_dir))
    monkeypatch.setattr(retention.os, "replace", counted(retention.os.replace))


@pytest.mark.parametrize("step", range(1, 7))
def test_a_compaction_interrupted_at_any_step_is_before_or_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: int
) -> None:
    _fill(tmp_path)
    before = _everything(tmp_path)
    spool = Spool(tmp_path, segment_bytes=700)
    with monkeypatch.context() as patch:
        _crash_at(patch, step)
        try:
            spool.compact(INSIDE)  # cuts inside a sealed segment: a rewrite
            crashed = False
        except KeyboardInterrupt:
            crashed = True
        finally:
            spool.close()
    seen = _everything(tmp_path)  # what a reader sees right after the crash
    assert seen in (before, before[30:]), f"a half-compacted spool after step {step}"
    with Spool(tmp_path, segment_bytes=700) as reopened:  # recovery finishes or leaves it
        first = reopened.first_offset()
        assert first in (0, 30)
        reopened.compact(INSIDE)
    assert _everything(tmp_path) == before[30:]
    assert not list(tmp_path.glob(".*.tmp"))
    assert crashed or step > 5


_KILLED_WRITER = """
import os, signal, sys
from xscl.connectors import retention
from xscl.connectors.spool import Spool

step = int(sys.argv[2])
calls = {"n": 0}
real = retention.os.replace
def replace(*args):
    real(*args)
    calls["n"] += 1
    if calls["n"] == step:
        os.kill(os.getpid(), signal.SIGKILL)
retention.os.replace = replace
real_unlink = retention.Path.unlink
def unlink(self, *args, **kwargs):
    real_unlink(self, *args, **kwargs)
    if step == 9:
        os.kill(os.getpid(), signal.SIGKILL)
retention.Path.unlink = unlink
with Spool(sys.argv[1], segment_bytes=700) as spool:
    spool.compact(int(sys.argv[3]))
"""


@pytest.mark.parametrize("step", [1, 2, 3, 9])
def test_kill_minus_9_mid_compaction(tmp_path: Path, step: int) -> None:
    """The writer killed with SIGKILL right after the keys' rename (1), the RETAINED
    rename (2), the rewritten segment's rename (3), the first old segment's removal (9)."""
    _fill(tmp_path)
    before = _everything(tmp_path)
    script = tmp_path.parent / f"killed_writer_{step}.py"
    script.write_text(_KILLED_WRITER)
    proc = subprocess.run(
        [sys.executable, str(script), str(tmp_path), str(step), str(INSIDE)],
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    assert _everything(tmp_path) in (before, before[30:])
    with Spool(tmp_path, segment_bytes=700) as spool:
        spool.compact(INSIDE)
    assert _everything(tmp_path) == before[30:]
    with Spool(tmp_path) as spool:
        assert spool.append([_doc(1)]) == [None]  # the dropped keys survived the kill
