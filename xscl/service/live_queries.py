"""The subscriptions in effect at one registry version, compiled for executor tasks.

A micro-batch is planned with the registry version in effect at its first spool
offset (``spool_source``); every task of it (Stage 1, routing and the join groups)
works with ``JobQueries`` of that version, which each Python worker builds once from
the registry folder on the shared home and then extends event by event, so
subscriptions stay data: a new one needs no new Spark plan and no restart.

All queries are registered in one ``Subscriptions`` (one Stage 1, one var-id space),
each **placed** where a partition of the job can evaluate it
(``xscl.engine.placements``): ``stateless`` (one block: matched where Stage 1 runs),
``value`` (two blocks joined by a value: the value groups), ``time`` (two blocks, no
value between them, a finite window: the value groups, by time bucket), ``keyed``
(three or more blocks joined through one class of values: the value groups, by key
value) or ``chain`` (the rest: the chain group). So Stage 1 runs once per document, in
the task that reads it, and its witness rows serve every group it is routed to.

A query's ``since`` is the first document sequence number it may match: the spool
offset its event took effect at times ``SEQ_STRIDE`` (docs/language.md: a
subscription matches documents that arrive after it takes effect).

A subscribe event's queries come compiled (normal form, template assignment) from
the compiled table when the event has been compiled (``xscl.service.compiled``;
the compile job at ``xscl serve``'s start), else from their texts; both give equal
subscriptions, var ids included. From the table a worker skips parsing, normalising
and assigning templates, most of registering (docs/benchmarks.md, "Registration").

Where it runs: ``LiveQueries.at`` on executors (in the source's and the join groups'
tasks), once per Python worker and registry version; nothing here is pickled.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from xscl.connectors.document import Document
from xscl.engine.groups.routed import SEQ_STRIDE
from xscl.engine.placements import Placeable, placement_of
from xscl.engine.routing import RoutingTable
from xscl.engine.subscriptions import Subscriptions
from xscl.service.compiled.sources import EventCompiler, FromTexts, compiler_for
from xscl.service.subscriptions import SubscriptionLog, check_op
from xscl.service.worker_heap import settled
from xscl.templates.shapes import ShapeMemo
from xscl.xpath import Stage1Error


@dataclass
class JobQueries:
    """The subscriptions of one registry version (see the module docstring)."""

    version: int = 0
    shapes: ShapeMemo = field(default_factory=ShapeMemo)
    subscriptions: Subscriptions = field(init=False)
    #: query id -> the event it was (last) added at: its ``since`` is that event's offset
    added_at: dict[str, int] = field(default_factory=dict)
    #: event -> the offset it took effect at, as the queries' ``since`` were set
    offsets: dict[int, int] = field(default_factory=dict)
    _routing: RoutingTable | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.subscriptions = Subscriptions(self.shapes)

    # ------------------------------------------------------------- what tasks ask
    def routing(self) -> RoutingTable:
        """What routing needs of this version (computed once per version)."""
        if self._routing is None:
            table = self._routing = RoutingTable.of(self.subscriptions)
            table.time_classes, table.hop_classes  # noqa: B018 (computed here, once)
        return self._routing

    # ------------------------------------------------------------------ building
    def apply(
        self, version: int, log: SubscriptionLog, offset: int, compiler: EventCompiler
    ) -> bool:
        """Apply registry event ``version``, which took effect at spool ``offset``; a
        subscribe event's queries come compiled from ``compiler``.

        Only the event's own queries are placed and registered (a query is placed by its
        own template and windows, ``placements.place_queries``), and nothing of a
        compiled query is kept beyond what ``Subscriptions`` needs to match it: not its
        normal form or its text (docs/architecture.md, "What a Python worker keeps").
        True when a registered query was removed or replaced (``worker_heap``)."""
        event = log.event(version)
        check_op(event)
        self._routing = None
        subs = self.subscriptions
        since = offset * SEQ_STRIDE
        removed = False
        if event.op == "unsubscribe":
            for qid in event.ids:
                self.added_at.pop(qid, None)
                removed |= subs.remove_query(qid)
        # a subscribe event's queries one at a time, as the compiler gives them
        for compiled in compiler.compiled(event) if event.op == "subscribe" else ():
            qid = compiled.qid
            removed |= qid in subs.outputs  # subscribed again: replaced
            placeable = Placeable.of(compiled.normal, compiled.assignment.template)
            subs.add_query(
                compiled.normal,
                placement=placement_of(placeable.template, bounded=placeable.bounded),
                assignment=compiled.assignment,
                since=since,
            )
            self.added_at[qid] = version
        self.version = version
        return removed

    def extend(
        self, registry: str, log: SubscriptionLog, version: int, offset_of: Callable[[int], int]
    ) -> None:
        """Apply the events after this set's version up to ``version`` (``offset_of``:
        the spool offset each took effect at), then forget the shapes the build used
        (the queries stay) and settle the worker's heap (``worker_heap``)."""
        texts = FromTexts(self.shapes)
        removed = False
        for event in range(self.version + 1, version + 1):
            compiler = compiler_for(registry, event, texts)
            self.offsets[event] = offset_of(event)
            removed |= self.apply(event, log, self.offsets[event], compiler)
        self.shapes.clear()
        settled(removed=removed)

    def warm(self, documents: Iterable[Document]) -> None:
        """Run Stage 1 over ``documents`` and forget what it found: the automaton's
        transitions, their presearch screens and pair index are built now (a daemon's
        build, before its workers fork and would each build and copy them)."""
        stage1 = self.subscriptions.stage1
        for doc in documents:
            try:
                stage1.evaluate_rows(doc.stream, doc.docid, doc.ts_micros, doc.xml)
            except Stage1Error:  # a document routing rejects warms what it reached
                continue
        stage1.counters.clear()

    def rebase(self, offsets: dict[int, int]) -> None:
        """Take each query's ``since`` from ``offsets`` (event -> offset it took effect at).

        Only ``since`` depends on where events took effect, so a set built with other
        offsets (a standby's warm-up, ``pair.warm``) serves once rebased. Queries of events
        whose offset is the same are not touched: a worker forked from the daemon's build
        (``prebuild``) shares its pages until it writes them, and on a first start every
        event took effect where the build assumed (rewriting every ``since`` would copy
        the pages of every query's id into each worker: in one process at 100k
        subscriptions, forked, adopting the build now copies 1 MiB).
        """
        moved = {event for event, offset in self.offsets.items() if offsets[event] != offset}
        if moved:
            for qid, event in self.added_at.items():
                if event in moved:
                    self.subscriptions.since[qid] = offsets[event] * SEQ_STRIDE
        self.offsets = {event: offsets[event] for event in self.offsets}


