"""A running CEL job's queries and partition classes after each registry event (pure).

A job's CEL queries change by subscribe and unsubscribe events
(``service.cel_subscriptions``, docs/cel.md 10.7). Its groups are keyed
``NAME:bucket`` by **named classes** (``LiveClass``): a class keeps its name and
its keys for as long as it has queries, because its instances live in the
buckets its keys chose. So:

* the first event's queries form classes as a whole file does
  (``partition_classes``); a later event's queries that link to no subscribed
  query form new classes the same way, named ``<event>.<n>``: new group keys,
  which Spark's state store takes like any new key;
* new queries that link (by resubscription) to the queries of one subscribed
  class join it: always when it is global, else when they can be keyed with
  its keys (``joined_keys``); linking to two classes, or to a keyed class
  they cannot agree with, rejects them (``CEL-S005``), changing nothing;
* an unsubscribe removes queries from their class, which keeps its name and
  keys (each remaining query is still keyed by them); a class left without
  queries is gone (its groups drop their state).

>>> from xscl.lang.cel.parser import parse_file
>>> live = SubscribedCel.empty({})
>>> live, errors = live.subscribed(1, parse_file('''DECLARE STREAM S(a, b);
... x: SELECT a, b FROM S NEXT{$2.a = $1.a} S PUBLISH P;
... y: FROM S NEXT S'''), "one.cel")
>>> [(c.name, c.key_class.queries, c.key_class.keys) for c in live.classes]
[('1.0', ('x',), {'P': 'a', 'S': 'a'}), ('1.1', ('y',), None)]
>>> live, errors = live.subscribed(2, parse_file('''z: FROM P NEXT{$2.a = $1.a} S;
... w: FROM FILTER{b = 1}(S)'''), "two.cel")
>>> [(c.name, c.key_class.queries) for c in live.classes]
[('1.0', ('x', 'z')), ('1.1', ('y',)), ('2.0', ('w',))]
>>> [(c.name, c.key_class.queries) for c in live.unsubscribed(["y"]).classes]
[('1.0', ('x', 'z')), ('2.0', ('w',))]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from xscl.errors import SubscriptionError, XsclError
from xscl.events.partitioning import (
    KeyClass,
    joined_keys,
    linked_queries,
    partition_classes,
)
from xscl.lang.cel.ast import Query
from xscl.lang.cel.parser import ParseResult
from xscl.lang.cel.validation import Program, published_subqueries, stream_refs, validate

__all__ = ["LiveClass", "SubscribedCel"]

Schema = tuple[str, ...]


@dataclass(frozen=True)
class LiveClass:
    """A partition class with the name its group keys carry (``NAME:bucket``)."""

    name: str
    key_class: KeyClass

    def group_keys(self, buckets: int) -> list[str]:
        """``NAME:bucket`` of each of its groups (one for a global class)."""
        count = buckets if self.key_class.keys is not None else 1
        return [f"{self.name}:{bucket}" for bucket in range(count)]


@dataclass(frozen=True)
class SubscribedCel:
    """The subscribed program (``streams``: the catalog and every declared stream) and
    its named classes, in subscription order."""

    program: Program
    classes: tuple[LiveClass, ...]
    #: each query's subscribe event (a query unsubscribed and subscribed again has its
    #: last one: the groups that ran it start it again)
    events: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def empty(cls, catalog: Mapping[str, Sequence[str]]) -> SubscribedCel:
        """Nothing subscribed; ``catalog``: the XSCL streams' schemas."""
        streams = {name: tuple(attrs) for name, attrs in catalog.items()}
        return cls(Program(streams, ()), ())

    def ids(self) -> list[str]:
        return [q.qid for q in self.program.queries]

    def class_of(self, qid: str) -> LiveClass | None:
        return next((c for c in self.classes if qid in c.key_class.queries), None)

    def named(self, name: str) -> LiveClass | None:
        return next((c for c in self.classes if c.name == name), None)

    def class_program(self, live_class: LiveClass) -> Program:
        """The part of the program one class runs (its queries in subscription order)."""
        queries = tuple(q for q in self.program.queries if q.qid in live_class.key_class.queries)
        return Program(self.program.streams, queries, self.program.published)

    # ------------------------------------------------------------------ subscribe

    def subscribed(
        self, event: int, parsed: ParseResult, source: str, text: str | None = None
    ) -> tuple[SubscribedCel, list[XsclError]]:
        """After subscribing the valid queries of a parsed file as registry ``event``: the
        new state and every rejected query's error (syntax, validation, ``CEL-S001``
        taken id, ``CEL-S002`` stream redeclared otherwise, ``CEL-S005`` class link).

        The file may declare the streams it reads again, with the same attributes.
        """
        errors: list[XsclError] = list(parsed.errors)
        known = {**self.program.streams, **self.program.published}
        decls = []
        for decl in parsed.streams:
            schema = known.get(decl.name)
            if schema is None:
                decls.append(decl)
            elif set(schema) != set(decl.attrs):
                errors.append(
                    SubscriptionError.from_code(
                        "CEL-S002",
                        f"stream {decl.name!r} has attributes ({', '.join(schema)}) in the "
                        f"job, not ({', '.join(decl.attrs)})",
                        source=source,
                        **_where(text, decl.span),
                    )
                )
        taken = set(self.ids())
        queries = []
        for query in parsed.queries:
            if query.qid in taken:
                errors.append(
                    SubscriptionError.from_code(
                        "CEL-S001",
                        f"query id {query.qid!r} is already subscribed (unsubscribe it "
                        "first, or label the query with a new id: 'ID: query;')",
                        qid=query.qid,
                        source=source,
                        **_where(text, query.span),
                    )
                )
            else:
                queries.append(query)
        program, invalid = validate(
            replace(parsed, streams=tuple(decls), queries=tuple(queries)),
            catalog=known,
            text=text,
            source=source,
        )
        errors.extend(invalid)
        new = list(program.queries)
        published = {**self.program.published, **program.published}
        streams = {
            **self.program.streams,
            **{s: a for s, a in program.streams.items() if s not in self.program.published},
        }
        while True:
            combined = Program(streams, (*self.program.queries, *new), published)
            refused = self._refused(combined, {q.qid for q in new})
            if not refused:
                break
            refused.update(_readers_of_refused(new, set(refused), self.program.published))
            for qid, why in refused.items():
                query = next(q for q in new if q.qid == qid)
                errors.append(
                    SubscriptionError.from_code(
                        "CEL-S005", why, qid=qid, source=source, **_where(text, query.span)
                    )
                )
            new = [q for q in new if q.qid not in refused]
        if not new:
            return self, errors
        new_published = {
            str(sub.publish): published[str(sub.publish)]
            for q in new
            for sub in published_subqueries(q)
        }
        combined = Program(
            streams, (*self.program.queries, *new), {**self.program.published, **new_published}
        )
        classes = self._classes(combined, event, {q.qid for q in new})
        events = {**self.events, **{q.qid: event for q in new}}
        return SubscribedCel(combined, classes, events), errors

    def _refused(self, combined: Program, new: set[str]) -> dict[str, str]:
        """Each new query that cannot join the classes, with why (``CEL-S005``)."""
        refused: dict[str, str] = {}
        for component in linked_queries(combined):
            added = [q for q in component if q.qid in new]
            if not added:
                continue
            names = sorted({c.name for q in component if (c := self.class_of(q.qid))})
            why = None
            if len(names) > 1:
                why = f"it links the running classes {', '.join(names)} (their keys differ)"
            elif names:
                joined = self.named(names[0])
                assert joined is not None
                keys = joined.key_class.keys
                if keys is not None and joined_keys(combined, added, keys) is None:
                    shown = ", ".join(f"{s}.{a}" for s, a in keys.items())
                    why = (
                        f"it reads streams of the running class {names[0]}, partitioned by "
                        f"{shown}, and cannot be partitioned the same way"
                    )
            if why is not None:
                for query in added:
                    refused[query.qid] = (
                        f"query {query.qid!r} cannot join the running job's groups: {why}; "
                        "subscribe it with the queries it links to from a new start, or "
                        "without the link"
                    )
        return refused

    def _classes(self, combined: Program, event: int, new: set[str]) -> tuple[LiveClass, ...]:
        """The classes after ``new`` (known to fit, ``_refused``) joined ``combined``."""
        classes = {c.name: c for c in self.classes}
        fresh: list[LiveClass] = []
        for component in linked_queries(combined):
            added = [q for q in component if q.qid in new]
            if not added:
                continue
            old = next((c for q in component if (c := self.class_of(q.qid))), None)
            if old is None:
                alone = Program(combined.streams, tuple(component), combined.published)
                for key_class in partition_classes(alone):
                    fresh.append(LiveClass(f"{event}.{len(fresh)}", key_class))
                continue
            keys = old.key_class.keys
            classes[old.name] = LiveClass(
                old.name,
                KeyClass(
                    (*old.key_class.queries, *(q.qid for q in added)),
                    old.key_class.reads | _reads(added),
                    None if keys is None else joined_keys(combined, added, keys),
                ),
            )
        return (*classes.values(), *fresh)

    # ------------------------------------------------------------------ unsubscribe

    def unsubscribe_problem(self, ids: Iterable[str]) -> SubscriptionError | None:
        """Why ``ids`` cannot be unsubscribed (``CEL-S003`` unknown, ``CEL-S004`` a
        PUBLISHed stream a remaining query reads); None if they can."""
        removing = set(ids)
        unknown = sorted(removing - set(self.ids()))
        if unknown:
            return SubscriptionError.from_code("CEL-S003", f"not subscribed: {', '.join(unknown)}")
        remaining = [q for q in self.program.queries if q.qid not in removing]
        still = {str(s.publish) for q in remaining for s in published_subqueries(q)}
        for query in self.program.queries:
            if query.qid not in removing:
                continue
            for sub in published_subqueries(query):
                stream = str(sub.publish)
                readers = sorted(q.qid for q in remaining if stream in _reads([q]))
                if stream not in still and readers:
                    return SubscriptionError.from_code(
                        "CEL-S004",
                        f"{query.qid} PUBLISHes {stream!r}, which {', '.join(readers)} "
                        f"read(s): unsubscribe them too",
                    )
        return None

    def unsubscribed(self, ids: Iterable[str]) -> SubscribedCel:
        """After removing ``ids`` (checked with ``unsubscribe_problem``)."""
        removing = set(ids)
        queries = tuple(q for q in self.program.queries if q.qid not in removing)
        kept = {str(s.publish) for q in queries for s in published_subqueries(q)}
        published = {s: a for s, a in self.program.published.items() if s in kept}
        classes = []
        for live in self.classes:
            left = [q for q in queries if q.qid in live.key_class.queries]
            if left:
                key_class = KeyClass(tuple(q.qid for q in left), _reads(left), live.key_class.keys)
                classes.append(LiveClass(live.name, key_class))
        events = {qid: e for qid, e in self.events.items() if qid not in removing}
        program = Program(self.program.streams, queries, published)
        return SubscribedCel(program, tuple(classes), events)


def _reads(queries: Iterable[Query]) -> frozenset[str]:
    return frozenset(ref.name for q in queries for ref in stream_refs(q.source))


def _readers_of_refused(
    queries: list[Query], refused: set[str], running: Mapping[str, Schema]
) -> dict[str, str]:
    """The queries that read, transitively, a stream only refused queries would have
    PUBLISHed, with why (``CEL-S005``)."""
    kept = [q for q in queries if q.qid not in refused]
    out: dict[str, str] = {}
    while True:
        available = set(running) | {str(s.publish) for q in kept for s in published_subqueries(q)}
        wanted = {str(s.publish) for q in queries for s in published_subqueries(q)}
        missing = wanted - available
        dropped = [q for q in kept if _reads([q]) & missing]
        if not dropped:
            return out
        for query in dropped:
            streams = ", ".join(sorted(_reads([query]) & missing))
            out[query.qid] = f"query {query.qid!r} reads {streams}, PUBLISHed by a rejected query"
        kept = [q for q in kept if q not in dropped]


def _where(text: str | None, span: object) -> dict[str, object]:
    """``text``/``offset`` for ``from_code`` when both are known."""
    offset = getattr(span, "offset", None)
    return {"text": text, "offset": offset} if text is not None and offset is not None else {}
