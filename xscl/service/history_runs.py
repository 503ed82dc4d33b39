"""Which history scans a job owes, run as the subscriptions take effect (docs/architecture.md,
"History on subscribe").

``HistoryRuns.step`` runs on the job's driver between micro-batches (``xscl serve``).
For each subscribe event the job has applied (its offset recorded, ``since``), its
queries are grouped by history (the event's ``--history``, else each query's default,
``service.history.default_history``), and per group it owes:

1. the **first scan**, over ``[start, since)``: every result whose documents all lie in
   the history; run at the first step after the event took effect, so its results are
   committed within one scan's time of the subscription's first micro-batch;
2. **follow-up scans**, over ``[start, end)``, at most every ``follow_seconds`` while the
   spool grows: the joins of a history document with documents that arrived after
   ``since`` (which the live job cannot make), committed within ``follow_seconds`` plus
   a scan's time of the later document's arrival. A scanner may run them incrementally
   (``SparkScanner`` keeps the scan's streaming checkpoint and reads only the new
   offsets);
3. the group is **closed** once the spool's clock has passed ``closes_at`` (the
   history's clock plus the group's widest window plus the job's allowed lateness),
   after one last scan: no later document can join a history document. A group with
   an INF window, or a job without ``--allowed-lateness``, never closes: it is followed
   for as long as the job runs (docs/architecture.md, "History on subscribe").

Each scan's results go to ``HOME/results/NAME/history/<event>/``, committed by the
scanner (only the result ids not committed there before, the commit protocol's
part-then-marker: ``commit`` in process, executor tasks on Spark). Which
scans are done, and the offset each group was scanned to, are recorded after their
commit in ``<event>/_scans.json``; a scan whose record a crash lost runs again and
commits nothing twice.

A scan is a ``HistoryScanner``: in process (``InProcessScanner``, tests and small
jobs), or the job's plan on Spark (``spark_plugin.history_scan.SparkScanner``). No
Spark import here.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from xscl.connectors.durable import write_atomically
from xscl.connectors.spool import SpoolReader
from xscl.results.commit import StagedPart
from xscl.results.cursor import query_window
from xscl.service.history import (
    HistorySpan,
    clock_at,
    closes_at,
    default_history,
    history_span,
    scan,
)
from xscl.service.subscriptions import SubscriptionEvent, SubscriptionLog

#: The record of an event's scans, beside its committed results.
SCANS_NAME = "_scans.json"


class HistoryScanner(Protocol):
    """Commit into ``into`` the history results of the queries ``ids`` (registry ids) of
    subscribe ``event`` over ``[span.start, end)`` (``service.history``'s ownership
    applied) that ``into`` does not hold yet, as its next batch (the commit protocol's
    part-then-marker); how many. Called again for the same group with a growing ``end``;
    a scanner may keep work between the calls (``SparkScanner`` does). ``last``: no later
    call for this group will come, so what it kept can go."""

    def __call__(
        self,
        event: SubscriptionEvent,
        ids: Sequence[str],
        span: HistorySpan,
        end: int,
        *,
        last: bool,
        into: Path,
    ) -> int: ...


@dataclass(frozen=True)
class InProcessScanner:
    """A scan by the in-process engine (``service.history.scan``) and its commit, in the
    calling process; every call scans ``[span.start, end)`` again (tests, small jobs)."""

    spool: str
    allowed_lateness: int | None = None

    def __call__(
        self,
        event: SubscriptionEvent,
        ids: Sequence[str],
        span: HistorySpan,
        end: int,
        *,
        last: bool,
        into: Path,
    ) -> int:
        wanted = set(ids)
        queries = [q for q in event.queries() if q.qid in wanted]
        records = scan(
            queries, SpoolReader(self.spool), span, end, allowed_lateness=self.allowed_lateness
        )
        return commit(into, (record.to_json_dict() for record in records))


@dataclass(frozen=True)
class HistoryGroup:
    """Queries of one event with one history: their ids, the history, and the widest
    span a result covers (``reach``: 0 when every query has one block, so nothing after
    the history joins it; None: INF)."""

    ids: tuple[str, ...]
    history: int
    reach: int | None


def groups(event: SubscriptionEvent) -> list[HistoryGroup]:
    """An event's queries grouped by their history (the event's, else each one's default)."""
    by_history: dict[int, list[tuple[str, int | None]]] = {}
    for query in event.queries():
        window = query_window(query)
        history = event.history if event.history is not None else default_history(window)
        reach = 0 if not query.ops else window
        by_history.setdefault(history, []).append((query.qid, reach))
    out = []
    for history, members in sorted(by_history.items()):
        reaches = [r for _qid, r in members]
        widest = None if None in reaches else max(r for r in reaches if r is not None)
        out.append(HistoryGroup(tuple(q for q, _r in members), history, widest))
    return out


#: Default seconds between two follow-up scans of one group.
FOLLOW_SECONDS = 30.0


