"""The streaming job's ``foreachBatch`` function: subscriptions, Stage 1 on executors, joins.

Per micro-batch (driver, once per batch and per replay of it):

1. **Subscriptions as data**: the new events of the job's ``SubscriptionLog`` are
   applied to the engine before the batch's documents, and the spool offset they
   took effect at is recorded (``xscl.spark_plugin.subscriptions``).
2. **Stage 1 on the executors**: the batch goes through ``mapInArrow`` with a
   ``WitnessTask`` holding the engine's ``Stage1Spec`` as a broadcast (rebuilt
   only when the subscriptions change); each executor parses and evaluates its
   partition's documents and returns witness rows (thesis 6.3).
3. **Joins on the driver**: the witness rows come back as Arrow (``toArrow``) and
   are fed, in spool offset order, to one ``LocalEngine`` (value-join index =
   view cache, per-template conjunctive queries over R_T, windows, lateness;
   thesis 6.4-6.5), which makes the result records.
4. **Exactly-once output**: results are committed idempotently by batch id
   (``results_sink.commit_batch``) as one JSON Lines or Parquet part file
   (``results_format``; ``results_parquet``), dead letters (malformed or late
   documents) beside them, then each query's Atom feed is updated.

Where the join state lives, two ways (measured side by side in
``benchmarks/spark_rss``; docs/architecture.md, "Decision: the join state on disk"):

* **on disk** (``join_state``, the default of ``xscl serve``): the stored
  documents and their string-value index are a ``JoinStateStore`` (SQLite under
  ``HOME/state/NAME``). Each batch starts from the watermark the last one
  committed; the engine keeps holding recently used stored documents (up to
  ``hold_bytes``) and is given the others the batch can reach (sharing a string
  with it, up to K-1 hops for K-block templates, within the widest window); the
  batch's documents are stored in the same transaction that records the batch.
  ``INF`` windows grow a file, not the heap; a restart rebuilds only the registry
  (no replay).
* **in memory** (``snapshots``): the engine keeps every document. A (re)started
  driver loads the newest snapshot at or below its first batch's start
  (``engine_snapshot``, written every ``snapshot_seconds`` after a commit) and
  replays the spool records after it, discarding the results (committed before).

Either way subscription events are applied at their recorded offsets and the
engine is deterministic in offset order, so the result set equals a failure-free
run.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from xscl.connectors.document import format_ts
from xscl.connectors.durable import write_atomically
from xscl.engine import LocalEngine, ResultRecord
from xscl.engine.json_lines import JsonLineEncoder
from xscl.engine.state import DocState
from xscl.lang.ast import Query
from xscl.spark_plugin.atom import AtomFeedWriter
from xscl.spark_plugin.engine_snapshot import SnapshotStore
from xscl.spark_plugin.errors import JoinStateMismatchError
from xscl.spark_plugin.job_args import DEFAULT_FEED_ENTRIES, RESULTS_FORMATS
from xscl.spark_plugin.join_state import JoinStateStore, ReachableDocuments
from xscl.spark_plugin.progress import JobFigures
from xscl.spark_plugin.results_parquet import StagedParquet
from xscl.spark_plugin.results_sink import STAGING, StagedPart, clear_staging, commit_batch
from xscl.spark_plugin.subscriptions import SubscriptionEvent, SubscriptionLog, apply_event
from xscl.spark_plugin.witness_task import WITNESS_DDL, WitnessTask, read_witness
from xscl.xpath import DocumentRows, Stage1Error

#: Columns of the spool rows handed to ``mapInArrow`` (ts as microseconds).
_INPUT_COLUMNS = ("offset", "stream", "docid", "unix_micros(ts) AS ts", "xml")
#: With the join state on disk: about how much of it the driver keeps holding between
#: batches (documents recently used), so a state that fits is not read back per batch.
DEFAULT_HOLD_BYTES = 256 * 2**20
#: With the join state on disk, documents are numbered offset * SEQ_STRIDE + k (k: the
#: record and the results it publishes), so numbers survive restarts without replay.
SEQ_STRIDE = 1 << 20


class EnginePipeline:
    """The ``foreachBatch`` function (see the module docstring); runs on the driver."""

    def __init__(
        self,
        queries: Sequence[Query],
        spool: str | Path,
        output: str | Path,
        *,
        subscriptions: SubscriptionLog | None = None,
        allowed_lateness_micros: int | None = None,
        feed_entries: int = DEFAULT_FEED_ENTRIES,
        stage1_on_executors: bool = True,
        snapshots: SnapshotStore | None = None,
        snapshot_seconds: float = 60.0,
        join_state: JoinStateStore | None = None,
        hold_bytes: int = DEFAULT_HOLD_BYTES,
        results_format: str = "jsonl",
    ) -> None:
        if join_state is not None and snapshots is not None:
            raise ValueError("snapshots are for the in-memory join state: give one of the two")
        if results_format not in RESULTS_FORMATS:
            raise ValueError(f"results_format must be in {RESULTS_FORMATS}: {results_format!r}")
        #: how committed result part files are written (read back by ``read_results``)
        self.results_format = results_format
        self.engine = LocalEngine(queries, allowed_lateness_micros=allowed_lateness_micros)
        self.spool = Path(spool)
        self.output = Path(output)
        self.subscriptions = subscriptions
        self.stage1_on_executors = stage1_on_executors
        self.snapshots = snapshots
        self.snapshot_seconds = snapshot_seconds
        self.join_state = join_state
        #: per batch (join state on disk): stored documents read from disk to join it
        self.loaded_by_batch: dict[int, int] = {}
        self._reach: ReachableDocuments | None = None
        #: join state on disk: the stored documents the engine keeps holding between
        #: batches (least recently used first), up to about ``hold_bytes``
        self.hold_bytes = hold_bytes
        self._resident: OrderedDict[int, DocState] = OrderedDict()
        self._resident_bytes = 0
        #: the batch id whose start is the engine's present state (None: unknown)
        self._continues: int | None = None
        self._last_snapshot = time.monotonic()
        #: the offset of the snapshot the warm-up started from (None: from the spool start)
        self.restored_from: int | None = None
        self.feeds = AtomFeedWriter(self.output / "feeds", max_entries=feed_entries)
        self._lines = JsonLineEncoder()
        #: the next spool offset the engine expects (None until the first batch)
        self.next_offset: int | None = None
        #: the last subscription event applied to the engine
        self.applied_version = 0
        self.results_by_batch: dict[int, int] = {}
        #: per batch: the engine's watermark and stored documents (progress lines)
        self.figures_by_batch: dict[int, JobFigures] = {}
        self.warmed_up = 0
        self.documents = 0
        #: orphaned staging files of a crashed earlier run, removed at start
        self.orphans_removed = clear_staging(self.output)
        self._queries: dict[str, Query] = {q.qid: q for q in queries}
        self._task_key = uuid.uuid4().hex
        self._generation = 0
        self._broadcast: Any = None
        self._broadcast_generation = -1

    # ------------------------------------------------------------ subscriptions
    def _apply(self, event: SubscriptionEvent) -> None:
        before = dict(self._queries)
        apply_event(self._queries, event)
        for qid in before.keys() - self._queries.keys():
            self.engine.remove_query(qid)
        for qid, query in self._queries.items():
            if before.get(qid) is not query:
                self.engine.add_query(query, only_new_documents=True)
        self.applied_version = event.version
        self._generation += 1

    def _apply_pending(self, offset: int) -> list[SubscriptionEvent]:
        """Apply events recorded at ``offset`` or not recorded yet (driver, per batch)."""
        if self.subscriptions is None:
            return []
        if self.join_state is not None:
            self.engine.advance_seq(offset * SEQ_STRIDE)
        applied = self.subscriptions.applied()
        done = []
        for event in self.subscriptions.events(after=self.applied_version):
            at = applied.get(event.version)
            if at is not None and at != offset:
                if at < offset:  # recorded earlier but not replayed: a broken invariant
                    raise RuntimeError(
                        f"subscription event {event.version} took effect at offset {at}, "
                        f"but the engine is at {offset}"
                    )
                break  # takes effect at a later batch (we are replaying)
            self.subscriptions.record_applied(event.version, offset)
            self._apply(event)
            done.append(event)
        return done

    # ------------------------------------------------------------------ warm-up
    def warm_up(self, below: int) -> None:
        """Rebuild the engine's state as it was before spool offset ``below`` (no output)."""
        from xscl.connectors.spool import SpoolReader

        if self.join_state is not None:
            self._rebuild_registry(below)
            self.next_offset = below
            return
        start = 0
        found = self.snapshots.latest(below) if self.snapshots is not None else None
        if found is not None:
            start, state = found
            lateness = self.engine.allowed_lateness
            self.engine = state["engine"]
            self.engine.allowed_lateness = lateness  # this run's option, not the snapshot's
            self._queries = state["queries"]
            self.applied_version = state["applied_version"]
            self._generation += 1
            self.restored_from = start
        log = self.subscriptions
        pending = sorted(
            (offset, version)
            for version, offset in (log.applied() if log is not None else {}).items()
            if start <= offset < below and version > self.applied_version
        )
        for offset, doc in SpoolReader(self.spool).iter_range(start, below):
            while pending and pending[0][0] <= offset:
                assert log is not None
                self._apply(log.event(pending.pop(0)[1]))
            self.engine.process_one(doc.stream, doc.docid, doc.ts_micros, doc.xml)
        self.warmed_up = below - start
        self.next_offset = below

    def _rebuild_registry(self, below: int) -> None:
        """The subscriptions in effect at ``below`` (join state on disk: nothing to replay)."""
        log = self.subscriptions
        if log is None:
            return
        for version, offset in sorted(log.applied().items()):
            if offset < below and version > self.applied_version:
                self.engine.advance_seq(offset * SEQ_STRIDE)
                self._apply(log.event(version))

    def _load_reachable(
        self, batch_id: int, rows: list[dict[str, Any]], witnesses: list[Any]
    ) -> None:
        """Give the engine the stored documents the batch can reach, at the watermark
        the batch starts from (join state on disk; driver, once per batch)."""
        store = self.join_state
        assert store is not None
        engine = self.engine
        start = store.begin(batch_id)
        first = rows[0]["offset"]
        if (start.next_offset or 0) != first:
            raise JoinStateMismatchError(
                f"batch {batch_id} starts at spool offset {first}, but the join state "
                f"{store.path} ends at {start.next_offset or 0}: the checkpoint and the "
                "join state disagree (were they moved or deleted separately, or did this job "
                "run with --join-state memory before? then keep that option, or start a new "
                "--name)"
            )
        if batch_id == self._continues and engine.max_ts == start.max_ts:
            engine.next_batch()  # the documents it holds are this state's, committed
        else:  # a first batch, a replay, or a batch that failed half-way
            engine.reset_documents(start.max_ts)
            self._resident.clear()
            self._resident_bytes = 0
        self._continues = None  # until this batch commits
        lateness, reach = engine.allowed_lateness, engine.reach()
        if lateness is not None and reach is not None and start.max_ts is not None:
            store.evict(start.max_ts - lateness - reach)
        stamps = [row["ts"] for row in rows]
        reach_of = ReachableDocuments(
            store,
            self._hold,
            hops=max(engine.block_count() - 1, 0),
            lo=None if reach is None else min(stamps) - reach,
            hi=None if reach is None else max(stamps) + reach,
            resident=self._resident,
        )
        if engine.scans():
            reach_of.load_window()
        reach_of.extend(s for w in witnesses if isinstance(w, DocumentRows) for _, s in w.values)
        # a result published into a stream this batch is a new document too: its strings
        engine.before_match = lambda doc: reach_of.extend(s for _, _, s in doc.value_rows)
        self._reach = reach_of

    def _hold(self, key: int, doc: DocState) -> None:
        """A stored document read for this batch: into the engine, kept while room."""
        self.engine.store(doc)
        self._resident[key] = doc
        self._resident_bytes += _held_bytes(doc)

    def _store_batch(self, batch_id: int, first: int) -> None:
        """Store the batch's documents (and those it published); trim what stays held."""
        store = self.join_state
        assert store is not None
        engine = self.engine
        engine.before_match = None
        fresh: list[DocState] = [d for d in engine.docs.values() if d.seq > first * SEQ_STRIDE]
        fresh.sort(key=lambda d: d.seq)
        resident = self._resident
        docs = engine.docs
        for key in [k for k, d in resident.items() if docs.get(d.key) is not d]:
            self._resident_bytes -= _held_bytes(resident.pop(key))  # evicted by the watermark
        for key, doc in zip(store.add(batch_id, fresh), fresh, strict=True):
            resident[key] = doc
            self._resident_bytes += _held_bytes(doc)
        if self._reach is not None:
            for key in self._reach.found:  # recently used: evicted last
                if key in resident:
                    resident.move_to_end(key)
            self.loaded_by_batch[batch_id] = self._reach.read
            self._reach = None
        dropped = []
        while resident and self._resident_bytes > self.hold_bytes:
            _key, doc = resident.popitem(last=False)
            self._resident_bytes -= _held_bytes(doc)
            dropped.append(doc)
        engine.forget(dropped)

    def _maybe_snapshot(self) -> None:
        """Save the state after a commit, at most every ``snapshot_seconds`` (driver)."""
        if self.snapshots is None or self.next_offset is None:
            return
        if time.monotonic() - self._last_snapshot < self.snapshot_seconds:
            return
        state = {
            "engine": self.engine,
            "queries": self._queries,
            "applied_version": self.applied_version,
        }
        self.snapshots.save(self.next_offset, state)
        self._last_snapshot = time.monotonic()

    # -------------------------------------------------------------- per batch
    def __call__(self, batch: Any, batch_id: int) -> None:
        """Process one micro-batch (driver, once per batch and replay)."""
        if self.next_offset is None:
            # First batch of this driver: its start is known only from its rows, and
            # the state (hence the Stage 1 spec) only after the warm-up, so this one
            # batch is evaluated on the driver; reading it twice would double-count
            # its input rows in Spark's progress.
            rows = self._witnessed(batch, on_executors=False)
        else:
            self._apply_pending(self.next_offset)
            rows = self._witnessed(batch, on_executors=self.stage1_on_executors)
        self.process_rows(batch_id, rows)

    def process_rows(self, batch_id: int, rows: list[dict[str, Any]]) -> None:
        """Join and commit one batch's rows, in offset order (driver; Spark-free).

        Rows carry ``offset, stream, docid, ts, xml`` and, when Stage 1 ran on the
        executors, its output (``WITNESS_DDL``). Subscription events due at the
        batch's start must have been applied, except on a driver's first batch.
        """
        if self.next_offset is None and rows:
            self.warm_up(rows[0]["offset"])
            self._apply_pending(rows[0]["offset"])
        if not rows:
            self._commit(batch_id, None, [])
            return
        assert self.next_offset is not None
        if rows[0]["offset"] != self.next_offset:
            raise RuntimeError(
                f"batch {batch_id} starts at spool offset {rows[0]['offset']}, "
                f"expected {self.next_offset}: the checkpoint and the spool disagree"
            )
        dead: list[dict[str, Any]] = []
        engine = self.engine
        witnesses = [read_witness(row) if "error_code" in row else None for row in rows]
        on_disk = self.join_state is not None
        if on_disk:
            witnesses = [self._driver_witness(r, w) for r, w in zip(rows, witnesses, strict=True)]
            self._load_reachable(batch_id, rows, witnesses)
        with self._staged() as staged:
            for row, witness in zip(rows, witnesses, strict=True):
                before = len(engine.stats.rejections)
                if on_disk:
                    engine.advance_seq(row["offset"] * SEQ_STRIDE)
                produced = engine.process_one(
                    row["stream"], row["docid"], row["ts"], row["xml"], witness
                )
                for result in produced:  # streamed out: a batch's results are not held
                    staged.write(result)
                    self.feeds.add(_feed_record(result), result.end_micros)
                for rejected in engine.stats.rejections[before:]:
                    dead.append(
                        {
                            "offset": row["offset"],
                            "stream": rejected.stream,
                            "docid": rejected.docid,
                            "reason": rejected.reason,
                            "code": rejected.code,
                        }
                    )
        after = rows[-1]["offset"] + 1
        if self.join_state is None:
            self.next_offset = after
        else:
            self._store_batch(batch_id, rows[0]["offset"])
        self._commit(batch_id, staged.part(), dead)
        if self.join_state is not None:  # done only once it is all committed
            self.join_state.commit(batch_id, engine.max_ts, after)
            self._continues = batch_id + 1
            self.next_offset = after
        self.documents += len(rows)
        self._maybe_snapshot()

    def _staged(self) -> _StagedResults | StagedParquet:
        """Where this batch's results go until its commit, in ``results_format``."""
        if self.results_format == "parquet":
            return StagedParquet(self.output / STAGING)
        return _StagedResults(self.output / STAGING, self._lines)

    def _driver_witness(
        self, row: dict[str, Any], witness: DocumentRows | Stage1Error | None
    ) -> DocumentRows | Stage1Error:
        """The row's Stage 1 output, evaluated here when the executors did not."""
        if witness is not None:
            return witness
        try:
            return self.engine.stage1.evaluate_rows(
                row["stream"], row["docid"], row["ts"], row["xml"]
            )
        except Stage1Error as exc:
            return exc

    def _witnessed(self, batch: Any, *, on_executors: bool) -> list[dict[str, Any]]:
        """The batch's rows in offset order, with Stage 1's output when run on executors."""
        frame = batch.selectExpr(*_INPUT_COLUMNS)
        if on_executors:
            frame = frame.mapInArrow(self._task(batch.sparkSession), WITNESS_DDL)
        # Sorted here, not with orderBy: a range sort samples (re-reads) the source.
        table = frame.toArrow().sort_by("offset")
        return table.to_pylist()  # type: ignore[no-any-return]

    def _task(self, spark: Any) -> WitnessTask:
        """This batch's ``mapInArrow`` function; the spec is re-broadcast after changes."""
        if self._broadcast_generation != self._generation:
            if self._broadcast is not None:
                self._broadcast.unpersist()
            self._broadcast = spark.sparkContext.broadcast(self.engine.stage1.spec())
            self._broadcast_generation = self._generation
        return WitnessTask(self._broadcast, f"{self._task_key}-{self._generation}")

    def _commit(
        self, batch_id: int, part: StagedPart | None, dead: list[dict[str, Any]]
    ) -> None:
        """Dead letters, then the batch's marker (idempotent by batch id), then feeds."""
        name = f"{batch_id:020d}"
        if dead:
            folder = self.output / "deadletters"
            folder.mkdir(parents=True, exist_ok=True)
            write_atomically(folder / f"{name}.jsonl", jsonl(dead))
        commit_batch(str(self.output), name, [part] if part is not None else [])
        self.feeds.flush()
        self.results_by_batch[batch_id] = part.rows if part is not None else 0
        engine = self.engine
        watermark = None
        if engine.max_ts is not None and engine.allowed_lateness is not None:
            watermark = format_ts(engine.max_ts - engine.allowed_lateness)
        store = self.join_state
        if store is None:
            self.figures_by_batch[batch_id] = JobFigures(watermark, len(engine.docs))
        else:
            self.figures_by_batch[batch_id] = JobFigures(
                watermark, store.documents, store.bytes_on_disk()
            )


