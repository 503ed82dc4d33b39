"""``xscl-job-output``: where the join groups' rows go, written by tasks, committed by batch.

The job's streaming query ends in this sink. Its rows (``join_groups.OUTPUT_DDL``) arrive
partitioned by query id, so each task owns its queries' Atom feeds for the batch:

* **results**: the XSCL job's join groups staged their results as parts themselves
  (``group_parts``; a ``part`` row names each); the CEL job sends ``result`` rows,
  which each task writes to one staging part as they arrive (``results.group_parts``: JSON
  Lines, or Parquet with ``format=parquet``; repeated result ids dropped). The
  driver's commit renames every part and writes ``_commits/<batch:020d>.json``
  atomically (``results.commit.commit_batch``): a replayed batch finds its marker and
  discards what it staged, so no result is committed twice;
* **dead letters**: staged the same way and renamed to
  ``deadletters/<batch:020d>-<task:05d>.jsonl`` before the marker (a replay renames
  over the same names);
* **hot values** reported by the join groups: the driver's commit adds them to the
  job's hot-values folder (``hotValues`` option) before the marker;
* **published documents** (``publish`` rows: what the join groups' queries PUBLISH):
  each task stages its batch's; the driver's commit appends them to the job's
  published spool (``published`` option) before the marker, where the next micro-batch
  reads them (``routed_source``). The spool keeps the first of each (stream, result
  id), so a replayed batch appends nothing twice. The driver does this per published
  result: a spool has one writer, and each micro-batch must see the last one's;
* **Atom feeds**: each task merges its queries' newest results into their feeds
  (``atom.AtomFeedWriter``), in rounds of bounded memory (``FeedRounds``): the
  entries the join groups rendered, read back from their staged entries files
  (``entry-at`` rows), and the CEL job's ``result`` rows, rendered here; entries are
  idempotent by result id, so a replayed task rewrites the same feed.

**Fencing** (``fence`` option: the lease and the epoch the job runs at, ``pair``):
everything above is written under the epoch's own folder, so what a primary writes
after another instance took the lease over is never read (``results_sink``'s chain
cuts its epoch at the batch the new one continued after). On top of that, the commit
checks the lease first and fails with ``LeaseLostError`` once a newer epoch exists, so
a fenced-out primary stops at its next batch.

Where it runs: the data source and ``commit``/``abort`` on the driver (once per
query start / per micro-batch: renames and one marker; per record only the appends of
published documents);
``write`` on executors, once per task and attempt. The writer is pickled to the
executors and holds strings and integers only; each Python worker keeps one
``AtomFeedWriter`` per feeds folder so a feed it wrote is not read back.
"""

from __future__ import annotations

import errno
import json
import marshal
import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NamedTuple

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from xscl.connectors.durable import fsync_dir, write_synced
from xscl.errors import DataSourceOptionError
from xscl.results.commit import (
    COMMITS,
    STAGING,
    StagedPart,
    clear_staging,
    commit_batch,
    discard,
    unwritable_as_error,
)
from xscl.results.feed_rows import entry_reference, keep_newest
from xscl.results.parts import RESULTS_FORMATS, ResultPart, staged_part
from xscl.spark_plugin.job import hot_values
from xscl.spark_plugin.job.published_floor import record_earliest
from xscl.spark_plugin.results_sink import task_partition

if TYPE_CHECKING:
    from xscl.connectors.document import Document
    from xscl.connectors.spool import Spool
    from xscl.results.atom import AtomFeedWriter

FORMAT_NAME = "xscl-job-output"
DEAD_LETTERS = "deadletters"


@dataclass
class TaskOutput(WriterCommitMessage):
    """What one task staged: its result part and its dead letters (None: nothing)."""

    part: StagedPart
    #: the parts the join groups staged, named by this task's ``part`` rows
    upstream: list[StagedPart] = field(default_factory=list)
    dead: str | None = None
    dead_rows: int = 0
    feeds: dict[str, int] = field(default_factory=dict)
    #: values the join groups reported hot (``groups``)
    hot: list[str] = field(default_factory=list)
    #: microseconds the join groups took, per state partition (``groups``' time rows)
    group_micros: dict[int, int] = field(default_factory=dict)
    #: the largest end time of its results (None: none), the batch marker's ``max_end``:
    #: how far a CEL job reading these results advances its clock (docs/cel.md 10.4)
    max_end: int | None = None
    #: the staged documents its ``publish`` rows carried (None: none)
    published: str | None = None