@dataclass
class HistoryRuns:
    """The scans a job owes (see the module docstring); ``step`` once per micro-batch."""

    log: SubscriptionLog
    spool: str
    folder: Path
    scanner: HistoryScanner
    allowed_lateness: int | None = None
    #: where a scan's failure is said (one line; the stream goes on)
    report: Callable[[str], None] = print
    #: the least seconds between two follow-up scans of one group
    follow_seconds: float = FOLLOW_SECONDS
    #: the clock ``follow_seconds`` is measured on
    clock: Callable[[], float] = time.monotonic
    #: the events owed nothing more (not looked at again by this process)
    finished: set[int] = field(default_factory=set)
    #: when each (event, history) group was last scanned by this process
    scanned_at: dict[tuple[int, str], float] = field(default_factory=dict)
    #: each event's groups (``groups`` parses its queries: once per event and process)
    grouped: dict[int, list[HistoryGroup]] = field(default_factory=dict)

    def step(self) -> int:
        """Run every scan due now; the results committed."""
        applied = self.log.applied()
        reader = SpoolReader(self.spool)
        end = reader.next_offset()
        committed = 0
        for event in self._subscribes(applied):
            try:
                committed += self._event(event, applied[event.version], reader, end)
            except Exception as exc:  # one line, and the stream goes on
                self.report(f"history of registry event {event.version}: {exc}")
        return committed

    def _subscribes(self, applied: dict[int, int]) -> Iterable[SubscriptionEvent]:
        return (
            self.log.event(version)
            for version in sorted(applied)
            if version not in self.finished and self.log.event(version).op == "subscribe"
        )

    def _event(self, event: SubscriptionEvent, since: int, reader: SpoolReader, end: int) -> int:
        if event.history is not None and event.history <= 0:
            # ``--history 0``: no history is owed, so no query of the event is parsed
            # (at 100,000 subscriptions that parse was 13 CPU-s of the driver's)
            self.finished.add(event.version)
            return 0
        folder = self.folder / str(event.version)
        done = _read_scans(folder)
        recorded = json.dumps(done, sort_keys=True)
        committed = 0
        grouped = self.grouped.get(event.version)
        if grouped is None:
            grouped = self.grouped[event.version] = groups(event)
        for group in grouped:
            key = str(group.history)
            state = done.setdefault(key, {"first": False, "closed": False})
            if state["closed"]:
                continue
            span = history_span(reader, since, group.history)
            if span.empty:  # nothing before it (the registry's first event, ...)
                state.update(first=True, closed=True)
                continue
            close = closes_at(span, group.reach, self.allowed_lateness)
            if not state["first"]:
                final = close is not None and span.clock is not None and close <= span.clock
                committed += self._scan(folder, event, group, span, span.since, final)
                state.update(first=True, closed=final, to=span.since)
            if not state["closed"] and end > int(state.get("to", span.since)):
                closing = close is not None and clock_at(reader, end - 1) >= close
                if closing or self._due((event.version, key)):
                    committed += self._scan(folder, event, group, span, end, closing)
                    state.update(closed=closing, to=end)
            now = json.dumps(done, sort_keys=True)
            if now != recorded:  # a scan ran: record it (else nothing to write)
                _write_scans(folder, now)
                recorded = now
        if all(state["closed"] for state in done.values()):
            self.finished.add(event.version)
        return committed

    def _due(self, key: tuple[int, str]) -> bool:
        last = self.scanned_at.get(key)
        return last is None or self.clock() - last >= self.follow_seconds

    def _scan(
        self,
        folder: Path,
        event: SubscriptionEvent,
        group: HistoryGroup,
        span: HistorySpan,
        end: int,
        last: bool,
    ) -> int:
        made = self.scanner(event, group.ids, span, end, last=last, into=folder)
        self.scanned_at[(event.version, str(group.history))] = self.clock()
        return made


def _read_scans(folder: Path) -> dict[str, dict[str, int]]:
    try:
        data: dict[str, dict[str, int]] = json.loads((folder / SCANS_NAME).read_text())
    except FileNotFoundError:
        return {}
    return data


def _write_scans(folder: Path, text: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    write_atomically(folder / SCANS_NAME, text.encode())


def commit(folder: str | Path, records: Iterable[dict[str, Any]]) -> int:
    """Publish the records no earlier scan of ``folder`` committed, as its next batch
    (``results.commit``: the part renamed, then the marker); how many (in process: the
    steps below, which the Spark scanner runs on the driver and in tasks)."""
    batch = next_batch(folder)
    part = stage_records(folder, batch.known, records, partition=0)
    return publish(folder, batch, [part])


@dataclass(frozen=True)
class NextBatch:
    """The next batch of a history folder: its marker's name and the result ids the
    folder holds already (driver, once per commit)."""

    name: str
    known: frozenset[str]


def next_batch(folder: str | Path) -> NextBatch:
    """Clear what a killed commit left staged; the folder's next batch (driver)."""
    from xscl.results.commit import clear_staging
    from xscl.results.read import committed_markers, result_ids

    root = Path(folder)
    clear_staging(root)  # a scan killed before its marker left only staging files
    known = frozenset(result_ids(root)) if root.is_dir() else frozenset()
    return NextBatch(f"{len(committed_markers(root)):020d}", known)


def stage_records(
    folder: str | Path, known: frozenset[str], records: Iterable[dict[str, Any]], partition: int
) -> StagedPart:
    """Stage the records whose result id is not ``known`` (each once) as one part of the
    folder's next batch (wherever the records are: a Spark task or the driver)."""
    from xscl.connectors.durable import write_synced
    from xscl.results.commit import STAGING

    seen = set(known)
    lines: list[str] = []
    for record in records:
        if record["result_id"] in seen:
            continue
        seen.add(record["result_id"])
        lines.append(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
    if not lines:
        return StagedPart(partition, None, 0)
    staging = Path(folder) / STAGING
    staging.mkdir(parents=True, exist_ok=True)
    part = staging / f"history-{uuid.uuid4().hex}.jsonl"
    write_synced(part, "".join(lines).encode("utf-8"))
    return StagedPart(partition, str(part), len(lines))


def publish(folder: str | Path, batch: NextBatch, parts: Sequence[StagedPart]) -> int:
    """Publish the staged ``parts`` under ``batch``'s marker (none when they are empty);
    how many records (driver)."""
    from xscl.results.commit import commit_batch, discard

    rows = sum(part.rows for part in parts)
    if rows == 0:
        discard(parts)
        return 0
    commit_batch(folder, batch.name, parts)
    return rows
