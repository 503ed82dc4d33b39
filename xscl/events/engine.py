"""The CEL engine: many queries as merged Cayuga automata, event by event (thesis 4.3-4.5).

Events are processed in **epochs**, all events of one detection time (end)
together (thesis 4.4.3). For each event:

1. the FR index gives the start-state edges whose (static) predicates hold;
   each creates an instance at its target;
2. the AN index gives the active states reading the event's stream whose
   filter's static part holds; their instance store (the AI index) gives the
   candidate instances; an instance the event can follow (it starts after the
   instance ends) and whose filter holds is **affected**: it is consumed at the
   end of the epoch, after traversing every rebind and forward edge (FR index)
   whose predicate holds.

New instances go to pending lists and are installed at the end of the epoch,
so no event sees an instance made in its own epoch and results do not depend on
the order of simultaneous events. Reaching an end state is an output: a result,
and an event of the PUBLISHed (or internal) stream, processed in the same
epoch (resubscription, 4.4.3).

Memory (4.4.5): an instance at a state whose every edge bounds the composite
DUR can no longer complete once that bound has passed; it is dropped then.
An instance that can never be affected (a null in its AI key) is never kept.
Instances share their values with the events they came from (a new instance
copies references, the thesis's shallow copy), and string values are
canonical (``sys.intern``, the thesis's Internal String Table): one copy of a
string however many instances hold it, and equal strings compare by identity.

Which implementation of each optimisation is used is an ``EngineConfig``.

Channels (thesis 5.3-5.4.4, ``xscl.events.channels``): ``declare_channel`` makes
base streams of one schema sharable; a tuple of several of them (a
``ChannelEvent``, or simultaneous equal events of member streams) is processed
once, with its membership, by the automata of every query that reads one member
of the channel as a first input; an instance is ``(values, start, end, origin,
membership)``, and outputs go to the queries whose mask its membership meets.
"""

from __future__ import annotations

import gc
import heapq
import itertools
import json
import sys
import zlib
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from xscl.errors import SubscriptionError
from xscl.events.active_states import ActiveStates, IndexedActiveStates, ScannedActiveStates
from xscl.events.automaton import Output, State
from xscl.events.channels import ALL, ChannelEvent, Channels
from xscl.events.compile import QueryCompiler, first_inputs
from xscl.events.edge_index import EdgeIndex, IndexedEdges, ScannedEdges
from xscl.events.envelope import Event
from xscl.events.instances import InstanceStore, hashed_store, scanned_store
from xscl.events.ir import Parts
from xscl.events.network import Holding, Network
from xscl.events.results import Result, ResultChannel
from xscl.events.shape_memo import ShapeMemo
from xscl.events.sharing import MergedStates, SeparateStates, StateSharing
from xscl.lang.cel.ast import Query
from xscl.lang.cel.validation import Program, published_subqueries, stream_refs
from xscl.lang.gc_pause import GC_PAUSE_QUERIES, registering_frozen

__all__ = ["OPTIMISATIONS", "Engine", "EngineConfig"]

Schema = tuple[str, ...]
_BEFORE_TIME = -(2**63)


@dataclass(frozen=True)
class EngineConfig:
    """The implementation of each optimisation of thesis 4.5 (all on by default)."""

    sharing: Callable[[], StateSharing] = MergedStates
    active_states: Callable[[], ActiveStates] = IndexedActiveStates
    instance_store: Callable[[Parts], InstanceStore] = hashed_store
    edge_index: Callable[[], EdgeIndex] = IndexedEdges
    #: not one of the thesis's: registration compiles each comparison once per shape
    #: and literals (``xscl.events.shape_memo``); the same automata either way
    shape_memo: bool = True

    @classmethod
    def without(cls, *names: str) -> EngineConfig:
        """Everything on except the named optimisations (keys of ``OPTIMISATIONS``)."""
        return cls(**{OPTIMISATIONS[name][0]: OPTIMISATIONS[name][1] for name in names})


