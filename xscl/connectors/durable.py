"""Crash-safe file writes shared by the spool, the engines' outputs and the Spark job.

A reader (or a process restarted after ``kill -9``) sees either the old file or
the complete new one, never a torn mix: data goes to a temporary file in the
same folder, is fsync-ed, then renamed over (or linked to) the target, and the
folder is fsync-ed so the rename itself survives a crash.

The reference evaluator keeps its own writer on purpose: it shares nothing with
the engines but the parser.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable
from pathlib import Path


def fsync_file(path: Path) -> None:
    """Make the bytes of ``path`` durable (a file written by a library that does not sync)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    """Make a rename or creation in ``path`` durable."""
    fsync_file(path)


def write_synced(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` (created or truncated) and fsync it."""
    with open(path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def write_atomically(target: Path, data: bytes, *, sync_dir: bool = True) -> None:
    """Replace ``target`` with ``data`` so readers see the old or the new file, never a mix.

    ``sync_dir=False`` leaves the folder's fsync to the caller: one ``fsync_dir``
    after replacing many files of one folder makes all the renames durable.
    """
    temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
    try:
        write_synced(temporary, data)
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)
    if sync_dir:
        fsync_dir(target.parent)


def create_exclusively(target: Path, data: bytes) -> bool:
    """Create ``target`` with ``data`` atomically unless it exists; False if it did.

    Concurrent writers racing for one name: exactly one wins, the others get False
    and nothing of theirs is left behind.
    """
    temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
    try:
        write_synced(temporary, data)
        try:
            os.link(temporary, target)
        except FileExistsError:
            return False
    finally:
        temporary.unlink(missing_ok=True)
    fsync_dir(target.parent)
    return True


def create_temporary(target: Path) -> tuple[int, str]:
    """A new temporary file beside ``target``, opened for writing: ``(fd, path)``.

    Its mode is what the umask leaves of 0666, as for any file the user creates
    (``tempfile.mkstemp`` would make it 0600, and the rename would keep that).
    """
    temporary = str(target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp"))
    return os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), temporary


def write_lines_atomically(path: Path, lines: Iterable[str]) -> None:
    """Write text lines (streamed, not held in memory) atomically; makes the folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = create_temporary(path)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            for line in lines:
                handle.write(line + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    fsync_dir(path.parent)
