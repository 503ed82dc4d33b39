"""``xscl-cel-events``: CEL events from committed XSCL results and an events folder.

Offsets are ``{"xscl": [epoch, batch], "events": seq, "latest": micros,
"registry": version}``: the last XSCL batch marker read (in the chain
``results.read.visible_markers`` follows across pair epochs), the last events
file read (``event_folder``), the job's **clock**: the largest end of everything
read so far (markers carry ``max_end``, event files their index's ``latest``; the
driver reads no event), and the newest event of the CEL registry
(``service.cel_subscriptions``). A micro-batch ``(start, end]`` is fixed by
committed data, so a replay reads the same events: exactly once downstream.

Subscriptions are data (docs/cel.md 10.7): a batch runs with the queries of
registry version ``end.registry``. Spark logs a batch's offsets before it runs,
so the batch at which an event takes effect is recorded there, and a replay after
a kill -9 runs with the same version. A new registry event alone makes a batch
(of ticks): it takes effect within one micro-batch even without new events.

Arrival order (docs/cel.md 6, 10.4): a batch arrives at once. An event is
**late** (``CEL-E007``) when its end is below ``start.latest - slack``; the
groups release every epoch below ``end.latest - slack`` (the ``watermark``
column). One ``tick`` row per group each batch carries the watermark to groups
that got no event.

Rows (``ROW_DDL``): ``group`` (``class:bucket``, the class's name from
``events.live_classes``, or ``dead``), ``kind`` (``event`` | ``tick`` | ``dead``),
``stream`` (a JSON list of streams for a tuple of several, a CEL channel tuple:
``events.from_xscl.line_events``), ``start``, ``end``, ``attrs`` (JSON),
``watermark``, ``line`` (a dead
letter's JSON), ``version`` (the registry version the batch runs with). The ticks
also reach the groups of a class the batch's events removed, once, so that they
drop their state.

Where it runs: planning (offsets, ``partitions``) on the driver, a few files'
metadata per batch; ``read`` on executors, once per partition and attempt.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadLimit, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from xscl.connectors.dead_letters import DeadLetter
from xscl.connectors.document import format_ts
from xscl.events.channels import ChannelEvent
from xscl.events.envelope import Event, read_events
from xscl.events.event_folder import events_file, ready_files
from xscl.events.from_xscl import line_events, published_streams
from xscl.events.live_classes import SubscribedCel
from xscl.events.partitioning import route
from xscl.results.read import part_lines, visible_markers
from xscl.service.cel_subscriptions import live_at
from xscl.service.subscriptions import SubscriptionLog

FORMAT_NAME = "xscl-cel-events"
ROW_DDL = (
    "group STRING, kind STRING, stream STRING, start BIGINT, end BIGINT, attrs STRING, "
    "watermark BIGINT, line BINARY, version INT"
)
DEAD_GROUP = "dead"
#: The watermark of a run that releases everything (``releaseAll``: the batch contract).
RELEASE_ALL = 2**62
_NO_TIME = -(2**62)

Offset = dict[str, Any]


@dataclass(frozen=True)
class CelOptions:
    """The source's options, parsed (strings and integers only: pickled to executors)."""

    #: the CEL registry folder (``service.cel_subscriptions``)
    registry: str
    catalog: str
    xscl_results: str | None
    #: the XSCL job's checkpoints, one folder per epoch (only logged batches are read)
    xscl_checkpoints: str | None
    xscl_registry: str | None
    events: str | None
    buckets: int
    slack: int
    release_all: bool

    @classmethod
    def parse(cls, options: Any) -> CelOptions:
        return cls(
            str(options["celRegistry"]),
            str(options.get("catalog") or "{}"),
            options.get("xsclResults") or None,
            options.get("xsclCheckpoints") or None,
            options.get("xsclRegistry") or None,
            options.get("events") or None,
            int(options.get("buckets", 1)),
            int(options.get("slackMicros", 0)),
            options.get("releaseAll") == "true",
        )


@dataclass(frozen=True)
class CelPartition(InputPartition):
    """One file to read (``kind`` ``xscl`` or ``events``), or the batch's ticks."""

    kind: str
    path: str
    late_before: int
    watermark: int
    #: XSCL query id -> the stream it PUBLISHes (``xscl`` partitions)
    streams: tuple[tuple[str, str], ...] = ()
    #: the registry version the batch runs with, and the one of the batch before
    version: int = 0
    previous: int = 0
    #: a file of an earlier batch, read again for the classes that read its streams
    #: from this batch on (``catch_up_reads``)
    catch_up: bool = False


