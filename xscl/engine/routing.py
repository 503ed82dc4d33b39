"""Stage 1 once per document, and where the document goes next (the Spark job's source tasks).

Per spool record, in its partition's offset order (``Router.route``):

1. Stage 1 (thesis 6.3) over every subscribed query's definitions, once: a document
   it rejects (malformed, too large, too deep, entity) is a dead letter;
2. lateness (docs/language.md): later than ``newest_before - allowed lateness`` is a
   dead letter with code ``XSCL-R008``, decided from the record alone, so it does not
   depend on the batching and nothing is dropped silently;
3. the **stateless** queries (one block, ``placements.STATELESS``) are matched right
   here: their results need no state and go straight to the results;
4. routing: for the **value** groups the document is encoded once with its string
   values as digests and without its XML (``groups.codec``: a group reads a matched
   document back from the spool) and sent to the group of each value it holds at an
   owner edge, stored there under those values (``homes``) and probing them
   (``probes``); for the **time**-placed joins (``{TRUE, w}``), the same way under the
   labels of its time buckets (``time_buckets``: stored under its own bucket's, probing
   the neighbours'); for the **keyed** chains, under the key label of each value it
   holds at a key class's node (``key_labels``); for the **composite** chains, under
   the hop label of each value it holds at a hop edge (a time hop: its time buckets'
   hop labels; ``groups.hop_chains``); to the **chain** group, with real values and its
   XML, when a chain-placed query reads its stream. A document with none of these goes
   nowhere. A composite event read from the published spool (``groups.composites``) is
   not evaluated: it goes to the group of each of its exits.

**Hot values**: a value the groups reported hot is spread over ``salts`` groups: a new
document is stored under it in the group of one salt (chosen by its key) and probes
the groups of all salts, salt 0 included, where the value's documents were stored
before it turned hot; each pair is still found in exactly one group: the one storing
its older document. A busy time bucket's label is spread the same way. A hot key label
is spread the other way round, "store everywhere, probe one" (a keyed match of three
or more documents needs them all in one group): a new document is stored under the
value's spread label in the group of every salt and probes the key label in salt 0's
group and the spread label in its own salt's (``key_labels``, ``_spread_key``;
``groups.keyed_chains`` says why each match is found once). A value once hot stays hot
(the set only grows), so every stored document stays reachable.

Where it runs: in the Spark job's source tasks (``xscl.spark_plugin.job.routed_source``),
once per record; ``RouteShape`` is built on the driver and pickled (plain values).
"""

from __future__ import annotations

import json
import zlib
from collections import deque
from dataclasses import dataclass, field
from functools import cached_property

from xscl.connectors.dead_letters import DeadLetter
from xscl.engine.groups.codec import digest_rows, encode
from xscl.engine.groups.composites import COMPOSITE_STREAM, Composite, doc_label, event_label
from xscl.engine.groups.keys import PUBLISHED_BASE, PUBLISHED_PER_RECORD
from xscl.engine.groups.routed import CHAIN_GROUP, SEQ_STRIDE
from xscl.engine.key_labels import key_label, spread_label
from xscl.engine.matcher import match_document, no_slice, no_stored
from xscl.engine.output import ResultRecord
from xscl.engine.placements import (
    COMPOSITE,
    KEYED,
    STATELESS,
    TIME,
    VALUE,
    hop_links,
    key_class,
    owner_edge,
)
from xscl.engine.records import RecordBuilder
from xscl.engine.state import DocState
from xscl.engine.subscriptions import Subscriptions
from xscl.engine.time_buckets import LABEL_PREFIX, home_label, is_label, probe_labels, row_class
from xscl.xpath import DocumentRows, Stage1Error

#: Default number of groups a hot value's documents are spread over.
DEFAULT_HOT_SALTS = 8


def value_bucket(value: str, buckets: int) -> int:
    """The bucket of a string value (stable across processes and runs).

    >>> value_bucket("Danny Ayers", 256) == value_bucket("Danny Ayers", 256)
    True
    """
    return zlib.crc32(value.encode("utf-8")) % buckets


