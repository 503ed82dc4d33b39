"""Where a worker takes a subscribe event's compiled queries from: its texts, or the table.

``EventCompiler`` is the one question ``live_queries.JobQueries`` asks per subscribe event;
its answer is an iterator, so a worker registers each query as it comes and holds only
what it keeps (docs/architecture.md, "What a Python worker keeps").
``FromTexts`` answers it by parsing the event's query file, normalising and
assigning templates (once per query shape, ``ShapeMemo``); ``FromTable`` reads the
rows the compile job wrote (``table``). Both give equal normal forms and
assignments in the same order, so the engines built from either are equal, var
ids included (tested): workers that answered differently still agree on the ids
Stage 1 rows carry.

Where it runs: executors (``live_queries.LiveQueries``), once per subscribe event and worker.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Protocol

from xscl.lang.ast import Query
from xscl.service.compiled.table import (
    CompiledQuery,
    EventQueries,
    compiled_folder,
    iter_event,
)
from xscl.service.subscriptions import SubscriptionEvent
from xscl.templates.shapes import ShapeMemo

__all__ = [
    "EventCompiler",
    "FromTable",
    "FromTexts",
    "compiler_for",
    "is_compiled",
    "subscribed_queries",
]


class EventCompiler(Protocol):
    """The compiled queries a subscribe event adds, in registration order."""

    def compiled(self, event: SubscriptionEvent) -> Iterator[CompiledQuery]: ...


class FromTexts:
    """Parse, normalise and assign the event's queries (the compile job's own work), one
    at a time."""

    def __init__(self, shapes: ShapeMemo | None = None) -> None:
        self.shapes = shapes if shapes is not None else ShapeMemo()

    def compiled(self, event: SubscriptionEvent) -> Iterator[CompiledQuery]:
        for query in event.iter_queries():
            normal = self.shapes.normal(query)
            yield CompiledQuery(normal, self.shapes.assignment(normal))


class FromTable:
    """Read the event's rows of the compiled table under ``registry``, a batch at a time."""

    def __init__(self, registry: str | Path) -> None:
        self.registry = Path(registry)

    def compiled(self, event: SubscriptionEvent) -> Iterator[CompiledQuery]:
        return iter_event(self.registry, event.version)


def is_compiled(registry: str | Path, version: int) -> bool:
    """Has the compile job written subscribe event ``version``'s rows?"""
    return compiled_folder(registry, version).is_dir()


def compiler_for(registry: str | Path, version: int, texts: FromTexts) -> EventCompiler:
    """The table when event ``version`` has been compiled, else ``texts``."""
    return FromTable(registry) if is_compiled(registry, version) else texts


def subscribed_queries(registry: str | Path, event: SubscriptionEvent) -> Mapping[str, Query]:
    """The queries subscribe ``event`` adds, by id, without normalising them: from the
    table when it has been compiled (no parsing; each decoded when asked), else parsed
    from the event's file."""
    if is_compiled(registry, event.version):
        return EventQueries(registry, event.version)
    return {q.qid: q for q in event.queries()}