class JobOutputDataSource(DataSource):
    """The ``xscl-job-output`` format (driver, once per plan)."""

    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def streamWriter(self, schema: StructType, overwrite: bool) -> JobOutputWriter:
        """The micro-batch writer (driver, once per query start; pickled to executors)."""
        path = self.options.get("path")
        if not path:
            raise DataSourceOptionError("xscl-job-output needs option 'path' (a directory)")
        part_format = str(self.options.get("format", "jsonl"))
        if part_format not in RESULTS_FORMATS:
            raise DataSourceOptionError(
                f"xscl-job-output option 'format' is {part_format!r}; use one of "
                + ", ".join(RESULTS_FORMATS)
            )
        from xscl.results.atom import DEFAULT_MAX_ENTRIES

        entries = int(self.options.get("feedEntries", DEFAULT_MAX_ENTRIES))
        return JobOutputWriter(
            str(path),
            part_format,
            entries,
            self.options.get("hotValues") or None,
            self.options.get("registry") or None,
            self.options.get("fence") or None,
            self.options.get("feedBaseUrl") or None,
            self.options.get("published") or None,
        )


class JobOutputWriter(DataSourceStreamArrowWriter):
    """See the module docstring."""

    def __init__(
        self,
        path: str,
        part_format: str,
        feed_entries: int,
        hot_folder: str | None = None,
        registry: str | None = None,
        fence: str | None = None,
        feed_base_url: str | None = None,
        published: str | None = None,
    ) -> None:
        self.path = path
        self.part_format = part_format
        self.feed_entries = feed_entries
        self.hot_folder = hot_folder
        #: the job's subscription registry: the feeds' subtitles (the queries' texts)
        self.registry = registry
        #: JSON ``{"lease": Lease.spec(), "epoch": E}`` (None: no lease)
        self.fence = fence
        #: the feeds' ``rel="self"`` links are ``URL/<query>.atom`` (``AtomFeedWriter``)
        self.feed_base_url = feed_base_url
        #: the job's published spool (None: no join group publishes into one)
        self.published = published

    def write(self, iterator: Iterator[pa.RecordBatch]) -> TaskOutput:
        """Stage this task's results and dead letters, update its feeds (executor)."""
        with unwritable_as_error(self.path):
            return self._write(iterator)

    def _write(self, iterator: Iterator[pa.RecordBatch]) -> TaskOutput:
        partition = task_partition()
        staging = Path(self.path) / STAGING
        staging.mkdir(parents=True, exist_ok=True)
        feeds = FeedRounds(self._feed_writer, self.feed_entries, staging)
        try:
            with staged_part(self.part_format, staging, partition) as results:
                rows = _TaskRows(results, feeds)
                for batch in iterator:
                    rows.take(batch)
                output = TaskOutput(
                    results.close(),
                    rows.upstream,
                    hot=sorted(rows.hot),
                    group_micros=rows.spent,
                    max_end=rows.max_end,
                )
            if rows.dead:
                output.dead = _stage_bytes(staging, b"".join(rows.dead), ".jsonl")
                output.dead_rows = len(rows.dead)
            if rows.published:
                output.published = _stage_bytes(staging, marshal.dumps(rows.published), ".pub")
            output.feeds = feeds.finish()
        finally:
            feeds.close()  # a failed task's spill file
        return output

    def _feed_writer(self) -> AtomFeedWriter:
        """This worker's Atom writer of the job's feeds folder (made on first use)."""
        from xscl.results.atom import AtomFeedWriter, SubscribedTexts
        from xscl.spark_plugin.worker_context import worker

        writers = worker().feed_writers
        key = (str(Path(self.path) / "feeds"), self.feed_entries, self.feed_base_url)
        writer = writers.get(key)
        if writer is None:
            texts = SubscribedTexts(self.registry) if self.registry else None
            writer = AtomFeedWriter(
                key[0],
                max_entries=self.feed_entries,
                subtitles=texts,
                base_url=self.feed_base_url,
            )
            writers[key] = writer
        return writer

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Dead letters into place, then the results under the batch's marker (driver)."""
        if self.fence is not None:
            check_fence(self.fence)
        with unwritable_as_error(self.path):
            self._commit(messages, batchId)

    def _commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        name = f"{batchId:020d}"
        outputs = [m for m in messages if isinstance(m, TaskOutput)]
        marker = Path(self.path) / COMMITS / f"{name}.json"
        self._record_hot(name, outputs)
        if not marker.exists():
            self._publish(outputs)
            folder = Path(self.path) / DEAD_LETTERS
            moved = False
            for output in outputs:
                if output.dead is not None:
                    folder.mkdir(parents=True, exist_ok=True)
                    os.replace(output.dead, folder / f"{name}-{output.part.partition:05d}.jsonl")
                    moved = True
            if moved:
                fsync_dir(folder)
        else:
            for output in outputs:
                if output.dead is not None:
                    Path(output.dead).unlink(missing_ok=True)
        spent: dict[int, int] = {}
        for output in outputs:
            for partition, micros in output.group_micros.items():
                spent[partition] = spent.get(partition, 0) + micros
        tasks = sorted(spent.values())
        extra: dict[str, Any] = (
            {
                "stateful_tasks": {
                    "count": len(tasks),
                    "max_s": tasks[-1] / 1e6,
                    "mean_s": sum(tasks) / len(tasks) / 1e6,
                }
            }
            if tasks
            else {}
        )
        ends = [o.max_end for o in outputs if o.max_end is not None]
        if ends:
            extra["max_end"] = max(ends)
        commit_batch(self.path, name, numbered(outputs), extra)
        # what is left in staging now is an orphan: a join group's part from a task
        # attempt that was retried (its rows never reached a sink); no task of this
        # job runs between batches
        clear_staging(self.path)

    def _publish(self, outputs: list[TaskOutput]) -> None:
        """Append the batch's published documents to the published spool (driver, once
        per batch; before the marker), in a fixed order."""
        staged = [o.published for o in outputs if o.published is not None]
        if not staged:
            return
        if self.published is None:
            raise DataSourceOptionError(
                "xscl-job-output: join groups published documents; set option 'published'"
            )
        from xscl.connectors.document import Document

        docs: list[Document] = []
        for file in staged:
            with open(file, "rb") as handle:
                docs.extend(Document(s, d, t, x) for s, d, t, x in marshal.load(handle))
        docs.sort(key=lambda d: (d.ts_micros, d.stream, d.docid))
        append_published(self.published, docs)
        for file in staged:
            Path(file).unlink(missing_ok=True)

    def _record_hot(self, name: str, outputs: list[TaskOutput]) -> None:
        """Add the values reported hot to the job's hot set (driver, once per batch;
        before the batch's marker)."""
        if self.hot_folder is not None:
            hot_values.record(self.hot_folder, name, (v for o in outputs for v in o.hot))

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Drop what the failed attempt staged (driver)."""
        outputs = [m for m in messages if isinstance(m, TaskOutput)]
        discard(numbered(outputs))
        for output in outputs:
            for staged in (output.dead, output.published):
                if staged is not None:
                    Path(staged).unlink(missing_ok=True)


#: How long a commit waits for the published spool's lock (a fenced-out primary's
#: commit may hold it for its last append) before failing the batch.
PUBLISH_LOCK_SECONDS = 30.0


def append_published(path: str, docs: list[Document]) -> None:
    """Append ``docs`` to the published spool at ``path`` (driver): its lock is held for
    this append only, so no instance keeps it between batches; duplicates are kept out
    by the spool (a replayed batch's). First, under the same lock, their earliest
    timestamp is recorded from the spool's next offset on (``published_floor``): the
    next micro-batch's eviction floor needs it, and reading it there costs no pass
    over the records.

    Between appends the spool is suspended, not closed (``Spool.suspend``): the next
    commit of this process reuses its index when nothing else wrote to it, instead of
    reading and verifying every record again (which grows with the spool: 1.0 CPU-s
    for 200,000 records of 1.5 KB, docs/benchmarks.md)."""
    import time

    from xscl.errors import SpoolLockedError

    deadline = time.monotonic() + PUBLISH_LOCK_SECONDS
    while True:
        try:
            spool = _writer(path)
        except SpoolLockedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
            continue
        try:
            if docs:
                record_earliest(path, spool.next_offset(), min(d.ts_micros for d in docs))
                spool.append(docs)
            spool.suspend()
        except BaseException:
            spool.close()
            raise
        _SUSPENDED[path] = spool
        return


#: The published spools this driver appended to, suspended between commits.
_SUSPENDED: dict[str, Spool] = {}


def _writer(path: str) -> Spool:
    """The published spool at ``path``, locked: the suspended one resumed, or opened."""
    from xscl.connectors.spool import Spool
    from xscl.errors import SpoolLockedError

    spool = _SUSPENDED.pop(path, None)
    if spool is None:
        return Spool(path)
    try:
        spool.resume()
    except SpoolLockedError:
        _SUSPENDED[path] = spool  # still suspended: the caller waits and asks again
        raise
    except OSError:  # its folder was removed (a new query starts it afresh)
        return Spool(path)
    return spool


def numbered(outputs: list[TaskOutput]) -> list[StagedPart]:
    """Every part the batch's tasks staged or were told of, numbered 0, 1, ... (a task's
    own part and the join groups' parts share its partition; ``commit_batch`` names
    each part by its number).

    >>> out = TaskOutput(StagedPart(1, "b", 2), [StagedPart(1, "a", 3), StagedPart(0, None, 0)])
    >>> [(p.partition, p.staged) for p in numbered([out])]
    [(0, 'a'), (1, 'b')]
    """
    parts = [p for o in outputs for p in (o.part, *o.upstream) if p.staged is not None]
    parts.sort(key=lambda p: (p.partition, p.staged or ""))
    return [StagedPart(n, p.staged, p.rows) for n, p in enumerate(parts)]


def fence_of(lease_spec: dict[str, Any], epoch: int) -> str:
    """The ``fence`` option of a job holding ``epoch`` of the lease ``lease_spec``."""
    return json.dumps({"lease": lease_spec, "epoch": epoch}, sort_keys=True)


def check_fence(fence: str) -> None:
    """Raise ``LeaseLostError`` when a newer epoch than the fence's was taken (driver)."""
    from xscl.errors import LeaseLostError
    from xscl.service.pair.lease import lease_from_spec, lost_message

    spec = json.loads(fence)
    lease = lease_from_spec(spec["lease"])
    epoch = int(spec["epoch"])
    if not lease.holds(epoch):
        raise LeaseLostError(lost_message(epoch, lease.read()))


