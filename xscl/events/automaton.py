"""States and edges of Cayuga automata (thesis 3.3.2 and 4.3).

Every state other than an end state reads one input stream; an instance at a
state is a composite event stored with the state's schema. A state's
**filter predicate** (the NEXT/FOLD predicate, the negation of the thesis's
filter-edge label) decides whether an event *affects* an instance; an affected
instance is consumed at the end of the epoch, after it has traversed every
**rebind** (FOLD) and **forward** edge whose predicate holds (the thesis's
invariants make every such edge imply the filter, so the filter is checked
once, first). An end state stores nothing: reaching it is an output.

Labels (``Edge.label``, ``State.label``) are what prefix merging compares
(thesis 4.5.5, Definition 2): a state is identified by its entering edges,
its own filter and rebind labels and its input stream.

Channels (``xscl.events.channels``, thesis 5.4.4): an edge's ``members`` is the
union of the masks of the queries holding it, an output's ``members`` its
query's mask; an instance traverses an edge, or produces an output, only when its
membership meets them (``ALL`` = -1 outside channels).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from xscl.events import closures
from xscl.events.ir import IR, Parts, Pred, cached_hash, signature, split

__all__ = ["Edge", "EdgeLabel", "Output", "State"]


@cached_hash
@dataclass(frozen=True)
class EdgeLabel:
    """What an edge does: its predicate and schema map, and where the new start comes from.

    ``from_event``: the new instance starts at the event's start (edges of start
    states); otherwise at the source instance's start.
    """

    pred: Pred
    mapping: tuple[IR, ...]
    from_event: bool


@dataclass(eq=False)
class Output:
    """What reaching an end state produces: a result of ``query`` (None for an
    internal resubscription stream) and/or an event of ``stream``.

    Only instances whose first event ended after ``since`` (the subscription
    time) produce it; ``report`` is False for internal streams. ``names`` is
    the query's output schema; ``order`` picks its values in the order of the
    stream's schema when the two differ (several publishers of one stream).
    """

    query: str | None
    stream: str | None
    since: int
    report: bool = True
    names: tuple[str, ...] = ()
    order: tuple[int, ...] | None = None
    #: the query's channel mask: produced only for instances whose membership meets it
    members: int = -1


class Edge:
    """A forward or rebind edge, compiled.

    ``map`` computes the new instance's values. The tests each index needs
    (``check``: the whole predicate; ``static``/``dynamic``: its parts) are
    compiled on first use, so an engine builds only the closures its indices use.
    """

    __slots__ = (
        "_check",
        "_dynamic",
        "ident",
        "label",
        "map",
        "masks",
        "members",
        "parts",
        "since",
        "source",
        "target",
    )

    def __init__(
        self,
        ident: int,
        source: State,
        target: State,
        label: EdgeLabel,
        since: int,
        event_width: int,
    ) -> None:
        self.ident = ident
        self.source = source
        self.target = target
        self.label = label
        self.since = since  # only instances that started after this time traverse it
        self.parts: Parts = split(label.pred)
        self.map = closures.mapping(label.mapping, event_width)
        self._check: Any = _UNSET
        self._dynamic: Any = _UNSET
        #: the holders' channel masks (mask -> holders) and their union
        self.masks: dict[int, int] = {}
        self.members = 0

    def hold(self, mask: int) -> None:
        """One more holder, a query of channel mask ``mask``."""
        self.masks[mask] = self.masks.get(mask, 0) + 1
        self.members |= mask

    def release(self, mask: int) -> None:
        """A holder of channel mask ``mask`` is gone."""
        left = self.masks[mask] - 1
        if left:
            self.masks[mask] = left
            return
        del self.masks[mask]
        members = 0
        for held in self.masks:
            members |= held
        self.members = members

    @property
    def check(self) -> closures.Closure | None:
        """The whole predicate (None = TRUE)."""
        if self._check is _UNSET:
            self._check = closures.predicate(self.label.pred)
        return self._check  # type: ignore[no-any-return]

    @property
    def dynamic(self) -> closures.Closure | None:
        """The conjuncts that read the instance (None = TRUE)."""
        if self._dynamic is _UNSET:
            self._dynamic = closures.predicate(self.parts.dynamic)
        return self._dynamic  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"Edge({self.ident}: {self.source.ident} -> {self.target.ident})"


_UNSET: Any = object()


@dataclass(eq=False)
class State:
    """An automaton state; ``stream`` is None for end states (they read nothing)."""

    ident: int
    stream: str | None
    names: tuple[str, ...]  # the schema of its instances (of its outputs for an end state)
    filter: Pred = ()
    outputs: list[Output] = field(default_factory=list)
    rebind: Edge | None = None
    forwards: list[Edge] = field(default_factory=list)
    store: Any = None  # an InstanceStore (xscl.events.instances), set by the engine

    def __post_init__(self) -> None:
        self.filter_parts: Parts = split(self.filter)
        self._filter_static: Any = _UNSET
        self._filter_rest_static: Any = _UNSET
        self._lifetime: Any = _UNSET
        self.filter_signature = signature(self.filter_parts.static_eq)

    @property
    def filter_static(self) -> closures.Closure | None:
        """The filter's static conjuncts (None = TRUE), compiled on first use."""
        if self._filter_static is _UNSET:
            self._filter_static = closures.predicate(self.filter_parts.static)
        return self._filter_static  # type: ignore[no-any-return]

    @property
    def filter_rest_static(self) -> closures.Closure | None:
        """The filter's static conjuncts other than ``attr = constant`` (None = TRUE)."""
        if self._filter_rest_static is _UNSET:
            self._filter_rest_static = closures.predicate(self.filter_parts.static_rest)
        return self._filter_rest_static  # type: ignore[no-any-return]

    @property
    def edges(self) -> list[Edge]:
        """The rebind edge (if any) and the forward edges."""
        return ([self.rebind] if self.rebind else []) + self.forwards

    def lifetime(self) -> int | None:
        """Microseconds after its start beyond which no instance here can traverse an edge.

        None when some edge has no bound (thesis 4.4.5: such instances are kept).
        Cached; ``edges_changed`` forgets it.
        """
        if self._lifetime is _UNSET:
            self._lifetime = self._compute_lifetime()
        return self._lifetime  # type: ignore[no-any-return]

    def edges_changed(self) -> None:
        """An edge was added to or removed from this state."""
        self._lifetime = _UNSET

    def _compute_lifetime(self) -> int | None:
        edges = self.edges
        if not edges:
            return None
        own = self.filter_parts.dur_bound
        bounds = []
        for edge in edges:
            bound = edge.parts.dur_bound
            if own is not None:
                bound = own if bound is None else min(bound, own)
            if bound is None:
                return None
            bounds.append(bound)
        return max(bounds)

    def __repr__(self) -> str:
        return f"State({self.ident}, {self.stream})"