class _StagedResults:
    """A batch's result records streamed to one staging JSON Lines file (created on the first).

    Closed (flushed and fsync-ed) when the ``with`` block ends; ``part`` is then
    what ``commit_batch`` renames into place, None when there were no results.
    """

    def __init__(self, folder: Path, lines: JsonLineEncoder) -> None:
        self.folder = folder
        self.lines = lines
        self.path: Path | None = None
        self.rows = 0
        self._handle: Any = None

    def __enter__(self) -> _StagedResults:
        return self

    def write(self, record: ResultRecord) -> None:
        """One result, as its JSON line (``JsonLineEncoder.encode``)."""
        if self._handle is None:
            self.folder.mkdir(parents=True, exist_ok=True)
            self.path = self.folder / f"{uuid.uuid4().hex}.jsonl"
            self._handle = open(self.path, "wb")  # noqa: SIM115
        self._handle.write(self.lines.encode(record))
        self.rows += 1

    def __exit__(self, *exc: object) -> None:
        if self._handle is not None:
            self._handle.flush()
            os.fsync(self._handle.fileno())
            self._handle.close()
            self._handle = None

    def part(self) -> StagedPart | None:
        if self.path is None:
            return None
        return StagedPart(0, str(self.path), self.rows)


def _feed_record(result: ResultRecord) -> dict[str, Any]:
    """What the Atom writer reads of a result (its end time is passed beside it).

    A ``SELECT *`` result gives its pieces only (the documents' own strings), never
    its joined ``xml`` (a copy per result, ~17 KB on the feed benchmark): the
    writer buffers up to 200 results per query until the batch ends, and holding
    the copies grew the driver past 11 GiB within the first batch at 100k
    subscriptions (docs/benchmarks.md).
    """
    record: dict[str, Any] = {
        "query": result.query,
        "result_id": result.result_id,
        "docs": [{"stream": s, "docid": d} for s, d, _ in result.docs],
    }
    if result.xml_parts is None:
        record["xml"] = result.xml
    else:
        record["xml_parts"] = result.xml_parts
    return record


def _held_bytes(doc: DocState) -> int:
    """A rough size of a held document (its XML, its witness maps, their objects)."""
    return 2 * len(doc.xml) + 160 * (len(doc.values) + len(doc.value_rows)) + 1024


def jsonl(items: list[dict[str, Any]]) -> bytes:
    """Compact JSON Lines, UTF-8."""
    text = "".join(json.dumps(i, ensure_ascii=False, separators=(",", ":")) + "\n" for i in items)
    return text.encode("utf-8")