#: The applied-folder key of a set built before any offset was recorded (``prebuild``).
PREBUILT = "<prebuilt>"


class LiveQueries:
    """A worker's subscriptions by (registry, applied folder): each kept at the newest
    version asked for, extended event by event (one per Python worker, in its
    ``spark_plugin.worker_context``)."""

    def __init__(self) -> None:
        self._built: dict[tuple[str, str | None], JobQueries] = {}

    def clear(self) -> None:
        self._built.clear()

    def at(self, registry: str, version: int, applied: str | None = None) -> JobQueries:
        """The subscriptions at registry ``version`` (executor; built once per version).

        Extends the cached set event by event when it is older; rebuilds from the first
        event when it is newer (a replay after a restart asks for an earlier version).
        ``applied``: where the job records the offsets events took effect at (its epoch).
        A set built under another applied folder (``prebuild``, a standby's warm-up) is
        adopted and rebased.
        """
        cached = self._built.get((registry, applied))
        if cached is not None and cached.version == version:
            return cached
        log = SubscriptionLog(Path(registry), applied)
        recorded = log.applied()
        if cached is None:
            cached = self._adopt(registry, version, recorded)
        if cached is None or cached.version > version:
            cached = JobQueries()
        if cached.version < version:

            def offset_of(event: int) -> int:
                offset = recorded.get(event)
                if offset is None:
                    raise RuntimeError(
                        f"subscription event {event} of {registry} has no recorded offset: "
                        "the driver records it before the micro-batch that applies it"
                    )
                return offset

            cached.extend(registry, log, version, offset_of)
        self._built[(registry, applied)] = cached
        return cached

    def prebuild(self, registry: str) -> JobQueries | None:
        """Every event of ``registry`` registered now, before any task asks (None: no
        event yet): the worker daemon builds it once per executor before it forks its
        workers (``spark_plugin.worker_daemon``), and each worker adopts it, rebased to
        the offsets its job recorded (only ``since`` depends on them)."""
        log = SubscriptionLog(Path(registry))
        versions = log.versions()
        if not versions:
            return None
        built = JobQueries()
        built.extend(registry, log, versions[-1], lambda _event: 0)
        built.routing()  # here, not once per forked worker (it reads every row)
        self._built[(registry, PREBUILT)] = built
        return built

    def _adopt(self, registry: str, version: int, offsets: dict[int, int]) -> JobQueries | None:
        """A set built for ``registry`` with another applied folder (a standby's warm-up),
        rebased to ``offsets``; None if there is none it can serve from."""
        for key, built in list(self._built.items()):
            if key[0] == registry and built.version <= version:
                if any(event not in offsets for event in built.offsets):
                    continue
                del self._built[key]
                built.rebase(offsets)
                return built
        return None