class _TaskRows:
    """One sink task's rows split by kind as they arrive (executor, once per task):
    results to their part and feeds (each result id once), the join groups' staged
    parts and feed entries, dead letters, hot values, published documents, the join
    groups' time per state partition."""

    def __init__(self, results: ResultPart, feeds: FeedRounds) -> None:
        self.results = results
        self.feeds = feeds
        self.upstream: list[StagedPart] = []
        self.dead: list[bytes] = []
        self.hot: set[str] = set()
        self.spent: dict[int, int] = {}
        self.max_end: int | None = None
        #: (stream, docid, ts, xml) of the documents the join groups published
        self.published: list[tuple[str, str, int, str]] = []
        self._seen: set[str] = set()

    def take(self, batch: pa.RecordBatch) -> None:
        columns = batch.to_pydict()
        for kind, query, result_id, end, line in zip(
            columns["kind"],
            columns["query"],
            columns["result_id"],
            columns["end"],
            columns["line"],
            strict=True,
        ):
            if kind == "entry-at":
                self.feeds.add_entry(query, end, result_id, *entry_reference(line))
            elif kind == "part":
                staged = json.loads(line)
                self.upstream.append(StagedPart(task_partition(), staged["file"], staged["rows"]))
                self.max_end = end if self.max_end is None else max(self.max_end, end)
            elif kind == "dead":
                self.dead.append(line)
            elif kind == "hot":
                self.hot.add(line.decode())
            elif kind == "time":
                self.spent[int(query)] = self.spent.get(int(query), 0) + end
            elif kind == "publish":
                self.published.append((query, result_id, end, line.decode()))
            elif result_id not in self._seen:
                self._seen.add(result_id)
                self.results.add(line)
                self.max_end = end if self.max_end is None else max(self.max_end, end)
                self.feeds.add(query, end, result_id, line)


