"""Where each epoch of a job writes, and how a new primary starts its epoch from the last.

Every epoch runs from folders of its own, so nothing an instance fenced out of its
epoch writes later can reach a reader or the new primary::

    HOME/checkpoints/NAME/e<E>/          Spark's checkpoint (offsets, commits, RocksDB state)
    HOME/results/NAME/e<E>/              markers, result parts, dead letters, feeds
    HOME/results/NAME/_epochs/<E>.json   the chain readers follow (``results_sink``)
    HOME/results/NAME/feeds              a symbolic link to the newest epoch's feeds
    HOME/state/NAME/e<E>/hot-values/     values found hot (``spark_plugin.job.hot_values``)
    HOME/state/NAME/published/           what the join groups PUBLISH (every epoch's: a
                                         spool kept by stream and result id, so what a
                                         fenced-out primary appends is only what its
                                         successor appends again, ``job.sink``)
    HOME/registry/NAME/applied/e<E>/     where each subscription event took effect

**Fork.** A new primary at epoch E takes the newest opened epoch P and reads the last
batch C that P's checkpoint has committed. It then hard-links into its own folders
what P had for batches up to C: the checkpoint's metadata and sources, offsets up to
C+1 (a planned batch is replayed with the same offsets), commits up to C, state files
of versions up to C+1 (batch N writes version N+1) and every RocksDB SST file (after
the versioned files: a snapshot names SST files written before it); the hot values
of batches up to C; the subscription events applied at offsets up to the end of batch
C; the Atom feeds. Spark never changes a checkpoint file in place (it writes a new
file and renames it), so a link is a snapshot of the file, and a file the old primary
writes later under the same name never changes the new epoch's copy. Last, E is
chained after batch C (``results.commit.open_epoch``): readers see P's markers up to C
only, and the new primary replays everything after C.

Where it runs: the driver of the instance that just took the lease, once per epoch.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from xscl.errors import LegacyHomeError
from xscl.results.commit import COMMITS, clear_staging, epoch_chain, epoch_folder, open_epoch

#: A versioned file of a state partition: ``12.changelog``, ``.12.zip.crc``, ``12_<id>.zip``.
_VERSIONED = re.compile(r"^\.?(\d+)[._]")
#: RocksDB's SST files, shared by the snapshots of a state partition.
_SSTS = "SSTs"


def epoch_name(epoch: int) -> str:
    """``e00000007``: the folder name of an epoch."""
    return f"e{epoch:08d}"


@dataclass(frozen=True)
class EpochFolders:
    """The folders epoch ``epoch`` of a job writes (see the module docstring)."""

    root: Path
    name: str
    epoch: int

    @property
    def checkpoint(self) -> Path:
        return self.root / "checkpoints" / self.name / epoch_name(self.epoch)

    @property
    def results_root(self) -> Path:
        """The job's results folder: every epoch's, and the chain (what readers open)."""
        return self.root / "results" / self.name

    @property
    def results(self) -> Path:
        return epoch_folder(self.results_root, self.epoch)

    @property
    def feeds_link(self) -> Path:
        """Where readers find the job's feeds after any restart: the link to the newest
        epoch's feeds, never one epoch's folder (the feeds' ``rel="self"`` by default)."""
        return self.results_root / "feeds"

    @property
    def hot_values(self) -> Path:
        return self.root / "state" / self.name / epoch_name(self.epoch) / "hot-values"

    @property
    def published(self) -> Path:
        return self.root / "state" / self.name / "published"

    @property
    def registry(self) -> Path:
        return self.root / "registry" / self.name

    @property
    def applied(self) -> Path:
        return self.registry / "applied" / epoch_name(self.epoch)

    def at(self, epoch: int) -> EpochFolders:
        return EpochFolders(self.root, self.name, epoch)


def _batches(folder: Path) -> list[int]:
    """Batch numbers of a Spark metadata log (files named by number)."""
    try:
        return sorted(int(n) for n in os.listdir(folder) if n.isdigit())
    except FileNotFoundError:
        return []


def last_committed_batch(checkpoint: Path) -> int:
    """The newest batch Spark committed in ``checkpoint`` (-1: none)."""
    return (_batches(checkpoint / "commits") or [-1])[-1]


def newest_planned_batch(checkpoint: Path) -> int:
    """The newest batch in ``checkpoint``'s offset log (-1: none): the running one
    while its commit is not written (Spark logs a batch's offsets before running it)."""
    return (_batches(checkpoint / "offsets") or [-1])[-1]


def batch_end_offset(checkpoint: Path, batch: int, key: str = "offset") -> int | None:
    """The spool offset batch ``batch`` read up to (its offsets file), None if unknown;
    ``key="published"``: the published spool's (0 in a batch planned before it).

    Spark's offset log: ``v1``, the batch's metadata, then one line per source.
    """
    try:
        lines = (checkpoint / "offsets" / str(batch)).read_text(encoding="utf-8").splitlines()
        return int(json.loads(lines[2]).get(key, 0 if key == "published" else None))
    except (OSError, IndexError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _link(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.link(source, target)


def _version(name: str) -> int | None:
    match = _VERSIONED.match(name)
    return int(match.group(1)) if match else None


def link_checkpoint(source: Path, target: Path, last: int) -> None:
    """Hard-link what ``source`` holds for batches up to ``last`` into ``target``."""
    target.mkdir(parents=True, exist_ok=True)
    ssts: list[Path] = []
    for folder, subfolders, files in os.walk(source):
        here = Path(folder)
        relative = here.relative_to(source)
        parts = relative.parts
        if _SSTS in subfolders:
            ssts.append(here / _SSTS)
            subfolders.remove(_SSTS)
        for name in files:
            if parts and parts[0] in ("offsets", "commits"):
                number = _version(name if name.startswith(".") else name + ".")
                limit = last + 1 if parts[0] == "offsets" else last
                if number is None or number > limit:
                    continue
            elif len(parts) == 3 and parts[0] == "state":
                version = _version(name)
                if version is not None and version > last + 1:
                    continue
            _link(here / name, target / relative / name)
    for sst_folder in ssts:  # after the snapshots that name them
        with contextlib.suppress(FileNotFoundError):
            for entry in os.scandir(sst_folder):
                _link(Path(entry.path), target / sst_folder.relative_to(source) / entry.name)


def _link_numbered(source: Path, target: Path, keep: int) -> None:
    """Link ``<number>.json`` files of ``source`` with number <= ``keep``."""
    target.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        for entry in os.scandir(source):
            stem = entry.name.removesuffix(".json")
            if entry.name.endswith(".json") and stem.isdigit() and int(stem) <= keep:
                _link(Path(entry.path), target / entry.name)


def _link_applied(source: Path, target: Path, upto: int) -> None:
    """Link the applied-event records of ``source`` whose offset is <= ``upto``."""
    target.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        for entry in os.scandir(source):
            if not entry.name.endswith(".json") or entry.name.startswith("."):
                continue
            try:
                offset = int(json.loads(Path(entry.path).read_text())["offset"])
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if offset <= upto:
                _link(Path(entry.path), target / entry.name)


def _link_all(source: Path, target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        for entry in os.scandir(source):
            if entry.is_file() and not entry.name.startswith("."):
                _link(Path(entry.path), target / entry.name)


def newest_epoch(root: Path, name: str) -> int:
    """The newest epoch opened for job ``name`` under home ``root`` (0: none yet): the
    floor of the next epoch, whatever lease store took the earlier ones."""
    opened = epoch_chain(EpochFolders(root, name, 0).results_root)
    return max((epoch for epoch, _after in opened), default=0)


def previous_epoch(folders: EpochFolders) -> int | None:
    """The newest epoch opened before ``folders.epoch`` (None: this is the job's first).

    Raises ``LegacyHomeError`` for a job written before epochs existed.
    """
    opened = [epoch for epoch, _after in epoch_chain(folders.results_root)]
    earlier = [epoch for epoch in opened if epoch < folders.epoch]
    if earlier:
        return max(earlier)
    flat = (folders.root / "checkpoints" / folders.name / "offsets", folders.results_root / COMMITS)
    for legacy in flat:
        if legacy.exists():
            raise LegacyHomeError(
                f"{legacy} is in the layout of an xscl without process pairs (no epochs): "
                f"run the job under a new --name (or a new --home) and replay the spool"
            )
    return None


def start_epoch(folders: EpochFolders) -> int:
    """Fork epoch ``folders.epoch`` from the newest opened one and chain it; the batch
    it continues after (-1: from the start)."""
    previous = previous_epoch(folders)
    after = -1
    folders.checkpoint.mkdir(parents=True, exist_ok=True)
    if previous is not None:
        old = folders.at(previous)
        after = last_committed_batch(old.checkpoint)
        link_checkpoint(old.checkpoint, folders.checkpoint, after)
        _link_numbered(old.hot_values, folders.hot_values, after)
        end = batch_end_offset(old.checkpoint, after) if after >= 0 else 0
        _link_applied(old.applied, folders.applied, 0 if end is None else end)
        _link_all(old.results / "feeds", folders.results / "feeds")
        clear_staging(old.results)  # orphans of a crash; a fenced primary's fail to commit
    open_epoch(folders.results_root, folders.epoch, after)
    _point_feeds(folders)
    return after


def _point_feeds(folders: EpochFolders) -> None:
    """``results/NAME/feeds`` -> this epoch's feeds, replaced atomically."""
    feeds = folders.results / "feeds"
    feeds.mkdir(parents=True, exist_ok=True)
    link = folders.feeds_link
    temporary = folders.results_root / f".feeds.{folders.epoch}.tmp"
    with contextlib.suppress(FileNotFoundError):
        temporary.unlink()
    os.symlink(os.path.relpath(feeds, folders.results_root), temporary)
    os.replace(temporary, link)
