"""Kill -9 the streaming job at chosen points: the tools of tests/spark/test_spark_kill.py.

A *kill point* names a moment of a micro-batch that is visible on disk:

* ``offsets`` -- Spark logged a batch's offsets in ``CHECKPOINT/offsets`` (the batch
  is planned, nothing of it is committed);
* ``stage1``  -- a task of the job's source is inside Stage 1 on an executor
  (``RouteTask.route``): the job's Python daemon (``tests/spark/stage1_daemon.py``)
  marks ``<pid>-<n>.begin`` in ``HOME/stage1-marks`` and, armed, holds the task there;
* ``state``   -- a state partition's RocksDB commit of the batch is written
  (``CHECKPOINT/state/0/<partition>/<batch + 1>.changelog``) and the batch's results
  are not published: inside the stateful operator's state commit;
* ``staged``  -- a result file appeared in ``RESULTS/_staging`` (the batch's output
  is written, its commit marker is not);
* ``marked``  -- a commit marker appeared in ``RESULTS/_commits`` (the results are
  published, Spark has not logged the batch in ``CHECKPOINT/commits`` yet).

The watcher reacts to the file system event itself (Linux inotify, no polling
interval) and stops the whole driver process group with SIGSTOP at once, then
reads what is on disk. The job runs on for the moment the watcher needs to wake
up, so it may already have left the window (measured: 12 of 14 ``staged`` events,
every ``marked`` and ``offsets`` event were caught inside it): then the job is
resumed with SIGCONT and the next event awaited; inside it, the frozen group and
every process below the driver (the Python daemon and its workers have their own
process group) are SIGKILLed, so the recorded state is exactly the state the job
died in. A ``stage1`` task holds itself until killed, so that window is never missed.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import re
import select
import signal
import struct
import subprocess
import time
from collections.abc import Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from xscl.results.commit import COMMITS, STAGING, epoch_folder
from xscl.results.read import committed_markers

POINTS = ("offsets", "stage1", "state", "staged", "marked")
_IN_CLOSE_WRITE = 0x00000008
_IN_MOVED_TO = 0x00000080
_IN_CREATE = 0x00000100
_IN_NONBLOCK = 0o4000
_IN_CLOEXEC = 0o2000000
_EVENT = struct.Struct("iIII")
_MARKER = re.compile(r"^(\d{20})\.json$")
_CHANGELOG = re.compile(r"^(\d+)\.changelog$")
#: The file that makes the job's Stage 1 tasks hold (``tests/spark/stage1_daemon.py``).
ARMED = "armed"


class Inotify:
    """Linux inotify on a few directories: which file names were created or renamed in."""

    def __init__(self, folders: Sequence[Path]) -> None:
        self._libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self._libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1 failed")
        self._folders: dict[int, Path] = {}
        mask = _IN_CREATE | _IN_MOVED_TO | _IN_CLOSE_WRITE
        for folder in folders:
            wd = self._libc.inotify_add_watch(self.fd, os.fsencode(folder), mask)
            if wd < 0:
                raise OSError(ctypes.get_errno(), f"inotify_add_watch {folder} failed")
            self._folders[wd] = folder

    def events(self, timeout: float) -> Iterator[tuple[Path, str]]:
        """(folder, file name) of each event within ``timeout`` seconds (none: empty)."""
        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        if not poller.poll(int(timeout * 1000)):
            return
        try:
            data = os.read(self.fd, 1 << 16)
        except BlockingIOError:
            return
        pos = 0
        while pos + _EVENT.size <= len(data):
            wd, _mask, _cookie, length = _EVENT.unpack_from(data, pos)
            raw = data[pos + _EVENT.size : pos + _EVENT.size + length]
            pos += _EVENT.size + length
            if wd in self._folders:
                yield self._folders[wd], os.fsdecode(raw.rstrip(b"\0"))

    def close(self) -> None:
        os.close(self.fd)

    def __enter__(self) -> Inotify:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


@dataclass(frozen=True)
class JobPaths:
    """Where one streaming job (``--home HOME --name NAME``) keeps its state: the
    results root readers open, and the folders of its newest epoch."""

    home: Path
    name: str = "xscl"

    @property
    def results(self) -> Path:
        return self.home / "results" / self.name

    def newest_epoch(self) -> int:
        """The newest epoch with a checkpoint folder (0: none yet)."""
        folder = self.home / "checkpoints" / self.name
        names = [p.name for p in folder.glob("e[0-9]*")] if folder.is_dir() else []
        return max((int(n[1:]) for n in names), default=0)

    @property
    def epoch_results(self) -> Path:
        return epoch_folder(self.results, self.newest_epoch())

    @property
    def checkpoint(self) -> Path:
        return self.home / "checkpoints" / self.name / f"e{self.newest_epoch():08d}"

    @property
    def marks(self) -> Path:
        """Where the job's Stage 1 tasks mark their begin and end (``stage1``)."""
        return self.home / "stage1-marks"

    def state_partitions(self) -> list[Path]:
        """The folders of the stateful operator's state partitions (after its first commit)."""
        root = self.checkpoint / "state" / "0"
        return sorted(p for p in root.iterdir() if p.name.isdigit()) if root.is_dir() else []


