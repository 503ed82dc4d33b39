"""The network of all subscribed automata: states, edges and who holds them (thesis 4.5.6).

Each edge also counts its holders' channel masks (``Edge.hold``, thesis 5.4.4), so
its ``members`` stay the union of the masks of the queries that hold it.

Queries are inserted by asking for states and edges; with ``MergedStates`` a
request for a state equal to an existing one returns it (the merged query DAG
of the thesis's State Machine Manager). Every request is recorded in the
subscription's ``Holding``; releasing a holding undoes it, and a state or
edge no subscription holds any more is removed with its instances and its
index entries ("only nodes and edges that are not shared with other
subscriptions are physically removed").
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field

from xscl.events.automaton import Edge, EdgeLabel, Output, State
from xscl.events.edge_index import EdgeIndex
from xscl.events.instances import InstanceStore
from xscl.events.ir import Parts, Pred
from xscl.events.sharing import StateSharing

__all__ = ["Holding", "Network"]


@dataclass
class Holding:
    """What one subscription holds in the network, in acquisition order."""

    states: list[State] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    #: the subscription's channel mask (``xscl.events.channels``), on every edge it holds
    mask: int = -1
    outputs: list[tuple[State, Output]] = field(default_factory=list)


class Network:
    """States and edges of every subscribed automaton, reference-counted."""

    def __init__(
        self,
        sharing: StateSharing,
        edges: EdgeIndex,
        store_for: Callable[[Parts], InstanceStore],
        schema_of: Callable[[str], tuple[str, ...]],
        on_removed: Callable[[State], None],
    ) -> None:
        self.sharing = sharing
        self.edge_index = edges
        self.store_for = store_for
        self.schema_of = schema_of
        self.on_removed = on_removed
        self.start_states: dict[str, State] = {}
        self._refs: dict[State | Edge, int] = {}
        self._keys: dict[State, Hashable] = {}
        self._edges: dict[tuple[int, int, EdgeLabel], Edge] = {}
        self._next_state = 0
        self._next_edge = 0

    # ------------------------------------------------------------------ building

    def start(self, stream: str) -> State:
        """The start state of ``stream`` (always active, holds no instance)."""
        state = self.start_states.get(stream)
        if state is None:
            state = self.start_states[stream] = self._new_state(stream, self.schema_of(stream))
        return state

    def _new_state(self, stream: str | None, names: tuple[str, ...], filter_: Pred = ()) -> State:
        state = State(self._next_state, stream, names, filter_)
        self._next_state += 1
        if stream is not None:
            state.store = self.store_for(state.filter_parts)
        return state

    def state(
        self,
        *,
        stream: str,
        names: tuple[str, ...],
        filter_: Pred,
        rebind: EdgeLabel | None,
        incoming: Iterable[tuple[State, EdgeLabel]],
        since: int,
        holding: Holding,
    ) -> State:
        """A NEXT (no ``rebind``) or FOLD state reading ``stream``, entered by ``incoming``."""
        incoming = list(incoming)
        key = (
            "state",
            frozenset((source.ident, label) for source, label in incoming),
            stream,
            filter_,
            rebind,
        )
        state = self._acquire_state(key, lambda: self._new_state(stream, names, filter_), holding)
        for source, label in incoming:
            self._edge(source, state, label, since, holding)
        if rebind is not None:
            self._edge(state, state, rebind, since, holding)
        return state

    def end(
        self,
        *,
        incoming: Iterable[tuple[State, EdgeLabel]],
        output: Output,
        names: tuple[str, ...],
        holding: Holding,
        since: int,
    ) -> State:
        """An end state entered by ``incoming`` that produces ``output``."""
        incoming = list(incoming)
        key = ("end", frozenset((source.ident, label) for source, label in incoming))
        state = self._acquire_state(key, lambda: self._new_state(None, names), holding)
        for source, label in incoming:
            self._edge(source, state, label, since, holding)
        state.outputs.append(output)
        holding.outputs.append((state, output))
        return state

    def _acquire_state(self, key: Hashable, make: Callable[[], State], holding: Holding) -> State:
        state = self.sharing.state(key, make)
        self._keys.setdefault(state, key)
        self._refs[state] = self._refs.get(state, 0) + 1
        holding.states.append(state)
        return state

    def _edge(
        self, source: State, target: State, label: EdgeLabel, since: int, holding: Holding
    ) -> Edge:
        key = (source.ident, target.ident, label)
        edge = self._edges.get(key)
        if edge is None:
            assert source.stream is not None
            width = len(self.schema_of(source.stream))
            edge = Edge(self._next_edge, source, target, label, since, width)
            self._next_edge += 1
            self._edges[key] = edge
            if source is target:
                source.rebind = edge
            else:
                source.forwards.append(edge)
            source.edges_changed()
            self.edge_index.add(edge)
        self._refs[edge] = self._refs.get(edge, 0) + 1
        edge.hold(holding.mask)
        holding.edges.append(edge)
        return edge

    # ------------------------------------------------------------------ removing

    def release(self, holding: Holding) -> None:
        """Undo a subscription's requests; remove what nobody holds any more."""
        for state, output in holding.outputs:
            state.outputs.remove(output)
        for edge in holding.edges:
            edge.release(holding.mask)
            if self._drop(edge):
                self.edge_index.remove(edge)
                del self._edges[(edge.source.ident, edge.target.ident, edge.label)]
                if edge.source.rebind is edge:
                    edge.source.rebind = None
                else:
                    edge.source.forwards.remove(edge)
                edge.source.edges_changed()
        for state in holding.states:
            if self._drop(state):
                self.sharing.forget(self._keys.pop(state), state)
                self.on_removed(state)

    def _drop(self, item: State | Edge) -> bool:
        refs = self._refs[item] - 1
        if refs:
            self._refs[item] = refs
            return False
        del self._refs[item]
        return True

    # ------------------------------------------------------------------ inspection

    def states(self) -> list[State]:
        """Every state held by some subscription (start states excluded), by id."""
        return sorted((s for s in self._refs if isinstance(s, State)), key=lambda s: s.ident)

    def holders(self, item: State | Edge) -> int:
        """How many requests of subscriptions hold ``item`` (queries sharing it)."""
        return self._refs.get(item, 0)

    def edge_count(self) -> int:
        """How many distinct edges the network has."""
        return len(self._edges)