#: Result bytes a sink task holds in memory for its Atom feeds; past them the kept
#: results wait in a spill file (``FeedRounds``).
FEED_MEMORY_BYTES = 128 * 2**20
#: Result bytes merged into the feeds at a time (one ``AtomFeedWriter.flush``).
FEED_ROUND_BYTES = 64 * 2**20


class FeedRounds:
    """A task's results for its Atom feeds, in bounded memory, each feed written once.

    Each query keeps its newest ``entries`` results (a feed shows no more). The kept
    lines stay in memory up to ``memory_bytes``; past that, every kept line waits in
    a spill file in the staging folder and only its offset stays in memory. An entry
    a join group rendered and staged (``add_entry``) stays where it is: only its
    place is kept. At the end the queries are merged into their feeds in rounds of
    about ``round_bytes``, each query in one round, so each feed is written once per
    batch whatever the order the rows came in (a heavy batch's task held ~2.5 GB of
    results before).

    Where it runs: executors, once per sink task; ``writer`` is called at the end
    (this worker's ``AtomFeedWriter``); the spill file is removed when the task ends.
    """

    def __init__(
        self,
        writer: Callable[[], AtomFeedWriter],
        entries: int,
        staging: Path,
        memory_bytes: int = FEED_MEMORY_BYTES,
        round_bytes: int = FEED_ROUND_BYTES,
    ) -> None:
        self.writer = writer
        self.entries = entries
        self.staging = staging
        self.memory_bytes = memory_bytes
        self.round_bytes = round_bytes
        #: how many times the feeds were merged (``finish``)
        self.rounds = 0
        #: per query, a min-heap of its newest (end, result id, line or ``_Place``)
        self._newest: dict[str, list[tuple[int, str, bytes | _Place]]] = {}
        self._held = 0
        self._spill: IO[bytes] | None = None  # open once memory_bytes is passed
        self._readers: dict[str, int] = {}  # file -> descriptor, for the kept lines

    def add(self, query: str, end: int, result_id: str, line: bytes) -> None:
        """Keep one result (result ids arrive once: the sink drops repeats)."""
        ref: bytes | _Place = line
        if self._spill is not None or self._held + len(line) > self.memory_bytes:
            ref = self._spilled(line)
        else:
            self._held += len(line)
        keep_newest(self._newest.setdefault(query, []), (end, result_id, ref), self.entries)

    def add_entry(
        self, query: str, end: int, result_id: str, file: str, at: int, size: int
    ) -> None:
        """Keep one result whose Atom entry is rendered in ``file`` (a join group's)."""
        place = _Place(file, at, size, rendered=True)
        keep_newest(self._newest.setdefault(query, []), (end, result_id, place), self.entries)

    def finish(self) -> dict[str, int]:
        """Merge every kept result into its feed; entries now in each feed written."""
        from xscl.results.atom import FeedEntry, result_entry_id

        written: dict[str, int] = {}
        try:
            if not self._newest:
                return written
            writer = self.writer()
            merged = 0
            for query in sorted(self._newest):
                for end, result_id, ref in self._newest.pop(query):
                    data = ref if isinstance(ref, bytes) else self._read(ref)
                    if isinstance(ref, _Place) and ref.rendered:
                        entry = FeedEntry(end, result_entry_id(result_id), data)
                        writer.add_entry(query, entry)
                    else:
                        writer.add(json.loads(data), end)
                    merged += len(data)
                if merged >= self.round_bytes:
                    written.update(writer.flush())
                    self.rounds += 1
                    merged = 0
            if merged:
                written.update(writer.flush())
                self.rounds += 1
            return written
        finally:
            self.close()

    def close(self) -> None:
        """Close the files read and remove the spill file, if there is one."""
        for descriptor in self._readers.values():
            os.close(descriptor)
        self._readers.clear()
        if self._spill is not None:
            self._spill.close()
            Path(self._spill.name).unlink(missing_ok=True)
            self._spill = None

    def _spilled(self, line: bytes) -> _Place:
        if self._spill is None:
            self.staging.mkdir(parents=True, exist_ok=True)
            path = self.staging / f"{uuid.uuid4().hex}.feeds-spill"
            self._spill = open(path, "w+b", buffering=1 << 20)  # noqa: SIM115
        offset = self._spill.tell()
        self._spill.write(line)
        return _Place(self._spill.name, offset, len(line), rendered=False)

    def _read(self, place: _Place) -> bytes:
        file = place.file
        if self._spill is not None and file == self._spill.name:
            self._spill.flush()
        descriptor = self._readers.get(file)
        if descriptor is None:
            descriptor = self._readers[file] = os.open(file, os.O_RDONLY)
        data = os.pread(descriptor, place.size, place.at)
        if len(data) != place.size:
            raise OSError(
                errno.EIO, f"a staged line ends early ({len(data)} of {place.size} bytes)", file
            )
        return data


class _Place(NamedTuple):
    """Where a kept result waits on disk: its JSON line in the spill file, or its
    rendered Atom entry in a join group's entries file (``rendered``)."""

    file: str
    at: int
    size: int
    rendered: bool


def _stage_bytes(staging: Path, data: bytes, suffix: str) -> str:
    """A new staging file holding ``data``, fsync-ed; its path."""
    target = staging / f"{uuid.uuid4().hex}{suffix}"
    write_synced(target, data)
    return str(target)