def _batch_numbers(folder: Path) -> set[int]:
    """Spark metadata-log entries (files named by a batch number) in ``folder``."""
    if not folder.is_dir():
        return set()
    return {int(p.name) for p in folder.iterdir() if p.name.isdigit()}


@dataclass(frozen=True)
class DiskState:
    """What a job had on disk at one moment (its processes stopped)."""

    markers: frozenset[int]
    offsets_logged: frozenset[int]
    commits_logged: frozenset[int]
    staged: tuple[str, ...]
    #: Stage 1 marks (``<pid>-<n>``) begun and not ended: tasks inside Stage 1
    in_stage1: frozenset[str]

    @classmethod
    def read(cls, paths: JobPaths) -> DiskState:
        markers = {int(marker["batch"]) for marker in committed_markers(paths.results)}
        staging = paths.epoch_results / STAGING
        staged = sorted(p.name for p in staging.iterdir() if not p.name.startswith(".")) if (
            staging.is_dir()
        ) else []
        marks = {p.name for p in paths.marks.iterdir()} if paths.marks.is_dir() else set()
        return cls(
            frozenset(markers),
            frozenset(_batch_numbers(paths.checkpoint / "offsets")),
            frozenset(_batch_numbers(paths.checkpoint / "commits")),
            tuple(staged),
            frozenset(
                m[: -len(".begin")]
                for m in marks
                if m.endswith(".begin") and m[: -len(".begin")] + ".end" not in marks
            ),
        )

    def inside(self, point: str, batch: int, trigger: str) -> bool:
        """Was batch ``batch`` still inside the window ``point`` names (event ``trigger``)?"""
        if point == "staged":
            return trigger in self.staged and batch not in self.markers
        if point == "marked":
            return batch in self.markers and batch not in self.commits_logged
        if point == "stage1" and trigger not in self.in_stage1:
            return False
        return batch in self.offsets_logged and batch not in self.markers

    def describe(self) -> str:
        def top(numbers: frozenset[int]) -> str:
            return f"..{max(numbers)}" if numbers else " none"

        return (
            f"results markers{top(self.markers)}, Spark offsets logged{top(self.offsets_logged)}, "
            f"Spark commits logged{top(self.commits_logged)}, {len(self.staged)} staged file(s), "
            f"{len(self.in_stage1)} task(s) inside Stage 1"
        )


@dataclass(frozen=True)
class Kill:
    """One kill -9 of a driver: where it was aimed and what it hit."""

    point: str
    after_commits: int
    batch: int
    trigger: str
    state: DiskState
    #: Earlier events of the point where the job had already left the window.
    misses: int = 0

    @property
    def inside(self) -> bool:
        return self.state.inside(self.point, self.batch, self.trigger)

    def describe(self) -> str:
        where = "inside" if self.inside else "outside"
        return (
            f"kill -9 at '{self.point}' of batch {self.batch} (armed after {self.after_commits} "
            f"commits, trigger {self.trigger}, {where} the window, {self.misses} near "
            f"misses): {self.state.describe()}"
        )


