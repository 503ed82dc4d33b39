"""The subscriptions in effect at one registry version, compiled for executor tasks.

A micro-batch is planned with the registry version in effect at its first spool
offset (``spool_source``); every task of it (Stage 1 and the join groups) works
with ``JobQueries`` of that version, which each Python worker builds once from the
registry folder on the shared home and then extends event by event, so
subscriptions stay data: a new one needs no new Spark plan and no restart.

Each query goes to one of two engines (``xscl.engine.LocalEngine``):

* ``value``: two-block templates with a value join between the blocks, whose
  streams no subscribed query publishes and which publish nothing. They are
  evaluated in the value-keyed groups (``groups.ValueGroup``); Stage 1 runs with
  ``value.stage1``, whose variable ids the witness rows carry.
* ``chain``: everything else (chains of three or more blocks, joins without a
  value condition, PUBLISH and the queries reading published streams). They are
  evaluated in one group (``groups.ChainGroup``), which re-runs Stage 1 with its
  own engine and feeds published results back, as ``xscl run`` does.

A query's ``since`` is the first document sequence number it may match: the spool
offset its event took effect at times ``SEQ_STRIDE`` (docs/language.md: a
subscription matches documents that arrive after it takes effect). A query whose
engine changes when another query starts publishing into its stream is treated as
subscribed again at that event.

A subscribe event's queries come compiled (normal form, template assignment) from
the compiled table when the event has been compiled (``xscl.service.compiled``;
the compile job at ``xscl serve``'s start), else from their texts; both give equal
engines, var ids included. From the table a worker skips parsing, normalising and
assigning templates, most of registering (docs/benchmarks.md, "Registration").

Where it runs: ``queries_at`` on executors (in Stage 1 and join-group tasks), once
per Python worker and registry version; nothing here is pickled.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from xscl.engine import LocalEngine
from xscl.service.compiled.sources import EventCompiler, FromTexts, compiler_for
from xscl.service.compiled.table import CompiledQuery
from xscl.service.subscriptions import SubscriptionLog, apply_event
from xscl.service.worker_heap import settled, unsettled
from xscl.templates.canonical import Template
from xscl.templates.shapes import ShapeMemo

#: Documents are numbered ``offset * SEQ_STRIDE + k``: k = 1 for the spool record,
#: 2, 3, ... for the results it publishes (in the chain group).
SEQ_STRIDE = 1 << 20


def owner_edge(template: Template) -> tuple[int, int] | None:
    """The value edge whose value places a two-block match (None: no edge joins the blocks).

    >>> from xscl.templates.canonical import Template
    >>> owner_edge(Template(("JOIN",), (0, 0, 1, 1), (-1, 0, -1, 2), (True, False, True, False),
    ...                     ((1, 3),)))
    (1, 3)
    """
    if template.block_count != 2:
        return None
    for a, b in template.value_edges:
        if template.blocks[a] != template.blocks[b]:
            return (a, b)
    return None


@dataclass
class JobQueries:
    """The subscriptions of one registry version (see the module docstring)."""

    version: int = 0
    #: query id -> the query compiled (normal form, template assignment)
    queries: dict[str, CompiledQuery] = field(default_factory=dict)
    shapes: ShapeMemo = field(default_factory=ShapeMemo)
    value: LocalEngine = field(default_factory=LocalEngine)
    chain: LocalEngine = field(default_factory=LocalEngine)
    #: query id -> "value" | "chain"
    engine_of: dict[str, str] = field(default_factory=dict)
    #: query id -> the event it was (last) added at: its ``since`` is that event's offset
    added_at: dict[str, int] = field(default_factory=dict)
    #: ``routing()`` of this version, None until asked (an event clears it)
    _routing: tuple[frozenset[int], frozenset[str]] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.value.shapes = self.shapes
        self.chain.shapes = self.shapes

    # ------------------------------------------------------------- what tasks ask
    def routing(self) -> tuple[frozenset[int], frozenset[str]]:
        """``(owner_vars(), chain_streams())``, computed once per version (Stage 1 tasks
        ask for every document)."""
        if self._routing is None:
            self._routing = (self.owner_vars(), self.chain_streams())
        return self._routing

    def owner_vars(self) -> frozenset[int]:
        """Value-engine var ids at an owner edge of some query: the values a document is
        routed by (a match is placed by its owner edge's value)."""
        out: set[int] = set()
        for table in self.value.registry.tables():
            edge = owner_edge(table.template)
            if edge is None:  # pragma: no cover - such queries go to the chain engine
                continue
            for row in table.rows.values():
                out.add(row.var_ids[edge[0]])
                out.add(row.var_ids[edge[1]])
        return frozenset(out)

    def chain_streams(self) -> frozenset[str]:
        """Streams some chain-engine query reads: their documents go to the chain group."""
        return frozenset(
            block.stream
            for qid, kind in self.engine_of.items()
            if kind == "chain"
            for block in self.chain.normal[qid].blocks
        )

    # ------------------------------------------------------------------ building
    def apply(
        self, version: int, log: SubscriptionLog, offset: int, compiler: EventCompiler
    ) -> None:
        """Apply registry event ``version``, which took effect at spool ``offset``; a
        subscribe event's queries come compiled from ``compiler``."""
        before = dict(self.queries)
        apply_event(self.queries, log.event(version), compiler.compiled)
        self._routing = None
        since = offset * SEQ_STRIDE
        for qid in before.keys() - self.queries.keys():
            self._remove(qid)
        changed = {q for q, c in self.queries.items() if before.get(q) is not c}
        published = {c.query.publish for c in self.queries.values() if c.query.publish is not None}
        for qid, compiled in self.queries.items():
            kind = self._kind(compiled, published)
            if qid in changed or self.engine_of.get(qid) != kind:
                self._remove(qid)
                self._add(compiled, kind, since)
                self.added_at[qid] = version
        self.version = version

    def rebase(self, offsets: dict[int, int]) -> None:
        """Take each query's ``since`` from ``offsets`` (event -> offset it took effect at).

        Only ``since`` depends on where events took effect, so a set built with other
        offsets (a standby's warm-up, ``pair.warm``) serves once rebased.
        """
        for qid, event in self.added_at.items():
            kind = self.engine_of[qid]
            engine = self.value if kind == "value" else self.chain
            engine.set_since(qid, offsets[event] * SEQ_STRIDE)

    @staticmethod
    def _kind(compiled: CompiledQuery, published: set[str]) -> str:
        query = compiled.query
        if query.publish is not None or any(b.stream in published for b in query.blocks):
            return "chain"
        return "value" if owner_edge(compiled.assignment.template) is not None else "chain"

    def _add(self, compiled: CompiledQuery, kind: str, since: int) -> None:
        engine = self.value if kind == "value" else self.chain
        engine.add_query(compiled.normal, assignment=compiled.assignment)
        engine.set_since(compiled.qid, since)
        self.engine_of[compiled.qid] = kind

    def _remove(self, qid: str) -> None:
        self.added_at.pop(qid, None)
        kind = self.engine_of.pop(qid, None)
        if kind is not None:
            (self.value if kind == "value" else self.chain).remove_query(qid)


#: Per Python worker: the newest ``JobQueries`` built, by registry and applied folder.
_built: dict[tuple[str, str | None], JobQueries] = {}


def queries_at(registry: str, version: int, applied: str | None = None) -> JobQueries:
    """The subscriptions at registry ``version`` (executor; cached per worker).

    Extends the cached set event by event when it is older; rebuilds from the first
    event when it is newer (a replay after a restart asks for an earlier version).
    ``applied``: where the job records the offsets events took effect at (its epoch).
    """
    cached = _built.get((registry, applied))
    if cached is not None and cached.version == version:
        return cached
    unsettled()
    log = SubscriptionLog(Path(registry), applied)
    recorded = log.applied()
    if cached is None:
        cached = _adopt(registry, version, recorded)
    if cached is None or cached.version > version:
        cached = JobQueries()
    texts = FromTexts(cached.shapes)
    for event in range(cached.version + 1, version + 1):
        offset = recorded.get(event)
        if offset is None:
            raise RuntimeError(
                f"subscription event {event} of {registry} has no recorded offset: the "
                "driver records it before the micro-batch that applies it"
            )
        cached.apply(event, log, offset, compiler_for(registry, event, texts))
    cached.version = version
    _built[(registry, applied)] = cached
    settled()
    return cached


def _adopt(registry: str, version: int, offsets: dict[int, int]) -> JobQueries | None:
    """A set this worker built for ``registry`` with another applied folder (a standby's
    warm-up), rebased to ``offsets``; None if there is none it can serve from."""
    for key, built in list(_built.items()):
        if key[0] == registry and built.version <= version:
            if any(event not in offsets for event in built.added_at.values()):
                continue
            del _built[key]
            built.rebase(offsets)
            return built
    return None
