"""The durable spool: offsets, ranges, dedup, locking, roll-over, recovery, kill -9."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from xscl.connectors import spool as spool_module
from xscl.connectors.document import Document
from xscl.connectors.spool import Spool, SpoolReader
from xscl.errors import SpoolCorruptError, SpoolLockedError, StreamNameError


def _doc(name: str, size: int = 40) -> Document:
    return Document(
        "S", name, len(name) * 1000, f"<d n='{name}'>{'x' * size}</d>", "src", {"k": name}
    )


def _active(path: Path) -> Path:
    (active,) = path.glob("*.active")
    return active


def test_offsets_dedup_and_exact_ranges(tmp_path: Path) -> None:
    with Spool(tmp_path, segment_bytes=600) as spool:
        assert spool.latest_offset() == -1
        assert spool.append([_doc("a"), _doc("b"), _doc("a")]) == [0, 1, None]
        assert spool.append([_doc(f"n{i}") for i in range(30)]) == list(range(2, 32))
        assert spool.append([_doc("b"), Document("T", "b", 0, "<x/>")]) == [None, 32]
        assert spool.latest_offset() == 32
        assert len(list(tmp_path.glob("*.seg"))) > 3  # rolled over several times
        assert [o for o, _ in spool.read(5, 9)] == [5, 6, 7, 8]
        assert spool.read(0, 1)[0][1] == _doc("a")
        assert spool.read(30, 100)[-1] == (32, Document("T", "b", 0, "<x/>"))
        assert spool.read(40, 50) == []
        assert spool.offset_of("S", "b") == 1 and ("T", "b") in spool
    reader = SpoolReader(tmp_path)
    everything = reader.read(0, 10**9)
    assert [o for o, _ in everything] == list(range(33))
    assert everything[3][1] == _doc("n1")


def test_dedup_survives_reopen_and_first_delivery_wins(tmp_path: Path) -> None:
    with Spool(tmp_path) as spool:
        spool.append([_doc("a"), _doc("b")])
    changed = Document("S", "a", 99, "<other/>")
    with Spool(tmp_path) as spool:
        assert spool.append([changed, _doc("c")]) == [None, 2]
        assert spool.read(0, 1)[0][1] == _doc("a")


def test_second_writer_is_refused(tmp_path: Path) -> None:
    with Spool(tmp_path):
        with pytest.raises(SpoolLockedError) as info:
            Spool(tmp_path)
        assert info.value.code == "XSCL-C030"
        assert isinstance(info.value, OSError)
    Spool(tmp_path).close()  # released on close


def test_a_suspended_writer_resumes_with_its_index_when_nobody_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between appends the lock is free, and what was verified is kept: resuming reads
    no record again, across segment roll-overs, and still refuses duplicates."""
    spool = Spool(tmp_path, segment_bytes=600)
    spool.append([_doc(f"n{i}") for i in range(12)])
    spool.suspend()
    Spool(tmp_path).close()  # the lock is free while suspended: another writer opens
    scans: list[Path] = []
    real_scan = spool_module.scan_segment
    monkeypatch.setattr(
        spool_module,
        "scan_segment",
        lambda name, *a, **k: scans.append(name) or real_scan(name, *a, **k),
    )
    assert spool.resume() is True and scans == []
    assert spool.append([_doc("n3"), _doc("fresh")]) == [None, 12]
    spool.suspend()
    assert spool.resume() is True and scans == []
    assert [o for o, _ in spool.read(10, 20)] == [10, 11, 12]
    spool.close()


def test_a_suspended_writer_recovers_when_another_wrote(tmp_path: Path) -> None:
    """Another writer appended while the first was suspended: the first recovers from
    scratch on resuming, so it sees the other's documents (no duplicate, no gap)."""
    spool = Spool(tmp_path)
    spool.append([_doc("a")])
    spool.suspend()
    with Spool(tmp_path) as other:
        assert other.append([_doc("b")]) == [1]
    assert spool.resume() is False
    assert spool.append([_doc("b"), _doc("c")]) == [None, 2]
    spool.close()
    with pytest.raises(ValueError, match="not suspended"):
        Spool(tmp_path).resume()


def test_resuming_while_another_writer_holds_the_lock_is_refused(tmp_path: Path) -> None:
    spool = Spool(tmp_path)
    spool.suspend()
    with Spool(tmp_path) as other:
        with pytest.raises(SpoolLockedError):
            spool.resume()
        other.append([_doc("x")])
    assert spool.resume() is False and spool.offset_of("S", "x") == 0
    spool.close()


def test_bad_document_leaves_spool_unchanged(tmp_path: Path) -> None:
    with Spool(tmp_path) as spool:
        with pytest.raises(StreamNameError):
            spool.append([_doc("a"), Document("bad name", "x", 0, "<x/>")])
        assert spool.latest_offset() == -1
        assert spool.append([_doc("a")]) == [0]


def test_torn_tail_is_truncated(tmp_path: Path) -> None:
    with Spool(tmp_path) as spool:
        spool.append([_doc(f"d{i}") for i in range(5)])
    active = _active(tmp_path)
    size = active.stat().st_size
    with open(active, "r+b") as handle:  # cut the last record in half
        handle.truncate(size - 20)
    with Spool(tmp_path) as spool:
        assert spool.recovery.truncated_bytes > 0 and spool.recovery.problem
        assert [d.docid for _, d in spool.read(0, 100)] == ["d0", "d1", "d2", "d3"]
        assert spool.append([_doc("d4")]) == [4]  # the lost record can be re-delivered
    assert [d.docid for _, d in SpoolReader(tmp_path).read(0, 100)][-1] == "d4"