class Job:
    """A streaming job run as ``python -m xscl.spark_plugin.submit`` in its own session.

    Its own process group holds the Python driver, the JVM it starts and, under
    ``local-cluster``, the executor JVMs: signalling the group is a crashed host.
    """

    def __init__(
        self, argv: Sequence[str], log: Path, cwd: Path, env: Mapping[str, str] | None = None
    ) -> None:
        self.log = log
        with log.open("ab") as sink:
            sink.write(f"\n==== {' '.join(argv)}\n".encode())
            sink.flush()
            self.process = subprocess.Popen(
                list(argv),
                stdout=sink,
                stderr=subprocess.STDOUT,
                cwd=cwd,
                env=env,
                start_new_session=True,
            )
        self.pid = self.process.pid

    def running(self) -> bool:
        return self.process.poll() is None

    def signal_group(self, number: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, number)

    def kill(self) -> None:
        """SIGKILL the whole group and every process below the driver (a crashed host);
        reap the driver."""
        below = descendants(self.pid)
        self.signal_group(signal.SIGKILL)
        for pid in below:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.process.wait(timeout=60)

    def log_tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:]

    def __enter__(self) -> Job:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.kill()


class JobFailed(AssertionError):
    """The job exited or stalled before reaching the awaited point (carries its log)."""


def wait_for_commits(job: Job, paths: JobPaths, commits: int, timeout: float) -> int:
    """Poll until ``commits`` results markers exist; the number there is."""
    deadline = time.monotonic() + timeout
    while (count := len(committed_markers(paths.results))) < commits:
        if not job.running():
            raise JobFailed(f"the job exited (rc {job.process.returncode}) before {commits} "
                            f"commits (has {count}):\n{job.log_tail()}")
        if time.monotonic() > deadline:
            raise JobFailed(f"no {commits} commits within {timeout:.0f} s (has {count}):\n"
                            f"{job.log_tail()}")
        time.sleep(0.05)
    return count


def _watched(paths: JobPaths, point: str) -> list[Path]:
    if point == "staged":
        return [paths.epoch_results / STAGING]
    if point == "marked":
        return [paths.epoch_results / COMMITS]
    if point == "offsets":
        return [paths.checkpoint / "offsets"]
    if point == "stage1":
        return [paths.marks]
    if point == "state":
        partitions = paths.state_partitions()
        assert partitions, "no state partition yet: arm 'state' after a commit"
        return partitions
    raise ValueError(f"unknown kill point {point!r}; one of {POINTS}")


def _matches(point: str, name: str) -> bool:
    """Is a file named ``name`` in the watched folder the event ``point`` waits for?"""
    if name.startswith("."):
        return False  # temporary files of atomic writes
    if point == "marked":
        return _MARKER.match(name) is not None
    if point == "offsets":
        return name.isdigit()
    if point == "stage1":
        return name.endswith(".begin")
    if point == "state":
        return _CHANGELOG.match(name) is not None
    return True


def _batch_of(point: str, name: str, state: DiskState) -> int:
    """The batch the event ``name`` of ``point`` belongs to."""
    if point == "marked":
        match = _MARKER.match(name)
        assert match is not None
        return int(match.group(1))
    if point == "offsets":
        return int(name)
    if point == "state":  # state version v is written by batch v - 1
        return int(name.split(".")[0]) - 1
    return max(state.offsets_logged, default=0)  # staged, stage1: the batch in flight


def _events(job: Job, paths: JobPaths, point: str, *, after_commits: int,
            timeout: float) -> Generator[str, None, None]:
    """File names of the events of ``point``, armed once ``after_commits`` markers exist."""
    wait_for_commits(job, paths, after_commits, timeout)
    folders = _watched(paths, point)
    # The sink creates _staging with mkdir(exist_ok=True) when it first stages a
    # file; creating the empty folder first lets us watch it from the start.
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
    if point == "stage1":
        (paths.marks / ARMED).touch()  # the next Stage 1 task holds
    deadline = time.monotonic() + timeout
    with Inotify(folders) as watch:
        while True:
            for _folder, name in watch.events(timeout=0.5):
                if _matches(point, name):
                    yield name
            if not job.running():
                raise JobFailed(f"the job exited (rc {job.process.returncode}) before "
                                f"'{point}':\n{job.log_tail()}")
            if time.monotonic() > deadline:
                raise JobFailed(f"no '{point}' event within {timeout:.0f} s:\n{job.log_tail()}")


