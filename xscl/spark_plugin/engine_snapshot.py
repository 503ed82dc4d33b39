"""Snapshots of the driver's join state, so a restart replays a tail, not the spool.

The streaming job's engine state (stored documents, view cache, emitted result ids,
subscriptions in effect) lives in the driver's memory (``pipeline.EnginePipeline``).
After a crash it must be rebuilt exactly as it was before the first batch Spark
hands the new driver. Without snapshots that means replaying the whole spool; with
them, the newest snapshot taken at or below that batch's first offset is loaded and
only the records after it are replayed.

A snapshot is written after a batch committed, as one pickle file named by the
spool offset it is valid for (``snap-<offset>.pkl``: the state after every record
below ``offset``), atomically (temporary file, fsync, rename, directory fsync). The
newest ``keep`` are kept: Spark may replay the last uncommitted batch, whose start
can lie below the newest snapshot, so older ones must survive a while.

The files are pickles written and read by the job itself under ``--home``; like
Spark's own checkpoint they must not be writable by anyone untrusted.

Runs on the driver only.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

from xscl.connectors.durable import write_atomically

_PREFIX = "snap-"
_SUFFIX = ".pkl"


class SnapshotStore:
    """``HOME/state/NAME``: the driver's engine snapshots by spool offset."""

    def __init__(self, folder: str | Path, *, keep: int = 3) -> None:
        self.folder = Path(folder)
        self.keep = max(2, keep)

    def offsets(self) -> list[int]:
        """Offsets with a snapshot, ascending."""
        if not self.folder.is_dir():
            return []
        out = []
        for path in self.folder.glob(f"{_PREFIX}*{_SUFFIX}"):
            digits = path.name[len(_PREFIX) : -len(_SUFFIX)]
            if digits.isdigit():
                out.append(int(digits))
        return sorted(out)

    def save(self, offset: int, state: Any) -> Path:
        """Write the state valid below ``offset``; drop all but the newest ``keep``."""
        self.folder.mkdir(parents=True, exist_ok=True)
        final = self._path(offset)
        write_atomically(final, pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL))
        for old in self.offsets()[: -self.keep]:
            self._path(old).unlink(missing_ok=True)
        return final

    def latest(self, at_most: int) -> tuple[int, Any] | None:
        """The newest snapshot valid at an offset <= ``at_most``, or None.

        A snapshot that cannot be read (e.g. written by an incompatible version) is
        skipped for an older one: replaying more is always correct, only slower.
        """
        for offset in reversed(self.offsets()):
            if offset > at_most:
                continue
            try:
                with self._path(offset).open("rb") as handle:
                    return offset, pickle.load(handle)
            except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
                continue
        return None

    def _path(self, offset: int) -> Path:
        return self.folder / f"{_PREFIX}{offset:020d}{_SUFFIX}"
