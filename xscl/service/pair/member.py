"""One instance's life in a pair: standby until the lease lapses, then primary until fenced.

* ``PairMember.try_take`` takes a free lease; ``stand_by`` waits as a standby: it
  polls the lease, writes a heartbeat file for ``xscl status`` (``StandbyBoard``) and
  runs the caller's warm-up in the background; when the lease lapses (``LeaseWatch``)
  it claims the next epoch.
  The first instance of a job finds no lease and takes it at once; of two instances
  started together exactly one wins the epoch's compare-and-set.
* ``Renewer`` renews the lease every ``renew_seconds`` on a daemon thread. When a
  newer epoch was taken (the instance was paused or cut off past its lease) it calls
  ``on_lost`` with the one-line reason: the caller stops the process at once.

Where it runs: the driver process of ``xscl serve``, once per instance.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from xscl.connectors.durable import write_atomically
from xscl.errors import LeaseLostError, LeaseStoreError
from xscl.service.pair.lease import Identity, Lease, LeaseRecord, LeaseWatch, process_gone


class StandbyBoard:
    """``HOME/pair/NAME/standbys/<holder>.json``: one heartbeat file per standby."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)

    def beat(self, identity: Identity, since: float, duration: float, *, warm: bool) -> None:
        """Say this standby is alive for ``duration`` more seconds (``warm``: its warm-up
        finished)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        body = {
            "holder": identity.holder,
            "pid": identity.pid,
            "host": identity.host,
            "since": since,
            "renewed": time.time(),
            "duration": duration,
            "warm": warm,
        }
        write_atomically(self.folder / f"{identity.holder}.json", json.dumps(body).encode())

    def leave(self, identity: Identity) -> None:
        with contextlib.suppress(OSError):
            (self.folder / f"{identity.holder}.json").unlink()

    def live(self, now: float | None = None) -> list[dict[str, Any]]:
        """The standbys whose heartbeat has not lapsed, oldest first."""
        moment = time.time() if now is None else now
        out = []
        with contextlib.suppress(FileNotFoundError):
            for entry in os.scandir(self.folder):
                if entry.name.startswith(".") or not entry.name.endswith(".json"):
                    continue
                try:
                    body = json.loads(Path(entry.path).read_text(encoding="utf-8"))
                    fresh = float(body["renewed"]) + float(body["duration"]) > moment
                    gone = process_gone(str(body["host"]), int(body["pid"]))
                except (OSError, ValueError, KeyError, TypeError):
                    continue
                if fresh and not gone:
                    out.append(body)
        return sorted(out, key=lambda body: float(body["since"]))


class PairMember:
    """Stands by until this instance holds the lease (see the module docstring)."""

    def __init__(
        self,
        lease: Lease,
        board: StandbyBoard,
        renew_seconds: float,
        say: Callable[[str], None] | None = None,
        floor: Callable[[], int] | None = None,
    ) -> None:
        self.lease = lease
        self.board = board
        self.renew_seconds = renew_seconds
        self.say = say or _stderr
        #: the newest epoch opened on the home, read before each claim (``Lease.acquire``)
        self.floor = floor or (lambda: 0)
        self._watch = LeaseWatch()
        #: the lease record ``try_take`` last read
        self.seen: LeaseRecord | None = None

    def try_take(self) -> LeaseRecord | None:
        """Take the lease if nobody holds it (or its holder on this host is gone)."""
        record = self.lease.read()
        self.seen = record
        if self._watch.lapsed(record):
            return self.lease.acquire(record, self.floor())
        return None

    def stand_by(
        self, warm: Callable[[Callable[[], None]], None] | None = None
    ) -> LeaseRecord:
        """Wait as a standby until the lease is ours; our lease record.

        ``warm(ready)`` (the caller's warm-up) runs on a background thread meanwhile
        and calls ``ready()`` once the standby is warm (its heartbeat says so).
        """
        since = time.time()
        last_beat = 0.0
        announced = False
        warming: threading.Thread | None = None
        warm_done = threading.Event()
        try:
            while True:
                taken = self.try_take()
                if taken is not None:
                    return taken
                record = self.seen
                if not announced and record is not None:
                    self.say(
                        f"xscl: standby: the primary is pid {record.pid} on {record.host} "
                        f"(epoch {record.epoch}); taking over when its lease lapses"
                    )
                    announced = True
                if warm is not None and warming is None:
                    warming = threading.Thread(
                        target=_then_set, args=(warm, warm_done), name="xscl-standby", daemon=True
                    )
                    warming.start()
                now = time.monotonic()
                if now - last_beat >= self.renew_seconds:
                    warmed = warming is None or warm_done.is_set()
                    duration = 3 * self.renew_seconds
                    self.board.beat(self.lease.identity, since, duration, warm=warmed)
                    last_beat = now
                time.sleep(self.lease.poll_seconds)
        finally:
            self.board.leave(self.lease.identity)


class Renewer(threading.Thread):
    """Renews the lease of ``epoch`` until stopped; ``on_lost(reason)`` once it is lost."""

    def __init__(
        self,
        lease: Lease,
        epoch: int,
        interval: float,
        on_lost: Callable[[str], None],
        say: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(name="xscl-lease-renewer", daemon=True)
        self.lease = lease
        self.epoch = epoch
        self.interval = interval
        self.on_lost = on_lost
        self.say = say or _stderr
        self.stopped = threading.Event()

    def run(self) -> None:
        failing = False
        while not self.stopped.wait(self.interval):
            try:
                self.lease.renew(self.epoch)
            except LeaseLostError as exc:
                self.on_lost(str(exc.args[0]))
                return
            except LeaseStoreError as exc:
                # a standby takes over if this lasts: fencing keeps that safe
                if not failing:
                    self.say(f"xscl: cannot renew the lease (retrying): {exc}")
                failing = True
                continue
            failing = False

    def stop(self) -> None:
        self.stopped.set()


def _then_set(warm: Callable[[Callable[[], None]], None], done: threading.Event) -> None:
    warm(done.set)


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
