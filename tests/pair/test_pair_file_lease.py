"""The file lease (``xscl.service.pair.file_lease``): epochs, lapses, fencing, races.

Covers the issue's lease tests that need no Spark: two instances (here eight
processes) racing for a free lease get one epoch between them, and a lease file
renewed in a loop and SIGKILLed at random moments is always readable.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from xscl.errors import LeaseLostError
from xscl.service.pair.file_lease import FileLease
from xscl.service.pair.lease import Identity, LeaseWatch
from xscl.service.pair.member import PairMember, StandbyBoard

REPO = Path(__file__).resolve().parents[2]


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _other_host(name: str) -> Identity:
    """An instance on another host: its pid cannot be checked from here."""
    return Identity(f"{name}-holder", 4242, f"{name}.example")


def test_the_first_instance_takes_epoch_1_and_a_second_waits(tmp_path: Path) -> None:
    first = FileLease(tmp_path, _other_host("a"), duration=3)
    second = FileLease(tmp_path, _other_host("b"), duration=3)
    taken = first.acquire(None)
    assert taken is not None and taken.epoch == 1
    assert second.acquire(None) is None  # not the record it saw: someone holds it
    watch = LeaseWatch(Clock())
    assert not watch.lapsed(second.read())
    assert first.holds(1) and first.renew(1).epoch == 1


def test_a_lease_lapses_after_its_duration_unrenewed_on_the_watchers_clock(
    tmp_path: Path,
) -> None:
    holder = FileLease(tmp_path, _other_host("a"), duration=3)
    holder.acquire(None)
    clock = Clock()
    watch = LeaseWatch(clock)
    assert not watch.lapsed(holder.read())
    clock.now += 2.9
    assert not watch.lapsed(holder.read())
    holder.renew(1)  # a new record: the watcher starts counting again
    clock.now += 2.9
    assert not watch.lapsed(holder.read())
    clock.now += 3.0
    assert watch.lapsed(holder.read())


def test_a_take_over_fences_the_old_holder(tmp_path: Path) -> None:
    old = FileLease(tmp_path, _other_host("a"), duration=3)
    new = FileLease(tmp_path, _other_host("b"), duration=3)
    old.acquire(None)
    seen = new.read()
    taken = new.acquire(seen)
    assert taken is not None and taken.epoch == 2
    assert not old.holds(1) and new.holds(2)
    with pytest.raises(LeaseLostError, match="taken over by epoch 2") as lost:
        old.renew(1)
    assert lost.value.code == "XSCL-S020"
    old.release(1)  # a fenced holder's release changes nothing
    assert new.read() == taken


def test_a_released_lease_or_a_gone_holder_on_this_host_lapses_at_once(tmp_path: Path) -> None:
    lease = FileLease(tmp_path, _other_host("a"), duration=30)
    lease.acquire(None)
    lease.release(1)
    assert LeaseWatch(Clock()).lapsed(lease.read())
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    here = Identity.of_this_process()
    dead = Identity("dead", int(gone.stdout), here.host)
    other = FileLease(tmp_path / "b", dead, duration=30)
    other.acquire(None)
    assert LeaseWatch(Clock()).lapsed(other.read())
    member = PairMember(FileLease(tmp_path / "b", duration=30), StandbyBoard(tmp_path / "s"), 1)
    taken = member.try_take()
    assert taken is not None and taken.epoch == 2


RACER = """
import sys, time
from pathlib import Path
from xscl.service.pair.file_lease import FileLease
from xscl.service.pair.member import PairMember, StandbyBoard
folder, go, done = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
member = PairMember(FileLease(folder), StandbyBoard(folder / "standbys"), 1.0)
while not go.exists():
    time.sleep(0.001)
print("primary" if member.try_take() is not None else "standby", flush=True)
while not done.exists():  # alive: a gone holder's lease lapses at once
    time.sleep(0.01)
"""


def test_instances_started_at_once_make_exactly_one_primary(tmp_path: Path) -> None:
    go, done = tmp_path / "go", tmp_path / "done"
    racers = [
        subprocess.Popen([sys.executable, "-c", RACER, str(tmp_path / "lease"), str(go),
                          str(done)],
                         stdout=subprocess.PIPE, text=True, cwd=REPO,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
        for _ in range(8)
    ]
    time.sleep(1.0)  # every racer imported and waiting
    go.touch()
    roles = []
    for racer in racers:
        assert racer.stdout is not None
        roles.append(racer.stdout.readline().strip())
    done.touch()
    for racer in racers:
        racer.wait(timeout=60)
    assert sorted(roles) == ["primary"] + ["standby"] * 7
    assert FileLease(tmp_path / "lease").newest_epoch() == 1


RENEWER = """
import sys
from xscl.service.pair.file_lease import FileLease
lease = FileLease(sys.argv[1], duration=60)
record = lease.acquire(lease.read())
print(record.epoch, flush=True)
while True:
    lease.renew(record.epoch)
"""


def test_the_lease_file_survives_kill_minus_9_during_renewal(tmp_path: Path) -> None:
    rng = random.Random(20)
    folder = tmp_path / "lease"
    epochs = []
    for _ in range(12):
        proc = subprocess.Popen([sys.executable, "-c", RENEWER, str(folder)],
                                stdout=subprocess.PIPE, text=True, cwd=REPO,
                                env={**os.environ, "PYTHONPATH": str(REPO)})
        assert proc.stdout is not None
        epochs.append(int(proc.stdout.readline()))
        time.sleep(rng.uniform(0.0, 0.05))  # renewing in a tight loop
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        record = FileLease(folder).read()  # never torn: always a whole record
        assert record is not None and record.epoch == epochs[-1] and record.pid == proc.pid
    # each restart found the killed holder gone (same host) and took the next epoch
    assert epochs == list(range(1, 13))
