"""The lease of a process pair: who is primary, at which epoch, and until when.

Two instances of ``xscl serve`` on the same job form a pair: the one holding the
lease is the primary, the others are standbys that take the lease over when it
lapses. Every take-over increments the **epoch**, a number no two instances ever
hold at once: it is claimed by an atomic compare-and-set of the lease store (an
exclusively created file, or a Kubernetes ``resourceVersion``). The epoch names the
folders the primary writes (``epochs``), so what a fenced-out primary writes later is
never read. The lease's expiry only decides *when* a standby takes over; safety never
depends on clocks.

``Lease`` is the small protocol both stores implement (``file_lease.FileLease``,
``k8s_lease.KubernetesLease``); ``LeaseWatch`` decides when an observed lease has
lapsed, on the observer's own monotonic clock (as Kubernetes' leader election does),
so the pair needs no synchronised clocks.

Where it runs: the driver process of every instance (acquire, renew, release), and the
sink's commit (``holds``, in a Python worker of the driver), rebuilt there from
``Lease.spec``.
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from xscl.errors import LeaseStoreError

#: Where the lease of a process pair is kept (``--lease``).
LEASE_KINDS = ("file", "kubernetes")
#: Default seconds a lease lasts unrenewed, and between renewals.
DEFAULT_LEASE_SECONDS = 3.0
DEFAULT_RENEW_SECONDS = 1.0


@dataclass(frozen=True)
class LeaseRecord:
    """The lease as stored: the holder, its epoch and how long it lasts."""

    holder: str
    pid: int
    host: str
    epoch: int
    #: wall-clock seconds of the last renewal (shown by ``xscl status``)
    renewed: float
    #: seconds the lease lasts after a renewal
    duration: float
    #: the holder gave it up (a clean stop): a standby may take over at once
    released: bool = False
    #: the store's version of the record, for its compare-and-set (Kubernetes'
    #: resourceVersion; the file store needs none)
    token: str = ""

    @property
    def expires(self) -> float:
        """Wall-clock expiry as the holder wrote it (informational)."""
        return self.renewed + self.duration

    def to_json(self) -> bytes:
        return json.dumps(asdict(self), sort_keys=True).encode("utf-8")

    @classmethod
    def from_json(cls, data: bytes | str, where: str) -> LeaseRecord:
        try:
            raw = json.loads(data)
            return cls(
                holder=str(raw["holder"]),
                pid=int(raw["pid"]),
                host=str(raw["host"]),
                epoch=int(raw["epoch"]),
                renewed=float(raw["renewed"]),
                duration=float(raw["duration"]),
                released=bool(raw.get("released", False)),
                token=str(raw.get("token", "")),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise LeaseStoreError(f"the lease {where} is not a lease record: {exc}") from exc


@dataclass(frozen=True)
class Identity:
    """Who an instance is: a holder id unique to this process, its pid and host."""

    holder: str
    pid: int
    host: str

    @classmethod
    def of_this_process(cls) -> Identity:
        host = socket.gethostname()
        pid = os.getpid()
        return cls(f"{host}-{pid}-{uuid.uuid4().hex[:8]}", pid, host)

    def record(self, epoch: int, duration: float, *, released: bool = False) -> LeaseRecord:
        """This instance's lease record at ``epoch``, renewed now."""
        return LeaseRecord(
            self.holder, self.pid, self.host, epoch, time.time(), duration, released
        )


class Lease(Protocol):
    """One job's lease in some store; every method is a short call to that store."""

    identity: Identity
    duration: float
    #: seconds between two looks at the lease while standing by (a cost per look)
    poll_seconds: float

    def read(self) -> LeaseRecord | None:
        """The lease as stored now; None before any instance took it."""

    def acquire(self, observed: LeaseRecord | None, floor: int = 0) -> LeaseRecord | None:
        """Take the lease at the next epoch if it is still ``observed``; None if another
        instance changed it first (it renewed, or took it over).

        The next epoch is above both the observed one and ``floor``, the newest epoch
        already opened on the home: a job that ran under another lease store (one
        driver's file lease, then a pair's Kubernetes Lease) never reopens an epoch."""

    def renew(self, epoch: int) -> LeaseRecord:
        """Renew the lease held at ``epoch``; raises ``LeaseLostError`` if a newer epoch
        was taken."""

    def holds(self, epoch: int) -> bool:
        """Is ``epoch`` still the newest one (the fencing check before a commit)?"""

    def release(self, epoch: int) -> None:
        """Give the lease up (a clean stop) so a standby takes over at once."""

    def spec(self) -> dict[str, Any]:
        """JSON data from which ``lease_from_spec`` rebuilds this lease elsewhere."""


def lease_from_spec(spec: dict[str, Any]) -> Lease:
    """The lease a ``Lease.spec()`` describes (in the sink's commit, to check the epoch)."""
    kind = spec.get("kind")
    if kind == "file":
        from xscl.service.pair.file_lease import FileLease

        return FileLease.from_spec(spec)
    if kind == "kubernetes":
        from xscl.service.pair.k8s_lease import KubernetesLease

        lease: Lease = KubernetesLease.from_spec(spec)
        return lease
    raise LeaseStoreError(f"unknown lease kind {kind!r}")


def pair_folder(home: str | Path, name: str) -> Path:
    """``HOME/pair/NAME``: the file lease and the standbys' heartbeats of job ``name``."""
    return Path(home) / "pair" / name


def job_lease(
    kind: str,
    home: str | Path,
    name: str,
    duration: float,
    lease_name: str | None = None,
    namespace: str | None = None,
) -> Lease:
    """The lease of job ``name`` in the store ``kind`` names (``--lease``)."""
    if kind == "kubernetes":
        from xscl.service.pair.k8s_lease import KubernetesLease

        found: Lease = KubernetesLease.in_cluster(lease_name or f"xscl-{name}", namespace, duration)
        return found
    from xscl.service.pair.file_lease import FileLease

    return FileLease(pair_folder(home, name), duration=duration)


def process_gone(host: str, pid: int) -> bool:
    """Is the process ``pid`` on ``host`` known to be gone (only decidable on this host)?

    A record of this very pid is a previous incarnation (a restarted container reuses
    pids), so it is gone too.
    """
    if host != socket.gethostname():
        return False
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass
    return False


def lost_message(epoch: int, taken: LeaseRecord | None) -> str:
    """The one line a fenced-out primary prints (both lease stores)."""
    if taken is None or taken.epoch <= epoch:
        return f"the lease of epoch {epoch} was taken over"
    return (
        f"the lease of epoch {epoch} was taken over by epoch {taken.epoch} (holder "
        f"{taken.holder}, pid {taken.pid} on {taken.host})"
    )


class LeaseWatch:
    """Decides when a lease observed again and again has lapsed (a standby's view).

    A lease has lapsed when it is released, when its holder runs on this host and is
    gone, or when the record stayed the same for its ``duration`` on the watcher's own
    monotonic clock (the holder renews by writing a new ``renewed``).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._seen: LeaseRecord | None = None
        self._since = 0.0

    def lapsed(self, record: LeaseRecord | None) -> bool:
        """Observe ``record`` now; True if a standby may take the lease over."""
        now = self._clock()
        if record != self._seen:
            self._seen, self._since = record, now
        if record is None or record.released:
            return True
        if process_gone(record.host, record.pid):
            return True
        return now - self._since >= record.duration