class CelEventsDataSource(DataSource):
    """The ``xscl-cel-events`` format (driver, once per plan); streaming only."""

    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def schema(self) -> str:
        return ROW_DDL

    def streamReader(self, schema: StructType) -> CelEventsReader:
        return CelEventsReader(CelOptions.parse(self.options))


@dataclass
class SeenMarkers:
    """What the driver already read of the XSCL results, kept across micro-batches: the
    markers by file (written once, never changed) and the batches found in their epoch's
    commit log (a logged batch stays logged)."""

    markers: dict[Path, dict[str, Any]] = field(default_factory=dict)
    logged: set[Path] = field(default_factory=set)


def _markers(
    root: str | None, checkpoints: str | None = None, seen: SeenMarkers | None = None
) -> list[tuple[tuple[int, int], Path, dict[str, Any]]]:
    """((epoch, batch), folder, marker) of every visible XSCL batch marker, in order.

    With ``checkpoints`` (the XSCL job's checkpoint folder, one sub-folder per epoch)
    only markers of batches in their epoch's commit log: a marker written just before a
    kill -9, with the batch not yet logged as committed, is replayed by the next epoch
    under its own number, and reading both would feed that batch's results twice.

    >>> import tempfile
    >>> home = Path(tempfile.mkdtemp())
    >>> (home / "results" / "_commits").mkdir(parents=True)
    >>> _ = (home / "results" / "_commits" / "0.json").write_text('{"batch": 0, "parts": []}')
    >>> [key for key, _folder, _marker in _markers(str(home / "results"))]
    [(0, 0)]
    """
    if root is None:
        return []
    seen = seen or SeenMarkers()
    out = []
    for folder, marker in visible_markers(root, seen.markers):
        name = folder.name
        epoch = int(name[1:]) if name.startswith("e") and name[1:].isdigit() else 0
        batch = int(marker["batch"])
        if checkpoints is not None:
            logged = Path(checkpoints) / name / "commits" / str(batch)
            if logged not in seen.logged:
                if not logged.exists():
                    continue
                seen.logged.add(logged)
        out.append(((epoch, batch), folder, marker))
    return out


class CelEventsReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """See the module docstring."""

    def __init__(self, options: CelOptions) -> None:
        self.options = options
        self._target: Offset | None = None
        #: driver only: not pickled to the executors (``__getstate__``)
        self._seen = SeenMarkers()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_seen"] = SeenMarkers()
        return state

    def _xscl_markers(self) -> list[tuple[tuple[int, int], Path, dict[str, Any]]]:
        """The XSCL markers to read (driver, twice per micro-batch: offsets, partitions);
        each marker file is parsed once per reader."""
        return _markers(self.options.xscl_results, self.options.xscl_checkpoints, self._seen)

    def initialOffset(self) -> Offset:
        return {"xscl": [-1, -1], "events": 0, "latest": None, "registry": 0}

    def _available(self, start: Offset) -> Offset:
        """The offset that includes every committed marker and indexed file (driver)."""
        latest = start["latest"]
        position = list(start["xscl"])
        for key, _folder, marker in self._xscl_markers():
            if list(key) > position:
                position = list(key)
                end = marker.get("max_end")
                if end is not None:
                    latest = end if latest is None else max(latest, int(end))
        seq = int(start["events"])
        if self.options.events is not None:
            ready = ready_files(self.options.events, seq)
            for _seq, end in ready:
                if end is not None:
                    latest = end if latest is None else max(latest, end)
            if ready:
                seq = ready[-1][0]
        versions = SubscriptionLog(self.options.registry).versions()
        registry = max(versions[-1] if versions else 0, int(start.get("registry", 0)))
        return {"xscl": position, "events": seq, "latest": latest, "registry": registry}

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._available(self.initialOffset())

    def latestOffset(self, start: Offset, limit: ReadLimit) -> Offset:
        """The end of the next micro-batch (driver, once per trigger)."""
        if self._target is not None:
            return self._target
        return self._available(start)

    def partitions(self, start: Offset, end: Offset) -> Sequence[InputPartition]:
        """One partition per new part or events file, and the ticks (driver, per batch)."""
        slack = self.options.slack
        late_before = _NO_TIME if start["latest"] is None else int(start["latest"]) - slack
        watermark = (
            RELEASE_ALL
            if self.options.release_all
            else (_NO_TIME if end["latest"] is None else int(end["latest"]) - slack)
        )
        version, previous = int(end.get("registry", 0)), int(start.get("registry", 0))
        parts: list[CelPartition] = []
        markers = [
            (folder, marker)
            for key, folder, marker in self._xscl_markers()
            if list(start["xscl"]) < list(key) <= list(end["xscl"])
        ]
        if markers:
            mapping = tuple(sorted(published_streams(_xscl_queries(self.options)).items()))
            for folder, marker in markers:
                for part in marker["parts"]:
                    path = str(folder / part["file"])
                    parts.append(CelPartition("xscl", path, late_before, watermark, mapping))
        if self.options.events is not None:
            for seq in range(int(start["events"]) + 1, int(end["events"]) + 1):
                path = str(events_file(self.options.events, seq))
                parts.append(CelPartition("events", path, late_before, watermark))
        if version != previous and catch_up_reads(self.options, previous, version):
            parts.extend(self._catch_up(start, late_before, watermark))
        parts.append(CelPartition("tick", "", late_before, watermark))
        return [replace(p, version=version, previous=previous) for p in parts]

    def _catch_up(self, start: Offset, late_before: int, watermark: int) -> list[CelPartition]:
        """The files of earlier batches that may hold events not yet processed (their
        largest end at or after ``late_before``): those events wait in the groups of
        the classes that read them then, not in those of a class that reads their
        stream from this batch on (driver, on a batch whose registry events add reads)."""
        parts = []
        mapping = tuple(sorted(published_streams(_xscl_queries(self.options)).items()))
        for key, folder, marker in self._xscl_markers():
            end = marker.get("max_end")
            if list(key) <= list(start["xscl"]) and (end is None or int(end) >= late_before):
                for part in marker["parts"]:
                    path = str(folder / part["file"])
                    parts.append(
                        CelPartition("xscl", path, late_before, watermark, mapping, catch_up=True)
                    )
        if self.options.events is not None:
            for seq, end in ready_files(self.options.events, 0):
                if seq <= int(start["events"]) and end is not None and end >= late_before:
                    path = str(events_file(self.options.events, seq))
                    parts.append(
                        CelPartition("events", path, late_before, watermark, catch_up=True)
                    )
        return parts

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        """The rows of one partition (executor, once per partition and attempt)."""
        assert isinstance(partition, CelPartition)
        options = self.options
        version = partition.version
        live = live_at(options.registry, options.catalog, version)
        if partition.kind == "tick":
            for group in _tick_groups(options, partition.previous, live):
                yield (group, "tick", "", 0, 0, "", partition.watermark, b"", version)
            return
        classes = [c.key_class for c in live.classes]
        program = live.program
        if partition.catch_up:
            yield from _caught_up(options, partition, live)
            return
        for found in _events(partition):
            if isinstance(found, DeadLetter):
                yield _dead(found, partition.watermark, version)
                continue
            rows: dict[str, list[str]] = {}  # group -> the tuple's streams routed there
            for item in found.decode() if isinstance(found, ChannelEvent) else [found]:
                for row in self._event_row(item, partition, program, classes, live):
                    if isinstance(row, str):
                        rows.setdefault(row, []).append(item.stream)
                    else:
                        yield row
            if not rows:
                continue
            attrs = json.dumps(dict(found.attrs), ensure_ascii=False, separators=(",", ":"))
            for group, members in rows.items():
                # a channel tuple's streams as a JSON list (no stream name starts with "[")
                stream = members[0] if len(members) == 1 else json.dumps(members)
                yield (
                    group, "event", stream, found.start, found.end, attrs, partition.watermark,
                    b"", version,
                )  # fmt: skip

    def _event_row(
        self,
        item: Event,
        partition: CelPartition,
        program: Any,
        classes: list[Any],
        live: SubscribedCel,
    ) -> Iterator[tuple[Any, ...] | str]:
        """A dead letter's row for an event the job refuses, else each group it goes to."""
        options = self.options
        version = partition.version
        if item.stream in program.published:
            reason = f"stream {item.stream!r} is PUBLISHed by a query; only its queries feed it"
            yield _dead(
                DeadLetter(partition.path, None, item.stream, None, reason, "CEL-E006"),
                partition.watermark,
                version,
            )
            return
        if item.stream not in program.streams:
            return
        if item.end < partition.late_before:
            reason = (
                f"event ending {format_ts(item.end)} arrived after the job's clock passed "
                f"{format_ts(partition.late_before + options.slack)}, beyond the reorder slack"
            )
            yield _dead(
                DeadLetter(partition.path, None, item.stream, None, reason, "CEL-E007"),
                partition.watermark,
                version,
            )
            return
        for index, bucket in route(classes, item, options.buckets):
            yield f"{live.classes[index].name}:{bucket}"

    def commit(self, end: Offset) -> None:
        """Nothing to release: the files stay (other readers, replays after a restart)."""