#: Each optimisation's name -> (its ``EngineConfig`` field, the implementation without it).
OPTIMISATIONS: dict[str, tuple[str, Any]] = {
    "merging": ("sharing", SeparateStates),
    "an": ("active_states", ScannedActiveStates),
    "ai": ("instance_store", scanned_store),
    "fr": ("edge_index", ScannedEdges),
}


@dataclass
class _Subscription:
    qid: str
    holding: Holding
    published: set[str] = field(default_factory=set)
    internal: list[str] = field(default_factory=list)
    reads: set[str] = field(default_factory=set)


class _Epoch:
    """What one epoch collects: new and consumed instances, outputs, events to process."""

    __slots__ = ("channels", "consumed", "emitted", "pending", "queue", "results", "time")

    def __init__(self, time: int, channels: bool = False) -> None:
        self.time = time
        self.pending: dict[State, list[Any]] = {}
        self.consumed: dict[State, list[Any]] = {}
        self.results: set[Result] = set()
        #: with result channels: (schema, values, start) -> the queries it is a result of
        self.channels: dict[Any, list[tuple[str, str | None]]] | None = {} if channels else None
        self.emitted: set[tuple[str, tuple[Any, ...], int]] = set()
        #: (stream or channel key, event, membership: ALL for a plain event)
        self.queue: deque[tuple[str, tuple[tuple[Any, ...], int, int], int]] = deque()

    def offer(self, stream: str, values: tuple[Any, ...], start: int) -> None:
        """Queue an event of this epoch unless the same event is already queued."""
        key = (stream, values, start)
        if key not in self.emitted:
            self.emitted.add(key)
            self.queue.append((stream, (values, start, self.time), ALL))


