"""The CEL groups on the executors (``applyInPandasWithState``, RocksDB state).

Spark hands a group's rows of one micro-batch (``source.ROW_DDL``) and its state
to ``CelGroups``. A group is one bucket of one named class of queries
(``NAME:bucket``, ``events.live_classes``); it runs the in-process ``Engine`` on
the class's queries at the batch's registry version, with the catalog's PUBLISHed
XSCL streams of one schema declared as channels (``from_xscl.xscl_channels``), so
one match of several of them is one tuple (a row whose ``stream`` is a JSON list,
or equal events of one epoch). Its state (``STATE_DDL``)
is the engine's dynamic state (``Engine.export_state``: instances and the last
epoch), the events still waiting for the watermark (``pending``, JSON) and the
queries the engine runs (``queries``, JSON: the registry version and each query
id with the time it was subscribed at, so that an engine rebuilt from the state
gives each query the same start, ``Engine.subscribe(since=)``).

Each batch the group first brings its engine to the batch's registry version
(docs/cel.md 10.7): it unsubscribes the class's removed queries and subscribes
its new ones, which see the epochs processed from this batch on; a group whose
class is gone drops its state. Then it adds its new events to the pending ones
and processes, in end-time order, every epoch (events of one end) below the
batch's watermark (``source``: the job's clock minus the reorder slack), and
keeps the rest. An event below the watermark of an earlier batch never arrives
here (the source dead-letters it as late), so epochs are processed in order
exactly once.

A worker keeps the engine it last ran for each group with the state it wrote:
when Spark hands it the same state (the usual case: the same executor runs the
group's partition every batch) it goes on with that engine instead of compiling
the queries and importing the state again.

Output rows: ``job.join_groups.OUTPUT_DDL`` of the XSCL job (so the same sink writes
them): ``result`` rows with the CEL record (docs/cel.md 5.2) as their line,
``dead`` rows passed through from the ``dead`` group.

Where it runs: built on the driver, pickled to executors (strings and integers);
``__call__`` on an executor once per group and micro-batch (and replay).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import pandas as pd

from xscl.events.channels import ChannelEvent
from xscl.events.engine import Engine
from xscl.events.envelope import Event
from xscl.events.from_xscl import xscl_channels
from xscl.events.live_classes import SubscribedCel
from xscl.lang.cel.validation import Program, published_subqueries
from xscl.service.cel_subscriptions import live_at
from xscl.spark_plugin.cel.source import DEAD_GROUP

#: Spark DDL of a CEL group's state.
STATE_DDL = "engine BINARY, pending BINARY, queries BINARY"
_OUTPUT_COLUMNS = ("kind", "query", "result_id", "end", "line")

#: (registry version, [query id, the time it was subscribed at (None: from the start)])
Subscribed = tuple[int, list[tuple[str, int | None]]]

#: Per Python worker: group key -> (the state it last wrote, its engine).
_engines: dict[tuple[str, str, str], tuple[tuple[bytes, bytes], Engine]] = {}


class CelGroups:
    """The ``applyInPandasWithState`` function (see the module docstring)."""

    def __init__(self, registry: str, catalog: str) -> None:
        self.registry = registry
        self.catalog = catalog

    def _engine(self, group: str, saved: bytes | None, subscribed: Subscribed) -> Engine:
        """The group's engine running ``subscribed``, at the state ``saved`` (executor)."""
        cache_key = (self.registry, self.catalog, group)
        cached = _engines.pop(cache_key, None)
        state = (saved or b"", _encode(subscribed))
        if cached is not None and saved is not None and cached[0] == state:
            return cached[1]
        if cached is not None:
            cached[1].close()  # dropped: its frozen subscriptions back to the collector
        engine = Engine()
        catalog = {k: tuple(v) for k, v in json.loads(self.catalog).items()}
        for name, (schema, streams) in xscl_channels(catalog).items():
            engine.declare_channel(name, schema, streams)  # thesis 5.3.2: sharable
        version, queries = subscribed
        program = live_at(self.registry, self.catalog, version).program
        for since, run in itertools.groupby(queries, key=lambda q: q[1]):
            engine.subscribe(_subprogram(program, [qid for qid, _ in run]), since=since)
        if saved is not None:
            engine.import_state(saved)
        return engine

    def __call__(
        self, key: tuple[Any, ...], frames: Iterable[pd.DataFrame], state: Any
    ) -> Iterator[pd.DataFrame]:
        """One group's micro-batch (executor, once per group and batch)."""
        group = str(key[0])
        frame = pd.concat(list(frames), ignore_index=True)
        if group == DEAD_GROUP:
            yield _frame([("dead", "", "", 0, line) for line in frame["line"].tolist()])
            return
        version = int(frame["version"].max())
        live = live_at(self.registry, self.catalog, version)
        live_class = live.named(group.rsplit(":", 1)[0])
        if live_class is None:  # the class's last query was unsubscribed
            if state.exists:
                state.remove()
            dropped = _engines.pop((self.registry, self.catalog, group), None)
            if dropped is not None:
                dropped[1].close()
            yield _frame([])
            return
        saved: bytes | None = None
        pending: list[list[Any]] = []
        subscribed: Subscribed = (0, [])
        if state.exists:
            engine_bytes, pending_bytes, queries_bytes = state.get
            saved = bytes(engine_bytes)
            pending = json.loads(bytes(pending_bytes))
            subscribed = _decode(bytes(queries_bytes))
        events = frame[frame["kind"] == "event"]
        pending.extend(
            [stream, int(start), int(end), json.loads(attrs)]
            for stream, start, end, attrs in zip(
                events["stream"].tolist(),
                events["start"].tolist(),
                events["end"].tolist(),
                events["attrs"].tolist(),
                strict=True,
            )
        )
        watermark = int(frame["watermark"].max())
        pending.sort(key=lambda e: e[2])
        ready = [e for e in pending if e[2] < watermark]
        wanted = live_class.key_class.queries
        # a running query subscribed again after the state's version starts again
        redefined = {qid for qid, _ in subscribed[1] if live.events.get(qid, 0) > subscribed[0]}
        changed = bool(redefined) or [qid for qid, _ in subscribed[1]] != list(wanted)
        rows: list[tuple[str, str, str, int, bytes]] = []
        if ready or saved is None or changed:
            engine = self._engine(group, saved, subscribed)
            if changed:
                subscribed = _follow(engine, subscribed, live, wanted, redefined)
            subscribed = (version, subscribed[1])
            epoch: list[Event | ChannelEvent] = []
            for stream, start, end, attrs in ready:
                if epoch and epoch[0].end != end:
                    rows.extend(_rows(engine, epoch))
                    epoch = []
                if stream.startswith("["):  # a tuple of several streams (source.py)
                    epoch.append(ChannelEvent(tuple(json.loads(stream)), start, end, attrs))
                else:
                    epoch.append(Event(stream, start, end, attrs))
            if epoch:
                rows.extend(_rows(engine, epoch))
            saved = engine.export_state()
            _engines[(self.registry, self.catalog, group)] = (
                (saved, _encode(subscribed)),
                engine,
            )
        waiting = json.dumps(pending[len(ready) :]).encode("utf-8")
        state.update((saved, waiting, _encode(subscribed)))
        yield _frame(rows)