def salted_bucket(value: str, salt: int, buckets: int) -> int:
    """The bucket of ``value`` under ``salt`` (salt 0 is the value's own bucket).

    >>> salted_bucket("News", 0, 256) == value_bucket("News", 256)
    True
    """
    if salt == 0:
        return value_bucket(value, buckets)
    return zlib.crc32(f"{value}\x00{salt}".encode()) % buckets


def salt_of(stream: str, docid: str, salts: int) -> int:
    """The salt a document of a hot value is stored under (stable across runs)."""
    return zlib.crc32(f"{stream}\x00{docid}".encode()) % salts


def dead_line(offset: int, stream: str, docid: str, reason: str, code: str) -> bytes:
    """One dead letter of the job as a JSON line: the spool record's ``offset``, then the
    one dead-letter record (``connectors.dead_letters``; where it came from is the spool).

    >>> dead_line(7, "S", "d", "late", "XSCL-R008")[:40]
    b'{"offset":7,"source":null,"line":null,"s'
    """
    record = {"offset": offset, **DeadLetter(None, None, stream, docid, reason, code).to_dict()}
    return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


@dataclass(frozen=True)
class RouteShape:
    """How documents are spread: fixed at the job's first start (built on the driver)."""

    #: the state key of each value bucket (spread evenly over the state partitions)
    group_keys: tuple[int, ...]
    salts: int = 1
    allowed_lateness: int | None = None

    @property
    def buckets(self) -> int:
        return len(self.group_keys)


@dataclass(frozen=True)
class RoutingTable:
    """What routing needs of the subscriptions (computed once per registry version)."""

    #: var ids at an owner edge of a value-placed query: the values documents are
    #: stored under and probe by
    owner_vars: frozenset[int]
    #: streams some chain-placed query reads: their documents go to the chain group
    chain_streams: frozenset[str]
    #: whether some query is stateless (matched where Stage 1 runs)
    stateless: bool
    #: (var id, class) of each block's top node of a time-placed query: a document
    #: binding the var id is stored and probes under that class's time labels
    time_roots: frozenset[tuple[int, int]] = frozenset()
    #: var ids of the key class of a keyed query: a document is stored under, and
    #: probes, the key label of each value it holds at one (``key_labels``)
    key_vars: frozenset[int] = frozenset()
    #: whether a hot key label is spread: only when every keyed query's windows are
    #: finite (``groups.keyed_chains``: salt 0's group then stops its extra pass)
    spread_keys: bool = True
    #: var ids at a hop edge's end of a composite-placed chain (both ends of hop 1, the
    #: later end of the others): a document is stored under, and probes, the hop label
    #: of each value it holds at one (``groups.hop_chains``)
    hop_vars: frozenset[int] = frozenset()
    #: (var id, class) of the block tops of a composite chain's time hops (both blocks
    #: of hop 1): a document binding the var id is stored and probes under that class's
    #: time labels, as hop labels
    hop_roots: frozenset[tuple[int, int]] = frozenset()

    @classmethod
    def of(cls, subs: Subscriptions) -> RoutingTable:
        owners: set[int] = set()
        for row in subs.rows(VALUE):
            edge = owner_edge(row.template)
            assert edge is not None  # value-placed templates have one
            owners.update((row.var_ids[edge[0]], row.var_ids[edge[1]]))
        roots = {
            (row.var_ids[meta], row_class(row))
            for row in subs.rows(TIME)
            for meta, parent in enumerate(row.template.parents)
            if parent == -1
        }
        streams = frozenset(stream for read in subs.chain_streams.values() for stream in read)
        keyed = list(subs.rows(KEYED))
        keys = {row.var_ids[meta] for row in keyed for meta in key_class(row.template)}
        bounded = all(w is not None for row in keyed for w in row.windows)
        stateless = any(True for _ in subs.plans(STATELESS))
        hops: set[int] = set()
        hop_roots: set[tuple[int, int]] = set()
        for row in subs.rows(COMPOSITE):
            template = row.template
            tops = [m for m, parent in enumerate(template.parents) if parent == -1]
            for hop, edge in enumerate(hop_links(template), start=1):
                if edge is not None:  # both ends of hop 1, the later end of the others
                    hops.add(row.var_ids[edge[1]])
                    if hop == 1:
                        hops.add(row.var_ids[edge[0]])
                    continue
                width = subs.hop_plans[template].hop_class(row.qid, hop)
                for block in (0, 1) if hop == 1 else (hop,):
                    hop_roots.add((row.var_ids[tops[block]], width))
        return cls(
            frozenset(owners),
            streams,
            stateless,
            frozenset(roots),
            frozenset(keys),
            bounded,
            frozenset(hops),
            frozenset(hop_roots),
        )

    @cached_property
    def time_classes(self) -> dict[int, tuple[int, ...]]:
        """The time classes of each var id at a time-placed block's top (computed once:
        a Python worker forked from the daemon that computed it reads it, never rebuilds
        it, so it does not copy the pages of every root, ``JobQueries.routing``)."""
        return _classes(self.time_roots)

    @cached_property
    def hop_classes(self) -> dict[int, tuple[int, ...]]:
        """The hop classes of each var id at a composite chain's time hop (once, as
        ``time_classes``)."""
        return _classes(self.hop_roots)