def test_corrupt_last_record_and_trailing_garbage_are_truncated(tmp_path: Path) -> None:
    with Spool(tmp_path) as spool:
        spool.append([_doc(f"d{i}") for i in range(3)])
    active = _active(tmp_path)
    data = bytearray(active.read_bytes())
    data[-5] ^= 0xFF  # a flipped byte in the last record: checksum mismatch
    active.write_bytes(bytes(data) + b"\0" * 100)  # and zeros a crash may leave
    with Spool(tmp_path) as spool:
        assert "checksum" in (spool.recovery.problem or "")
        assert [d.docid for _, d in spool.read(0, 10)] == ["d0", "d1"]


def test_corruption_before_intact_records_is_an_error(tmp_path: Path) -> None:
    with Spool(tmp_path) as spool:
        spool.append([_doc(f"d{i}", size=200) for i in range(3)])
    active = _active(tmp_path)
    data = bytearray(active.read_bytes())
    data[100] ^= 0xFF  # inside the first record, intact ones follow
    active.write_bytes(bytes(data))
    with pytest.raises(SpoolCorruptError) as info:
        Spool(tmp_path)
    assert info.value.code == "XSCL-C031"
    with pytest.raises(SpoolCorruptError):  # readers refuse to return it too
        SpoolReader(tmp_path).read(0, 3)


def test_corrupt_sealed_segment_is_an_error(tmp_path: Path) -> None:
    with Spool(tmp_path, segment_bytes=300) as spool:
        spool.append([_doc(f"d{i}", size=100) for i in range(6)])
    sealed = sorted(tmp_path.glob("*.seg"))[-1]
    data = bytearray(sealed.read_bytes())
    data[-3] ^= 0x01
    sealed.write_bytes(bytes(data))
    with pytest.raises(SpoolCorruptError):
        Spool(tmp_path)


def test_reader_sees_only_committed_records(tmp_path: Path) -> None:
    with Spool(tmp_path) as spool:
        spool.append([_doc("a"), _doc("b")])
        with open(_active(tmp_path), "ab") as handle:  # an uncommitted, half-written record
            handle.write(b"\x50\x00\x00\x00\x01\x02\x03\x04\x02\x00")
        reader = SpoolReader(tmp_path)
        assert reader.latest_offset() == 1
        assert [d.docid for _, d in reader.read(0, 10)] == ["a", "b"]


def test_reader_in_another_process(tmp_path: Path) -> None:
    with Spool(tmp_path, segment_bytes=500) as spool:
        spool.append([_doc(f"d{i}") for i in range(20)])
        code = (
            "import sys, json; from xscl.connectors.spool import SpoolReader; "
            "r = SpoolReader(sys.argv[1]); "
            "print(json.dumps([[o, d.docid] for o, d in r.read(7, 13)]))"
        )
        out = subprocess.run(
            [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True
        )
    assert json.loads(out.stdout) == [[i, f"d{i}"] for i in range(7, 13)]


_WRITER = r"""
import json, sys
from xscl.connectors.document import Document
from xscl.connectors.spool import Spool
path, prefix, previous = sys.argv[1], sys.argv[2], sys.argv[3]
spool = Spool(path, segment_bytes=1500)
print(json.dumps({"opened": spool.recovery.records}), flush=True)
i = 0
while True:
    names = [f"{prefix}-{i}", f"{prefix}-{i + 1}"]
    if previous != "-" and i % 3 == 0:
        names.append(f"{previous}-{i}")  # a re-delivery of an earlier run's document
    docs = [Document("S", n, i, f"<doc n='{n}'>{'y' * (i * 7 % 300)}</doc>") for n in names]
    offsets = spool.append(docs)
    print(json.dumps({"acked": list(zip(names, offsets))}), flush=True)
    i += 2
"""


def _expected_xml(name: str) -> str:
    i = int(name.rsplit("-", 1)[1])
    return f"<doc n='{name}'>{'y' * ((i - i % 2) * 7 % 300)}</doc>"


#: Writers killed one after another in the kill -9 test.
KILLS = 8


def test_kill_minus_9_loses_no_acknowledged_document(tmp_path: Path) -> None:
    rng = random.Random(20240601)
    acked: dict[str, int] = {}
    duplicates: set[str] = set()
    previous = "-"
    for iteration in range(KILLS):
        prefix = f"run{iteration}"
        proc = subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(tmp_path), prefix, previous],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        json.loads(proc.stdout.readline())  # opened (recovery done)
        target = rng.randint(1, 80)
        for _ in range(target):
            line = proc.stdout.readline()
            if not line:
                break
            for name, offset in json.loads(line)["acked"]:
                if offset is None:  # stored earlier (maybe by an append whose ack we never read)
                    duplicates.add(name)
                else:
                    assert name not in acked, f"{name} acknowledged twice"
                    acked[name] = offset
        time.sleep(rng.random() * 0.01)  # land anywhere inside the next append
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        previous = prefix

        with Spool(tmp_path, segment_bytes=1500) as spool:
            records = spool.read(0, 10**9)
            assert [o for o, _ in records] == list(range(len(records)))  # no gap, no torn record
            names = [d.docid for _, d in records]
            assert len(names) == len(set(names))  # exactly once
            by_name = {d.docid: (o, d) for o, d in records}
            for name, offset in acked.items():
                assert by_name[name][0] == offset
            assert duplicates <= set(by_name)
            for _, doc in records:
                assert doc.xml == _expected_xml(doc.docid)
    assert len(acked) > 20 and duplicates