def _follow(
    engine: Engine,
    subscribed: Subscribed,
    live: SubscribedCel,
    wanted: Sequence[str],
    redefined: set[str],
) -> Subscribed:
    """Bring ``engine`` from ``subscribed`` to the class's ``wanted`` queries of ``live``:
    removed ones unsubscribed (readers before the publishers they read), new ones
    subscribed after the last epoch processed (executor, on a registry change)."""
    running = [q for q in subscribed[1] if q[0] in wanted and q[0] not in redefined]
    for qid, _since in reversed(subscribed[1]):
        if qid not in wanted or qid in redefined:
            engine.unsubscribe(qid)
    have = {qid for qid, _ in running}
    added = [qid for qid in wanted if qid not in have]
    if added:
        since = engine.time
        engine.subscribe(_subprogram(live.program, added))
        running.extend((qid, since) for qid in added)
    return (subscribed[0], running)


def _subprogram(program: Program, qids: Sequence[str]) -> Program:
    """The queries ``qids`` of ``program`` and the streams they PUBLISH."""
    wanted = set(qids)
    queries = tuple(q for q in program.queries if q.qid in wanted)
    published = {
        str(sub.publish): program.published[str(sub.publish)]
        for q in queries
        for sub in published_subqueries(q)
    }
    return Program(program.streams, queries, published)


def _encode(subscribed: Subscribed) -> bytes:
    version, queries = subscribed
    return json.dumps([version, [list(q) for q in queries]]).encode("utf-8")


def _decode(data: bytes) -> Subscribed:
    version, queries = json.loads(data)
    return int(version), [
        (str(qid), None if since is None else int(since)) for qid, since in queries
    ]


def _rows(
    engine: Engine, epoch: list[Event | ChannelEvent]
) -> Iterator[tuple[str, str, str, int, bytes]]:
    for result in engine.process_epoch(epoch[0].end, epoch):
        yield (
            "result",
            result.query,
            result.id,
            result.end,
            (result.to_json() + "\n").encode("utf-8"),
        )


def _frame(rows: list[tuple[str, str, str, int, bytes]]) -> pd.DataFrame:
    if not rows:
        return pd.DataFrame({c: pd.Series([], dtype=object) for c in _OUTPUT_COLUMNS}).astype(
            {"end": "int64"}
        )
    columns = [list(c) for c in zip(*rows, strict=True)]
    return pd.DataFrame(dict(zip(_OUTPUT_COLUMNS, columns, strict=True)))