class Engine:
    """Runs subscribed CEL queries over events in detection-time order."""

    def __init__(self, config: EngineConfig | None = None) -> None:
        self.config = config or EngineConfig()
        self.schemas: dict[str, Schema] = {}
        self.base: set[str] = set()
        self.active = self.config.active_states()
        self.channels = Channels()
        self.network = Network(
            self.config.sharing(),
            self.config.edge_index(),
            self.config.instance_store,
            self._schema_of,
            self._removed,
        )
        self.subscriptions: dict[str, _Subscription] = {}
        self.memo = ShapeMemo() if self.config.shape_memo else None
        self.time: int | None = None
        self._expiry: list[tuple[int, int, State, Any]] = []
        self._sequence = itertools.count()
        self._internal = itertools.count()
        #: a large subscribe froze the subscriptions (``registering_frozen``); unfrozen
        #: when subscriptions are dropped (``unsubscribe``, ``close``)
        self._frozen = False
        #: subscriptions were dropped since the last freeze: collect before the next one
        self._dropped = False

    # ------------------------------------------------------------------ subscriptions

    def _schema_of(self, stream: str) -> Schema:
        """A stream's schema, or a channel's (its key ``@name``)."""
        schema = self.schemas.get(stream)
        return schema if schema is not None else self.channels.schemas[stream]

    def declare_channel(self, name: str, schema: Schema, streams: Iterable[str]) -> None:
        """Make base ``streams`` of ``schema`` sharable, encoded by channel ``name``
        (thesis 5.3.1-5.3.2); a stream not yet known is declared with ``schema``.

        Queries subscribed from now on that read one member as a first input share
        their automata with the queries reading the other members; queries
        subscribed before keep reading the member as a plain stream (a tuple is
        decoded for them). ``CEL-S006`` when the name is taken, a stream is in
        another channel, is PUBLISHed, or has other attributes (in another order).
        """
        members = list(streams)
        problem = None
        if not members or len(set(members)) != len(members):
            problem = "a channel needs distinct streams"
        elif "@" + name in self.channels.members:
            problem = f"channel {name!r} is already declared"
        for stream in members:
            if problem is not None:
                break
            known = self.schemas.get(stream)
            if self.channels.key(stream) is not None:
                problem = f"stream {stream!r} is already in a channel"
            elif known is not None and stream not in self.base:
                problem = f"stream {stream!r} is not a base stream"
            elif known is not None and known != tuple(schema):
                problem = f"stream {stream!r} has attributes {known}, not {tuple(schema)}"
        if problem is not None:
            raise SubscriptionError.from_code("CEL-S006", problem)
        for stream in members:
            if stream not in self.schemas:
                self.schemas[stream] = tuple(schema)
                self.base.add(stream)
        self.channels.add(name, tuple(schema), members)

    def catalog(self) -> dict[str, Schema]:
        """Every stream a new query may read: base and PUBLISHed streams, with schemas."""
        return {s: schema for s, schema in self.schemas.items() if not s.startswith("#")}

    def subscribe(self, program: Program, since: int | None = None) -> list[str]:
        """Add every query of ``program`` (validated against ``catalog()``); returns their ids.

        They see the events of the epochs after the last one processed, or after
        ``since`` when given (a job rebuilding an engine from its exported state gives
        each query the time it was first subscribed at, ``spark_plugin.cel.groups``).
        """
        clash = [q.qid for q in program.queries if q.qid in self.subscriptions]
        if clash:
            raise SubscriptionError.from_code(
                "CEL-S001", f"query ids already subscribed: {', '.join(clash)}"
            )
        for stream, schema in [*program.streams.items(), *program.published.items()]:
            known = self.schemas.get(stream)
            if known is not None and set(known) != set(schema):
                raise SubscriptionError.from_code(
                    "CEL-S002", f"stream {stream!r} has attributes {known}, not {schema}"
                )
        for stream, schema in program.streams.items():
            if stream not in self.schemas:
                self.schemas[stream] = schema
                self.base.add(stream)
        for stream, schema in program.published.items():
            self.schemas.setdefault(stream, schema)
        if since is None:
            since = _BEFORE_TIME if self.time is None else self.time
        # many queries: the collector paused, then what they built is frozen out of its
        # way (gc.freeze): no full pass over every earlier subscription per call, as a
        # collection here would be (quadratic over a set subscribed in chunks), and none
        # in the first events processed either
        large = len(program.queries) >= GC_PAUSE_QUERIES
        with registering_frozen(len(program.queries), collect_first=large and self._dropped):
            for query in program.queries:
                self._subscribe(query, since)
        if large:
            self._frozen, self._dropped = True, False
        return [q.qid for q in program.queries]

    def close(self) -> None:
        """Give the subscriptions a large ``subscribe`` froze back to the cyclic garbage
        collector (``gc.unfreeze``), so that the engine's reference cycles are reclaimed
        once it is dropped. The engine still works; call it before dropping one that
        subscribed ``GC_PAUSE_QUERIES`` queries or more at once in a long-lived process.
        """
        if self._frozen:
            gc.unfreeze()
            self._frozen = False

    def _subscribe(self, query: Query, since: int) -> None:
        encoded = self.channels.encoding(first_inputs(query.source))
        subscription = _Subscription(query.qid, Holding(mask=self.channels.query_mask(encoded)))

        def new_stream(schema: Schema) -> str:
            name = f"#{query.qid}.{next(self._internal)}"
            self.schemas[name] = schema
            subscription.internal.append(name)
            return name

        compiler = QueryCompiler(
            self.network,
            self.schemas.__getitem__,
            new_stream,
            subscription.holding,
            since,
            self.memo,
            encoded,
        )
        mask = subscription.holding.mask
        for sub in published_subqueries(query):
            assert sub.publish is not None
            subscription.published.add(sub.publish)
            if sub is not query:
                compiler.query(sub, self._output(query.qid, sub.publish, since, mask))
        compiler.query(query, self._output(query.qid, query.publish, since, mask))
        subscription.reads = {ref.name for ref in stream_refs(query.source)}
        self.subscriptions[query.qid] = subscription

    def _output(
        self, qid: str, stream: str | None, since: int, mask: int
    ) -> Callable[[Schema], Output]:
        def make(schema: Schema) -> Output:
            target = self.schemas.get(stream) if stream else None
            order = None
            if target is not None and target != schema:
                order = tuple(schema.index(name) for name in target)
            return Output(qid, stream, since, names=schema, order=order, members=mask)

        return make

    def unsubscribe(self, qid: str) -> None:
        """Remove a query: it produces nothing more; states only it held go with their instances.

        Refused while another subscribed query reads a stream only this one PUBLISHes.
        """
        subscription = self.subscriptions.get(qid)
        if subscription is None:
            raise SubscriptionError.from_code("CEL-S003", f"query {qid!r} is not subscribed")
        others = [s for s in self.subscriptions.values() if s is not subscription]
        for stream in subscription.published:
            if any(stream in s.published for s in others):
                continue
            readers = sorted(s.qid for s in others if stream in s.reads)
            if readers:
                raise SubscriptionError.from_code(
                    "CEL-S004", f"{qid} PUBLISHes {stream!r}, which {', '.join(readers)} read(s)"
                )
        del self.subscriptions[qid]
        self.network.release(subscription.holding)
        for name in subscription.internal:
            del self.schemas[name]
        # what only this query held may form reference cycles: not frozen any more
        self.close()
        self._dropped = True

    def _removed(self, state: State) -> None:
        if state.stream is not None:
            self.active.deactivate(state)
            state.store = self.config.instance_store(state.filter_parts)

    # ------------------------------------------------------------------ events

    def run(self, events: Iterable[Event | ChannelEvent]) -> set[Result]:
        """Process a whole input (any order: it is sorted by end time); all results."""
        ordered = sorted(events, key=lambda e: e.end)
        results: set[Result] = set()
        for _, group in itertools.groupby(ordered, key=lambda e: e.end):
            batch = list(group)
            results |= self.process_epoch(batch[0].end, batch)
        return results

    def process_epoch(self, time: int, events: Iterable[Event | ChannelEvent]) -> set[Result]:
        """Process every event whose end is ``time`` (later than any processed before).

        Events of member streams of one channel with the same values and start (a
        ``ChannelEvent``'s streams, or equal events) are one channel tuple.
        """
        return self._process(_Epoch(time), events).results

    def process_epoch_channels(
        self, time: int, events: Iterable[Event | ChannelEvent]
    ) -> list[ResultChannel]:
        """``process_epoch`` with its results as result channels: one tuple for
        every output event (schema, values, interval) with the queries it is a
        result of (thesis 5.4.4's output channel D: outputs encoded once, per-query
        results derived from membership). Decoded, they are ``process_epoch``'s
        results; a query may repeat in one tuple's members (set semantics).
        """
        channels = self._process(_Epoch(time, channels=True), events).channels
        assert channels is not None
        return [
            ResultChannel(tuple(members), start, time, tuple(zip(names, values, strict=True)))
            for (names, values, start), members in channels.items()
        ]

    def _process(self, epoch: _Epoch, events: Iterable[Event | ChannelEvent]) -> _Epoch:
        time = epoch.time
        if self.time is not None and time <= self.time:
            raise ValueError(f"epoch {time} is not after the last one ({self.time})")
        self._expire(time)
        shared: dict[tuple[str, tuple[Any, ...], int], int] = {}
        channels = self.channels
        for event in events:
            streams = event.streams if isinstance(event, ChannelEvent) else (event.stream,)
            made: dict[Schema, tuple[Any, ...]] = {}
            for stream in streams:
                schema = self.schemas.get(stream)
                if schema is None or stream not in self.base:
                    continue
                values = made.get(schema)
                if values is None:
                    values = made[schema] = tuple(
                        sys.intern(v) if v.__class__ is str else v for v in event.values(schema)
                    )
                key = channels.key(stream)
                if key is None:
                    epoch.offer(stream, values, event.start)
                else:
                    tuple_key = (key, values, event.start)
                    shared[tuple_key] = shared.get(tuple_key, 0) | channels.bit(stream)
        for (key, values, start), membership in shared.items():
            epoch.queue.append((key, (values, start, time), membership))
        while epoch.queue:
            stream, queued, membership = epoch.queue.popleft()
            self._event(epoch, stream, queued, membership)
        self._install(epoch)
        self.time = time
        return epoch

    def _event(self, epoch: _Epoch, stream: str, event: tuple[Any, ...], membership: int) -> None:
        """One event of ``stream`` (``ALL``), or a tuple of channel ``stream`` with its
        membership: the start state's edges once, then the states reading each stream."""
        edges = self.network.edge_index
        start = self.network.start_states.get(stream)
        if start is not None:
            for edge, check in edges.candidates(start, event):
                shared = membership & edge.members
                if shared and (check is None or check(None, event)):
                    self._traverse(epoch, edge, None, event, epoch.time, shared, None)
        if membership == ALL:
            self._affect(epoch, stream, event)
            return
        # decoded per member: queries reading several members, and second inputs
        for member in self.channels.streams_of(stream, membership):
            start = self.network.start_states.get(member)
            if start is not None:
                for edge, check in edges.candidates(start, event):
                    if check is None or check(None, event):
                        self._traverse(
                            epoch, edge, None, event, epoch.time, edge.members, None
                        )
            self._affect(epoch, member, event)

    def _affect(self, epoch: _Epoch, stream: str, event: tuple[Any, ...]) -> None:
        """The instances an event of ``stream`` affects: consumed, their edges traversed."""
        edges = self.network.edge_index
        event_start = event[1]
        for state in self.active.affected(stream, event):
            store = state.store
            residual = store.residual
            candidates = None
            consumed = None
            for instance in store.candidates(event):
                if instance[2] >= event_start:
                    continue  # the event does not start after the instance ends
                if residual is not None and not residual(instance, event):
                    continue
                if consumed is None:
                    consumed = epoch.consumed.setdefault(state, [])
                    candidates = edges.candidates(state, event)
                consumed.append(instance)
                origin = instance[3]
                membership = instance[4]
                mapped: dict[Any, Any] = {}  # edges of one map (windows) map once
                for edge, check in candidates:  # type: ignore[union-attr]
                    if origin <= edge.since:
                        continue
                    shared = membership & edge.members
                    if shared and (check is None or check(instance, event)):
                        self._traverse(epoch, edge, instance, event, origin, shared, mapped)

    def _traverse(
        self,
        epoch: _Epoch,
        edge: Any,
        instance: Any,
        event: Any,
        origin: int,
        membership: int,
        mapped: dict[Any, Any] | None,
    ) -> None:
        if mapped is None:
            values = edge.map(instance, event)
        else:
            values = mapped.get(edge.map)
            if values is None:
                values = mapped[edge.map] = edge.map(instance, event)
        start = event[1] if instance is None else instance[1]
        target = edge.target
        if target.stream is not None:
            epoch.pending.setdefault(target, []).append(
                (values, start, epoch.time, origin, membership)
            )
            return
        names: Any = None
        attrs: Any = None
        members: Any = None
        channels = epoch.channels
        for output in target.outputs:
            if origin <= output.since or not membership & output.members:
                continue
            if output.report:
                if channels is not None:
                    if output.names is not names:  # outputs of one schema share a tuple
                        names = output.names
                        key = (names, values, start)
                        members = channels.get(key)
                        if members is None:
                            members = channels[key] = []
                    members.append((output.query, output.stream))
                else:
                    if output.names is not names:  # outputs of one schema share their attrs
                        names = output.names
                        attrs = tuple(zip(names, values, strict=True))
                    epoch.results.add(
                        Result(output.query, output.stream, start, epoch.time, attrs)
                    )
            if output.stream is not None:
                order = output.order
                fed = values if order is None else tuple(values[k] for k in order)
                epoch.offer(output.stream, fed, start)

    def _install(self, epoch: _Epoch) -> None:
        touched = set(epoch.consumed) | set(epoch.pending)
        for state, instances in epoch.consumed.items():
            for instance in instances:
                state.store.discard(instance)
        lifetimes: dict[State, int | None] = {}
        for state, instances in epoch.pending.items():
            store = state.store
            life = lifetimes[state] = state.lifetime()
            for instance in instances:
                if store.add(instance) and life is not None:
                    heapq.heappush(
                        self._expiry, (instance[1] + life, next(self._sequence), state, instance)
                    )
        for state in touched:
            self._update_activity(state)

    def _update_activity(self, state: State) -> None:
        if len(state.store):
            self.active.activate(state)
        else:
            self.active.deactivate(state)

    def _expire(self, time: int) -> None:
        """Drop instances whose state's DUR bounds have all passed before ``time``."""
        heap = self._expiry
        touched: set[State] = set()
        while heap and heap[0][0] < time:
            _, _, state, instance = heapq.heappop(heap)
            life = state.lifetime()
            if life is None:
                continue
            if instance[1] + life >= time:
                heapq.heappush(heap, (instance[1] + life, next(self._sequence), state, instance))
                continue
            state.store.discard(instance)
            touched.add(state)
        for state in touched:
            self._update_activity(state)

    # ------------------------------------------------------------------ state transfer

    def _state_names(self) -> dict[State, list[str]]:
        """Each state that holds instances -> its stable names ``query/position``.

        A position counts the states a query's compilation asked for, in order, so it
        depends only on the query's text: the same in every engine that subscribes the
        query, whatever else is subscribed and however states are merged.
        """
        names: dict[State, list[str]] = {}
        for qid, subscription in self.subscriptions.items():
            for position, state in enumerate(subscription.holding.states):
                if state.stream is not None:
                    names.setdefault(state, []).append(f"{qid}/{position}")
        return names

    def export_state(self) -> bytes:
        """The dynamic state (the last epoch's time, every instance) as compact bytes.

        ``import_state`` on a fresh engine subscribed to the same queries continues
        exactly where this one stopped (the Spark job keeps these bytes per group).
        An instance of a channel tuple also lists its member streams (bits are the
        engine's own).
        """
        names_of = self.channels.names
        states = [
            [
                names,
                [
                    [list(i[0]), i[1], i[2], i[3]]
                    if i[4] == ALL
                    else [list(i[0]), i[1], i[2], i[3], names_of(i[4])]
                    for i in state.store
                ],
            ]
            for state, names in self._state_names().items()
            if len(state.store)
        ]
        body = {"time": self.time, "states": states}
        text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        return zlib.compress(text.encode("utf-8"), 1)

    def import_state(self, data: bytes) -> None:
        """Restore what ``export_state`` wrote, before any event is processed here.

        Instances of a state go to every state here that one of its names names (so a
        state merged there and separate here, or the reverse, gets them all); names of
        queries not subscribed here are skipped, and so are member streams of channels
        not declared here (an instance left without any is dropped).
        """
        if self.time is not None:
            raise ValueError("import_state needs an engine that has processed nothing")
        body = json.loads(zlib.decompress(data))
        by_name = {name: state for state, names in self._state_names().items() for name in names}
        touched: set[State] = set()
        for names, instances in body["states"]:
            targets = {by_name[name] for name in names if name in by_name}
            for state in targets:
                life = state.lifetime()
                for values, start, end, origin, *members in instances:
                    membership = ALL
                    if members:
                        membership = self.channels.mask(
                            s for s in members[0] if self.channels.key(s) is not None
                        )
                        if not membership:
                            continue
                    instance = (
                        tuple(sys.intern(v) if v.__class__ is str else v for v in values),
                        start,
                        end,
                        origin,
                        membership,
                    )
                    if state.store.add(instance) and life is not None:
                        heapq.heappush(
                            self._expiry, (start + life, next(self._sequence), state, instance)
                        )
                touched.add(state)
        for state in touched:
            self._update_activity(state)
        self.time = body["time"]

    # ------------------------------------------------------------------ inspection

    def instance_count(self) -> int:
        """How many instances the active states hold."""
        return sum(len(state.store) for state in self.network.states() if state.stream)

    def instances(self) -> dict[int, list[Any]]:
        """Each state's instances (state id -> ``(values, start, end, origin)``, without
        the channel membership), for traces and tests."""
        return {
            state.ident: sorted((i[:4] for i in state.store), key=repr)
            for state in self.network.states()
            if state.stream is not None and len(state.store)
        }
