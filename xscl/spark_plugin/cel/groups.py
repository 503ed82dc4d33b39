"""The CEL groups on the executors (``applyInPandasWithState``, RocksDB state).

Spark hands a group's rows of one micro-batch (``source.ROW_DDL``) and its state
to ``CelGroups``. A group is one partition of one class of queries
(``xscl.events.partitioning``); it runs the in-process ``Engine`` on the class's
queries. Its state (``STATE_DDL``) is the engine's dynamic state
(``Engine.export_state``: instances and the last epoch) and the events still
waiting for the watermark (``pending``, JSON).

Each batch the group adds its new events to the pending ones, then processes,
in end-time order, every epoch (events of one end) below the batch's watermark
(``source``: the job's clock minus the reorder slack), and keeps the rest. An
event below the watermark of an earlier batch never arrives here (the source
dead-letters it as late), so epochs are processed in order exactly once.

A worker keeps the engine it last ran for each group with the state bytes it
wrote: when Spark hands it the same bytes (the usual case: the same executor
runs the group's partition every batch) it goes on with that engine instead of
compiling the queries and importing the state again.

Output rows: ``job.join_groups.OUTPUT_DDL`` of the XSCL job (so the same sink writes
them): ``result`` rows with the CEL record (docs/cel.md 5.2) as their line,
``dead`` rows passed through from the ``dead`` group.

Where it runs: built on the driver, pickled to executors (strings and integers);
``__call__`` on an executor once per group and micro-batch (and replay).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

import pandas as pd

from xscl.events.engine import Engine
from xscl.events.envelope import Event
from xscl.events.partitioning import class_program
from xscl.spark_plugin.cel.program import job_queries
from xscl.spark_plugin.cel.source import DEAD_GROUP

#: Spark DDL of a CEL group's state.
STATE_DDL = "engine BINARY, pending BINARY"
_OUTPUT_COLUMNS = ("kind", "query", "result_id", "end", "line")

#: Per Python worker: group key -> (the state bytes it last wrote, its engine).
_engines: dict[tuple[str, str, str], tuple[bytes, Engine]] = {}


class CelGroups:
    """The ``applyInPandasWithState`` function (see the module docstring)."""

    def __init__(self, cel_text: str, catalog: str) -> None:
        self.cel_text = cel_text
        self.catalog = catalog

    def _engine(self, group: str, saved: bytes | None) -> Engine:
        cache_key = (self.cel_text, self.catalog, group)
        cached = _engines.pop(cache_key, None)
        if cached is not None and saved is not None and cached[0] == saved:
            return cached[1]
        if cached is not None:
            cached[1].close()  # dropped: its frozen subscriptions back to the collector
        queries = job_queries(self.cel_text, self.catalog)
        engine = Engine()
        engine.subscribe(class_program(queries.program, queries.classes[int(group.split(":")[0])]))
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
        saved: bytes | None = None
        pending: list[list[Any]] = []
        if state.exists:
            engine_bytes, pending_bytes = state.get
            saved = bytes(engine_bytes)
            pending = json.loads(bytes(pending_bytes))
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
        rows: list[tuple[str, str, str, int, bytes]] = []
        if ready or saved is None:
            engine = self._engine(group, saved)
            epoch: list[Event] = []
            for stream, start, end, attrs in ready:
                if epoch and epoch[0].end != end:
                    rows.extend(_rows(engine, epoch))
                    epoch = []
                epoch.append(Event(stream, start, end, attrs))
            if epoch:
                rows.extend(_rows(engine, epoch))
            saved = engine.export_state()
            _engines[(self.cel_text, self.catalog, group)] = (saved, engine)
        state.update((saved, json.dumps(pending[len(ready) :]).encode("utf-8")))
        yield _frame(rows)


def _rows(engine: Engine, epoch: list[Event]) -> Iterator[tuple[str, str, str, int, bytes]]:
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
