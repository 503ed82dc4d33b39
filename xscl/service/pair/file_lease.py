"""The lease as files on the job's shared home (``HOME/pair/NAME``).

::

    claims/00000001.json   one per epoch, created exclusively (hard link of a synced
                           temporary file: of two instances racing for an epoch exactly
                           one gets it); never changed or removed
    lease.json             the newest epoch's holder, renewed every ``--renew-seconds``
                           (temporary file, fsync, rename: a reader, or an instance
                           killed during a renewal, sees the old or the new record)

The epoch is the highest claim. A holder renews only while ``claims/<epoch+1>`` does
not exist, and the sink checks the same before every commit, so once a standby has
claimed the next epoch the old holder's renewals and commits fail. Creating the claim
is the compare-and-set; ``lease.json`` only carries liveness. A standby claims the next
epoch after it saw ``lease.json`` unchanged for the record's duration (``LeaseWatch``).

Needs a file system with atomic ``rename`` and ``link`` (local disks, NFSv3+).
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any

from xscl.connectors.durable import create_exclusively, write_atomically
from xscl.errors import LeaseLostError, LeaseStoreError
from xscl.service.pair.lease import DEFAULT_LEASE_SECONDS, Identity, LeaseRecord, lost_message

CLAIMS = "claims"
LEASE_FILE = "lease.json"
_DIGITS = 8
#: Temporary files older than this (seconds) were left by a killed writer.
_STALE_SECONDS = 60.0


class FileLease:
    """``Lease`` on files of a folder every instance of the job can reach."""

    #: a look is two small file reads
    poll_seconds = 0.1

    def __init__(
        self,
        folder: str | Path,
        identity: Identity | None = None,
        duration: float = DEFAULT_LEASE_SECONDS,
    ) -> None:
        self.folder = Path(folder)
        self.identity = identity or Identity.of_this_process()
        self.duration = duration

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> FileLease:
        return cls(spec["folder"], duration=float(spec["duration"]))

    def spec(self) -> dict[str, Any]:
        return {"kind": "file", "folder": str(self.folder), "duration": self.duration}

    # ----------------------------------------------------------------- reading
    def _claim(self, epoch: int) -> Path:
        return self.folder / CLAIMS / f"{epoch:0{_DIGITS}d}.json"

    def newest_epoch(self) -> int:
        """The highest claimed epoch (0: none yet)."""
        folder = self.folder / CLAIMS
        try:
            names = os.listdir(folder)
        except FileNotFoundError:
            return 0
        except OSError as exc:
            raise LeaseStoreError(f"cannot list {folder}: {exc}") from exc
        epochs = [int(n[:-5]) for n in names if n.endswith(".json") and n[:-5].isdigit()]
        return max(epochs, default=0)

    def read(self) -> LeaseRecord | None:
        """The record of the newest epoch: ``lease.json``, or its claim while the
        claimant has not written ``lease.json`` yet."""
        newest = self.newest_epoch()
        if newest == 0:
            return None
        path = self.folder / LEASE_FILE
        try:
            record = LeaseRecord.from_json(path.read_bytes(), str(path))
        except FileNotFoundError:
            record = None
        except OSError as exc:
            raise LeaseStoreError(f"cannot read {path}: {exc}") from exc
        if record is not None and record.epoch == newest:
            return record
        claim = self._claim(newest)
        try:
            return LeaseRecord.from_json(claim.read_bytes(), str(claim))
        except OSError as exc:
            raise LeaseStoreError(f"cannot read {claim}: {exc}") from exc

    def holds(self, epoch: int) -> bool:
        """``epoch`` is claimed and the next one is not (claims are taken in order)."""
        return self._claim(epoch).exists() and not self._claim(epoch + 1).exists()

    # ----------------------------------------------------------------- writing
    def acquire(self, observed: LeaseRecord | None, floor: int = 0) -> LeaseRecord | None:
        self._remove_stale_temporaries()
        current = self.read()
        if current != observed:
            return None  # renewed or taken over since the caller decided
        epoch = max(0 if current is None else current.epoch, floor) + 1
        record = self.identity.record(epoch, self.duration)
        claims = self.folder / CLAIMS
        try:
            claims.mkdir(parents=True, exist_ok=True)
            if not create_exclusively(self._claim(epoch), record.to_json()):
                return None  # another standby claimed this epoch first
            write_atomically(self.folder / LEASE_FILE, record.to_json())
        except OSError as exc:
            raise LeaseStoreError(f"cannot write the lease in {self.folder}: {exc}") from exc
        return record

    def renew(self, epoch: int) -> LeaseRecord:
        if not self.holds(epoch):
            taken = self.read()
            raise LeaseLostError(lost_message(epoch, taken))
        record = self.identity.record(epoch, self.duration)
        try:
            write_atomically(self.folder / LEASE_FILE, record.to_json())
        except OSError as exc:
            raise LeaseStoreError(f"cannot renew the lease in {self.folder}: {exc}") from exc
        return record

    def release(self, epoch: int) -> None:
        if self.holds(epoch):
            record = self.identity.record(epoch, self.duration, released=True)
            with contextlib.suppress(OSError):
                write_atomically(self.folder / LEASE_FILE, record.to_json())

    def _remove_stale_temporaries(self) -> None:
        """Temporary files a writer killed mid-renewal left (never read: names start
        with a dot)."""
        now = time.time()
        for folder in (self.folder, self.folder / CLAIMS):
            with contextlib.suppress(OSError):
                for entry in os.scandir(folder):
                    if entry.name.startswith(".") and entry.name.endswith(".tmp"):
                        with contextlib.suppress(OSError):
                            if now - entry.stat().st_mtime > _STALE_SECONDS:
                                os.unlink(entry.path)