def wait_for_event(job: Job, paths: JobPaths, point: str, *, after_commits: int,
                   timeout: float) -> int:
    """Block until the event of ``point`` once ``after_commits`` batches committed.

    Returns the event's batch with the job still running: act on it at once.
    """
    events = _events(job, paths, point, after_commits=after_commits, timeout=timeout)
    try:
        name = next(events)
    finally:
        events.close()
    return _batch_of(point, name, DiskState.read(paths))


def kill_at(job: Job, paths: JobPaths, point: str, *, after_commits: int,
            timeout: float) -> Kill:
    """SIGKILL ``job`` inside the window of ``point``, once ``after_commits`` batches committed.

    At each event the job is frozen (SIGSTOP) and its disk state read; if the job
    already left the window (it runs on while the watcher wakes up) it is resumed
    (SIGCONT) and the next event is awaited, else the frozen job is SIGKILLed.
    """
    misses = 0
    events = _events(job, paths, point, after_commits=after_commits, timeout=timeout)
    try:
        for name in events:
            job.signal_group(signal.SIGSTOP)
            state = DiskState.read(paths)
            batch = _batch_of(point, name, state)
            trigger = name.removesuffix(".begin")
            if state.inside(point, batch, trigger):
                job.kill()
                return Kill(point, after_commits, batch, trigger, state, misses)
            misses += 1
            job.signal_group(signal.SIGCONT)
    finally:
        events.close()
        if point == "stage1":  # disarm; a killed task's mark has no end: forget it
            for mark in paths.marks.iterdir():
                mark.unlink()
    raise JobFailed(f"the '{point}' events ended:\n{job.log_tail()}")  # _events raises first


def _parent_pids() -> dict[int, int]:
    """pid -> parent pid of every process (from /proc)."""
    parents: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        parents[int(entry.name)] = int(fields[1])
    return parents


def descendants(root: int) -> set[int]:
    """Every live process below ``root`` in the process tree."""
    children: dict[int, list[int]] = {}
    for pid, parent in _parent_pids().items():
        children.setdefault(parent, []).append(pid)
    found: set[int] = set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def executor_pids(driver: int) -> list[int]:
    """The executor JVMs (``CoarseGrainedExecutorBackend``) below the driver process."""
    pids = []
    for pid in descendants(driver):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"java" in command and b"CoarseGrainedExecutorBackend" in command:
            pids.append(pid)
    return sorted(pids)


def process_gone(pid: int) -> bool:
    """True once ``pid`` has exited (a zombie awaiting its parent counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ESRCH):
            return True
        raise
    return stat[stat.rindex(")") + 2] in "ZX"


def driver_port(executor: int) -> int:
    """The driver RPC port an executor JVM reports to (its ``--driver-url``)."""
    command = Path(f"/proc/{executor}/cmdline").read_bytes().split(b"\0")
    url = command[command.index(b"--driver-url") + 1].decode()
    return int(url.rsplit(":", 1)[1])


def unread_socket_bytes(pid: int, remote_port: int) -> int:
    """Bytes that arrived on ``pid``'s TCP connections to ``remote_port``, not read yet.

    On a frozen (SIGSTOPped) executor this grows when the driver sends it an RPC,
    e.g. a task to run (``LaunchTask``, ~14 KB here; clean-up RPCs are ~200 bytes).
    """
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
            if link.startswith("socket:["):
                inodes.add(int(link[8:-1]))
    total = 0
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            remote = int(fields[2].rsplit(":", 1)[1], 16)
            if int(fields[9]) in inodes and remote == remote_port:
                total += int(fields[4].split(":")[1], 16)
    return total