def _classes(roots: frozenset[tuple[int, int]]) -> dict[int, tuple[int, ...]]:
    """Var id -> its time classes, from (var id, class) pairs."""
    out: dict[int, set[int]] = {}
    for var, width in roots:
        out.setdefault(var, set()).add(width)
    return {var: tuple(sorted(widths)) for var, widths in out.items()}


@dataclass(frozen=True)
class GroupRow:
    """One routed document for one group (the job's routed row, less its batch fields)."""

    group: int
    data: bytes
    homes: tuple[str, ...] = ()
    probes: tuple[str, ...] = ()
    #: a published result's own sequence number (None: the spool record's, ``Routed.seq``)
    seq: int | None = None


@dataclass
class Routed:
    """Where one spool record goes (see the module docstring)."""

    seq: int
    newest: int
    #: its dead-letter line when it went to the dead letters
    dead: bytes | None = None
    #: results of the stateless queries
    records: list[ResultRecord] = field(default_factory=list)
    rows: list[GroupRow] = field(default_factory=list)


class Router:
    """Routes records of one registry version (see the module docstring)."""

    def __init__(
        self,
        shape: RouteShape,
        subscriptions: Subscriptions,
        table: RoutingTable,
        records: RecordBuilder,
        hot: frozenset[str] = frozenset(),
    ) -> None:
        self.shape = shape
        self.subscriptions = subscriptions
        self.table = table
        self.records = records
        self.hot = hot
        self.time_classes = table.time_classes
        self.hop_classes = table.hop_classes

    def route(
        self, offset: int, stream: str, docid: str, ts: int, xml: str, newest_before: int | None
    ) -> Routed:
        """Where spool record ``offset`` goes (``newest_before``: the spool's newest ts
        before it, None for the first record)."""
        subs = self.subscriptions
        routed = Routed(
            offset * SEQ_STRIDE + 1, ts if newest_before is None else max(ts, newest_before)
        )
        if stream == COMPOSITE_STREAM and offset >= PUBLISHED_BASE:  # only the groups write it
            self._composite(routed, xml)
            return routed
        try:
            rows = subs.stage1.evaluate_rows(stream, docid, ts, xml)
        except Stage1Error as exc:
            routed.dead = dead_line(offset, stream, docid, exc.message, exc.code)
            return routed
        lateness = self.shape.allowed_lateness
        if lateness is not None and newest_before is not None and ts < newest_before - lateness:
            routed.dead = dead_line(offset, stream, docid, "late", "XSCL-R008")
            return routed
        # a stateless query's results it PUBLISHes are documents of their stream, fed back
        # here, numbered after their cause (docid = result id, ts = the result's end)
        queue = deque([(stream, docid, ts, xml, routed.seq, rows)])
        number = routed.seq
        while queue:
            s, d, t, x, seq, witness = queue.popleft()
            for record in self._stateless(s, d, t, x, seq, witness):
                routed.records.append(record)
                target = subs.publish.get(record.query)
                if target is None:
                    continue
                try:
                    published = subs.stage1.evaluate_rows(
                        target, record.result_id, record.end_micros, record.xml
                    )
                except Stage1Error:  # a result's XML is the engine's own: this cannot happen
                    continue
                number += 1
                if number - routed.seq >= PUBLISHED_PER_RECORD - 1:  # 2^19 results of one record
                    raise RuntimeError(f"spool record {offset} published too many results")
                queue.append(
                    (target, record.result_id, record.end_micros, record.xml, number, published)
                )
            self._rows(routed, s, d, t, x, seq, witness)
        return routed

    def _composite(self, routed: Routed, text: str) -> None:
        """A composite event's rows: to the group of each value its next hop can join it
        by, stored there under its event label (``groups.hop_chains``)."""
        event = Composite.decode(text)
        if event.template not in self.subscriptions.hop_plans:
            return  # its chains were unsubscribed
        key = event.event_id()
        homes: dict[int, list[str]] = {}
        probes: dict[int, list[str]] = {}
        # placed by the hop's document label (its group, its salts when hot), stored and
        # probing under the event label
        for value in event.exits:
            if not is_label(value):
                self._spread(doc_label(value), COMPOSITE_STREAM, key, homes, probes, home=True,
                             label=event_label(value))  # fmt: skip
                continue
            width = int(value.removeprefix(LABEL_PREFIX))  # a time hop's class
            home = home_label(width, event.end)
            for time_label in probe_labels(width, event.end):
                self._spread(doc_label(time_label), COMPOSITE_STREAM, key, homes, probes,
                             home=time_label == home, label=event_label(time_label))  # fmt: skip
        data = text.encode("ascii")
        for bucket in sorted(probes):
            found = tuple(dict.fromkeys(probes[bucket]))
            group = self.shape.group_keys[bucket]
            routed.rows.append(GroupRow(group, data, tuple(homes.get(bucket, ())), found))

    def _stateless(
        self, stream: str, docid: str, ts: int, xml: str, seq: int, rows: DocumentRows
    ) -> list[ResultRecord]:
        """The stateless queries' results of one document."""
        subs = self.subscriptions
        if not self.table.stateless:
            return []
        doc = DocState.from_rows(stream, docid, ts, xml, seq, rows)
        self.records.forget_tuples()
        return [
            self.records.record(match)
            for plan in subs.plans(STATELESS)
            for match in match_document(plan, doc, no_slice, no_stored)
            if subs.sees(match)
        ]

    def _rows(
        self,
        routed: Routed,
        stream: str,
        docid: str,
        ts: int,
        xml: str,
        seq: int,
        rows: DocumentRows,
    ) -> None:
        """The group rows of one document: the spool record's own, or a result it
        PUBLISHed (``seq`` after the record's; its XML then travels with it, as the
        spool does not hold it)."""
        table = self.table
        own = None if seq == routed.seq else seq
        if stream in table.chain_streams:
            routed.rows.append(
                GroupRow(CHAIN_GROUP, encode(stream, docid, ts, xml, seq, rows), seq=own)
            )
        classes = self.time_classes
        widths = (
            {width for var, _node in rows.matches for width in classes.get(var, ())}
            if classes
            else set()
        )
        hop_classes = self.hop_classes
        hop_widths = (
            {width for var, _node in rows.matches for width in hop_classes.get(var, ())}
            if hop_classes
            else set()
        )
        if not (table.owner_vars or widths or table.key_vars or table.hop_vars or hop_widths):
            return
        digested = digest_rows(rows)  # the value groups join on digests (``codec``)
        values = dict(digested.values)
        homes: dict[int, list[str]] = {}
        probes: dict[int, list[str]] = {}
        routed_values: set[str] = set()
        for var, node in digested.value_nodes:
            value = values[node]
            if var not in table.owner_vars or not value or value in routed_values:
                continue
            routed_values.add(value)
            self._spread(value, stream, docid, homes, probes, home=True)
        for var, node in digested.value_nodes:
            value = values[node]
            if var not in table.key_vars or not value:
                continue
            label = key_label(value)
            if label not in routed_values:
                routed_values.add(label)
                self._spread_key(label, value, stream, docid, homes, probes)
        for var, node in digested.value_nodes:
            value = values[node]
            if var not in table.hop_vars or not value or doc_label(value) in routed_values:
                continue
            routed_values.add(doc_label(value))  # a composite chain's hop label
            self._spread(doc_label(value), stream, docid, homes, probes, home=True)
        for width in sorted(hop_widths):
            home = home_label(width, ts)
            for label in probe_labels(width, ts):
                self._spread(doc_label(label), stream, docid, homes, probes, home=label == home)
        for width in sorted(widths):
            home = home_label(width, ts)
            for label in probe_labels(width, ts):
                self._spread(label, stream, docid, homes, probes, home=label == home)
        if probes:
            # XML from the spool (``exact``), but a published result's travels with it
            data = encode(stream, docid, ts, "" if own is None else xml, seq, digested)
            for bucket in sorted(probes.keys() | homes.keys()):  # a hot key: homes only
                routed.rows.append(
                    GroupRow(
                        self.shape.group_keys[bucket],
                        data,
                        tuple(dict.fromkeys(homes.get(bucket, ()))),
                        tuple(dict.fromkeys(probes.get(bucket, ()))),
                        own,
                    )
                )

    def _spread_key(
        self,
        label: str,
        value: str,
        stream: str,
        docid: str,
        homes: dict[int, list[str]],
        probes: dict[int, list[str]],
    ) -> None:
        """Add a key label: stored under and probed in its own bucket; for a hot one,
        stored under the value's spread label in every salt's bucket, probing the label
        in salt 0's and the spread label in the document's own salt's (``key_labels``)."""
        shape = self.shape
        zero = value_bucket(label, shape.buckets)
        probes.setdefault(zero, []).append(label)
        if label not in self.hot or not self.table.spread_keys:
            homes.setdefault(zero, []).append(label)
            return
        spread = spread_label(value)
        for salt in range(shape.salts):
            homes.setdefault(salted_bucket(label, salt, shape.buckets), []).append(spread)
        own = salted_bucket(label, salt_of(stream, docid, shape.salts), shape.buckets)
        probes.setdefault(own, []).append(spread)

    def _spread(
        self,
        value: str,
        stream: str,
        docid: str,
        homes: dict[int, list[str]],
        probes: dict[int, list[str]],
        *,
        home: bool,
        label: str | None = None,
    ) -> None:
        """Add a value (or time label, or a composite chain's hop label) to the buckets
        the document is stored under (``home``) and probes: its own bucket, or for a hot
        one, one salt's bucket to be stored in and every salt's to probe. ``label``: what
        it is stored and probes under there, when not ``value`` itself (a composite
        event's event label, placed by its document label)."""
        shape = self.shape
        label = value if label is None else label
        if value in self.hot:
            if home:
                salt = salt_of(stream, docid, shape.salts)
                homes.setdefault(salted_bucket(value, salt, shape.buckets), []).append(label)
            for other in range(shape.salts):
                probes.setdefault(salted_bucket(value, other, shape.buckets), []).append(label)
        else:
            bucket = value_bucket(value, shape.buckets)
            if home:
                homes.setdefault(bucket, []).append(label)
            probes.setdefault(bucket, []).append(label)
