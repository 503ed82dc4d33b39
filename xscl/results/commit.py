"""The results folder's commit protocol: staged parts, a marker per batch, epochs.

Layout of a results directory::

    _staging/<uuid>.jsonl               written by tasks, not yet committed
    part-<batch:020d>-<task:05d>.jsonl  committed data, one JSON result record per line
                                        (or .parquet: ``xscl.results.parquet``)
    _commits/<batch:020d>.json          commit marker of a micro-batch: its part files
    _commits/w-<ns>-<uuid>.json         commit marker of a batch (non-streaming) write

The streaming job (``xscl serve``) writes one such folder per **epoch** of its lease
(``xscl.service.pair``), chained by records in ``_epochs``::

    _epochs/00000002.json               {"epoch": 2, "after": 17}: epoch 2 continues
                                        after batch 17
    e00000001/_commits/..., part-...    epoch 1's folder (the layout above)
    e00000002/...

Readers (``xscl.results.read``) follow the chain: of each epoch they take the markers
up to the ``after`` of the next epoch, of the newest every marker. What an instance
fenced out of its epoch commits later is above that cut, so no reader ever sees it.

Guarantee: a micro-batch is visible exactly when its marker exists, and the marker is
written atomically (temporary file, ``fsync``, ``rename``, directory ``fsync``) after
its part files are in place. A replayed micro-batch (Spark re-runs the batch whose
commit it did not log before a crash, with the same id and the same offsets) finds
its marker and discards its new files, or, if the crash hit before the marker,
renames its files over the same names. Either way no line and no file is ever
duplicated.

Where it runs: tasks stage parts (``StagedPart`` is what a task reports back, plain
values that pickle); ``commit_batch`` / ``discard`` on the driver, once per batch.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xscl.connectors.durable import fsync_dir, write_atomically
from xscl.errors import OutputWriteError, ResultsDirectoryError

STAGING = "_staging"
COMMITS = "_commits"
EPOCHS = "_epochs"


def unwritable(exc: OSError, path: str) -> OSError:
    """``exc``, an ``OSError`` writing under the results folder ``path`` (full,
    read-only, gone), as the ``OutputWriteError`` (``XSCL-S023``) naming the file; ``exc``
    itself when it is no failed system call (e.g. one of our own coded errors). The
    batch stays uncommitted and ``xscl serve`` stops with that one line (exit 4).

    >>> import errno
    >>> unwritable(OSError(errno.EROFS, "Read-only file system", "/r/x"), "/r").code
    'XSCL-S023'
    """
    if exc.errno is None or isinstance(exc, OutputWriteError):
        return exc
    where = exc.filename or path
    reason = exc.strerror or str(exc)
    return OutputWriteError(f"the results folder {path} cannot be written: {reason}: {where}")


@contextlib.contextmanager
def unwritable_as_error(path: str) -> Iterator[None]:
    """Raise an ``OSError`` of the block as ``unwritable`` says."""
    try:
        yield
    except OSError as exc:
        error = unwritable(exc, path)
        if error is exc:
            raise
        raise error from exc


@dataclass(frozen=True)
class StagedPart:
    """What one task wrote: its staging file (None when it had no rows)."""

    partition: int
    staged: str | None
    rows: int


def clear_staging(path: str | Path) -> int:
    """Delete staging files a crashed run left behind; how many (driver, at start).

    Only for the job that owns the directory, before its first commit: a staged file
    is either renamed by its batch's commit or orphaned by a crash (the replayed
    batch stages new files), so at start-up every one is an orphan.
    """
    staging = Path(path) / STAGING
    removed = 0
    if staging.is_dir():
        for leftover in staging.iterdir():
            if leftover.is_file():
                leftover.unlink(missing_ok=True)
                removed += 1
    return removed


def discard(parts: Iterable[StagedPart]) -> None:
    """Delete the staging files of an aborted or already committed batch (driver)."""
    for part in parts:
        if part.staged is not None:
            Path(part.staged).unlink(missing_ok=True)


def commit_batch(
    path: str | Path,
    marker_name: str,
    parts: Iterable[StagedPart],
    extra: dict[str, Any] | None = None,
) -> bool:
    """Publish a batch's staged parts under ``marker_name``; False if it was already there.

    Parts are numbered in the batch by their ``partition``. ``extra``: more fields for
    the marker (the streaming job's per-batch figures).
    """
    root = Path(path)
    commits = root / COMMITS
    commits.mkdir(parents=True, exist_ok=True)
    marker = commits / f"{marker_name}.json"
    ordered = sorted(parts, key=lambda part: part.partition)
    if marker.exists():
        discard(ordered)
        return False
    published: list[dict[str, Any]] = []
    for part in ordered:
        if part.staged is None:
            continue
        suffix = Path(part.staged).suffix or ".jsonl"
        name = f"part-{marker_name}-{part.partition:05d}{suffix}"
        os.replace(part.staged, root / name)
        published.append({"file": name, "rows": part.rows})
    fsync_dir(root)
    body = {"batch": marker_name, "parts": published, "rows": sum(p["rows"] for p in published)}
    body.update(extra or {})
    write_atomically(marker, json.dumps(body, sort_keys=True).encode("utf-8"))
    return True


def epoch_folder(root: str | Path, epoch: int) -> Path:
    """The results folder of ``epoch`` under a job's results root."""
    return Path(root) / f"e{epoch:08d}"


def open_epoch(root: str | Path, epoch: int, after: int) -> Path:
    """Chain ``epoch`` after batch ``after`` of the epochs before it; its folder.

    Written once by the instance that holds ``epoch`` before its first commit; from
    then on readers cut the previous epochs at ``after``.
    """
    folder = epoch_folder(root, epoch)
    folder.mkdir(parents=True, exist_ok=True)
    records = Path(root) / EPOCHS
    records.mkdir(parents=True, exist_ok=True)
    body = json.dumps({"epoch": epoch, "after": after}).encode("utf-8")
    write_atomically(records / f"{epoch:08d}.json", body)
    return folder


def epoch_chain(root: str | Path) -> list[tuple[int, int]]:
    """(epoch, after) of every opened epoch, oldest first (empty: not an epoch layout)."""
    records = Path(root) / EPOCHS
    if not records.is_dir():
        return []
    chain = []
    for record in sorted(records.glob("*.json")):
        try:
            body = json.loads(record.read_text(encoding="utf-8"))
            chain.append((int(body["epoch"]), int(body["after"])))
        except (ValueError, KeyError, TypeError) as exc:
            raise ResultsDirectoryError(f"epoch record {record} is unreadable: {exc}") from exc
    return sorted(chain)