def _xscl_queries(options: CelOptions) -> list[Any]:
    if options.xscl_registry is None:
        return []
    return list(SubscriptionLog(options.xscl_registry).current().values())


def _events(partition: CelPartition) -> Iterator[Event | ChannelEvent | DeadLetter]:
    """The events of one file: an XSCL part's PUBLISHed results (one match of queries
    PUBLISHing several streams as one ``ChannelEvent``), or an events file's lines."""
    if partition.kind == "xscl":
        streams = dict(partition.streams)
        for records in part_lines(Path(partition.path)):
            yield from line_events(records, streams)
        return
    with open(partition.path, encoding="utf-8") as handle:
        for _line, item in read_events(handle, source=partition.path):
            yield item


def _dead(letter: DeadLetter, watermark: int, version: int) -> tuple[Any, ...]:
    line = letter.to_json().encode("utf-8")
    return (DEAD_GROUP, "dead", "", 0, 0, "", watermark, line, version)


def catch_up_reads(options: CelOptions, previous: int, version: int) -> dict[str, frozenset[str]]:
    """Class name -> the streams it reads at registry ``version`` and did not at
    ``previous`` (every stream of a new class). Runs wherever it is called."""
    before = live_at(options.registry, options.catalog, previous)
    after = live_at(options.registry, options.catalog, version)
    out = {}
    for live_class in after.classes:
        old = before.named(live_class.name)
        added = live_class.key_class.reads - (old.key_class.reads if old else frozenset())
        if added:
            out[live_class.name] = added
    return out


def _caught_up(
    options: CelOptions, partition: CelPartition, live: SubscribedCel
) -> Iterator[tuple[Any, ...]]:
    """The events of an earlier batch's file not yet processed (ending at or after the
    batch's ``late_before``), routed only to the classes that read their stream from this
    batch on (executor, once per catch-up partition and attempt). Its dead letters and
    late events were written when the file was first read."""
    added = catch_up_reads(options, partition.previous, partition.version)
    classes = [c.key_class for c in live.classes]
    for found in _events(partition):
        if isinstance(found, DeadLetter):
            continue
        # one row per stream: each group folds equal events of a channel's streams again
        for item in found.decode() if isinstance(found, ChannelEvent) else [found]:
            yield from _caught_up_rows(options, partition, live, classes, added, item)


def _caught_up_rows(
    options: CelOptions,
    partition: CelPartition,
    live: SubscribedCel,
    classes: list[Any],
    added: dict[str, frozenset[str]],
    item: Event,
) -> Iterator[tuple[Any, ...]]:
    """The catch-up rows of one event (``_caught_up``)."""
    if item.end < partition.late_before:
        return
    if item.stream not in live.program.streams or item.stream in live.program.published:
        return
    attrs = json.dumps(dict(item.attrs), ensure_ascii=False, separators=(",", ":"))
    for index, bucket in route(classes, item, options.buckets):
        name = live.classes[index].name
        if item.stream in added.get(name, ()):
            yield (
                f"{name}:{bucket}", "event", item.stream, item.start, item.end, attrs,
                partition.watermark, b"", partition.version,
            )  # fmt: skip


def _tick_groups(options: CelOptions, previous: int, live: SubscribedCel) -> list[str]:
    """Every group of the batch's classes, and of the classes its events removed
    (executor, once per tick partition and attempt)."""
    groups = [g for c in live.classes for g in c.group_keys(options.buckets)]
    names = {c.name for c in live.classes}
    before = live_at(options.registry, options.catalog, previous)
    gone = [c for c in before.classes if c.name not in names]
    return [*groups, *(g for c in gone for g in c.group_keys(options.buckets))]
