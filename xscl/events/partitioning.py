"""Which attribute partitions each CEL query's input (docs/cel.md 10.3): the AI index's key.

A query can run split over groups when an equality of **every** NEXT/FOLD step
ties the new event's attribute to the key value its instance carries from its
first event (``$2.author = $1.author``, or in FOLD ``$2.author = $.author``):
then two events with different key values never meet in one instance, and each
group of events that share a key value can be evaluated alone. FILTER, SELECT
and UNION keep a key when they keep its attribute.

Queries linked by resubscription (one reads a stream another PUBLISHes) form a
**class**: they must agree on one key attribute per stream (a PUBLISHed
stream's key is the attribute its publishers output the key under). A class
with no such choice goes to the **global partition**: all its events in one
group. Each event is routed to one group per class that reads its stream:
``(class, bucket)``, the bucket a stable hash of its key value (0 for a global
class).

>>> from xscl.lang.cel.parser import parse_file
>>> from xscl.lang.cel.validation import validate
>>> text = '''DECLARE STREAM Post(author, site);
... x: SELECT author, site FROM Post NEXT{$2.author = $1.author AND $2.site != $1.site} Post
...    PUBLISH X;
... y: FROM X FOLD{$2.author = $.author, TRUE} Post;
... z: FROM Post NEXT Post'''
>>> program, _ = validate(parse_file(text))
>>> [(c.queries, c.keys) for c in partition_classes(program)]
[(('x', 'y'), {'Post': 'author', 'X': 'author'}), (('z',), None)]
>>> classes = partition_classes(program)
>>> from xscl.events.envelope import Event
>>> route(classes, Event("Post", 1, 1, {"author": "ann", "site": "a"}), buckets=4)
[(0, 0), (1, 0)]
"""

from __future__ import annotations

import itertools
import json
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from xscl.events.envelope import Event, Value
from xscl.events.results import written_value
from xscl.lang.cel.ast import (
    Attr,
    Compare,
    Expr,
    Filter,
    Fold,
    Logic,
    Next,
    Query,
    SelectItem,
    Star,
    StreamExpr,
    StreamRef,
    SubQuery,
    UnionExpr,
)
from xscl.lang.cel.schema import fold_iterated, fold_schema, next_schema
from xscl.lang.cel.validation import Program, published_subqueries, stream_refs

__all__ = [
    "KeyClass",
    "class_program",
    "joined_keys",
    "key_bucket",
    "linked_queries",
    "partition_classes",
    "route",
]

#: Candidate key assignments tried per class before it goes to the global partition.
_SEARCH_LIMIT = 10_000

Schema = tuple[str, ...]
#: A stream -> its key attribute, as sorted pairs (hashable).
Mapping_ = frozenset[tuple[str, str]]
#: An output attribute that holds the key, and the key attribute of each stream read.
Keyed = tuple[str, Mapping_]


@dataclass(frozen=True)
class KeyClass:
    """Queries evaluated together; ``keys`` maps each stream they read or PUBLISH to its
    key attribute, None for the global partition (one group)."""

    queries: tuple[str, ...]
    reads: frozenset[str]
    keys: dict[str, str] | None


def _merge(*maps: Mapping_) -> Mapping_ | None:
    """The union of stream -> attribute maps, None when two give one stream different keys."""
    merged: dict[str, str] = {}
    for pairs in maps:
        for stream, attr in pairs:
            if merged.setdefault(stream, attr) != attr:
                return None
    return frozenset(merged.items())


def _conjuncts(expr: Expr) -> Iterator[Expr]:
    if isinstance(expr, Logic) and expr.op == "AND":
        for item in expr.items:
            yield from _conjuncts(item)
    else:
        yield expr


def _equalities(pred: Expr) -> set[tuple[str, str, str]]:
    """(side, attr, attr of side 2) of each top-level ``$2.x = $<side>.y`` conjunct."""
    pairs = set()
    for conjunct in _conjuncts(pred):
        if not (isinstance(conjunct, Compare) and conjunct.op == "="):
            continue
        left, right = conjunct.left, conjunct.right
        if not (isinstance(left, Attr) and isinstance(right, Attr)):
            continue
        if right.side == "2":
            left, right = right, left
        if left.side == "2" and right.side in ("1", "$"):
            pairs.add((str(right.side), right.name, left.name))
    return pairs


class _Analysis:
    """Key candidates of stream expressions over one program's schemas."""

    def __init__(self, program: Program) -> None:
        self.program = program

    def query(self, query: Query) -> tuple[Schema, list[Keyed]]:
        schema, keyed = self.expr(query.source)
        if query.select is not None:
            names: list[str] = []
            renames: dict[str, list[str]] = {}
            for item in query.select:
                if isinstance(item, Star):
                    names.extend(schema)
                    for a in schema:
                        renames.setdefault(a, []).append(a)
                else:
                    assert isinstance(item, SelectItem)
                    name = item.name or item.expr.name  # type: ignore[union-attr]
                    names.append(name)
                    if isinstance(item.expr, Attr):
                        renames.setdefault(item.expr.name, []).append(name)
            keyed = [(new, m) for a, m in keyed for new in renames.get(a, [])]
            schema = tuple(names)
        if query.publish is not None:
            keyed = [
                (a, merged)
                for a, m in keyed
                if (merged := _merge(m, frozenset({(query.publish, a)}))) is not None
            ]
        return schema, keyed

    def expr(self, expr: StreamExpr) -> tuple[Schema, list[Keyed]]:
        if isinstance(expr, StreamRef):
            schema = self.program.schema(expr.name)
            return schema, [(a, frozenset({(expr.name, a)})) for a in schema]
        if isinstance(expr, SubQuery):
            return self.query(expr.query)
        if isinstance(expr, Filter):
            return self.expr(expr.input)
        if isinstance(expr, UnionExpr):
            (schema, left), (_, right) = self.expr(expr.left), self.expr(expr.right)
            keyed = [
                (a, merged)
                for (a, m1), (b, m2) in itertools.product(left, right)
                if a == b and (merged := _merge(m1, m2)) is not None
            ]
            return schema, keyed
        (s1, left), (s2, right) = self.expr(expr.left), self.expr(expr.right)
        equal = _equalities(expr.pred)
        out: list[Keyed] = []
        if isinstance(expr, Next):
            schema = next_schema(s1, s2)
            for (y, m1), (x, m2) in itertools.product(left, right):
                merged = _merge(m1, m2)
                if ("1", y, x) in equal and merged is not None:
                    out += [(schema[s1.index(y)], merged), (x, merged)]
            return schema, out
        assert isinstance(expr, Fold)
        names = [agg.name for agg in expr.aggs]
        iterated = fold_iterated(s2, names)
        schema = fold_schema(s1, s2, names)
        for (y, m1), (x, m2) in itertools.product(left, right):
            merged = _merge(m1, m2)
            if merged is None or x in names:
                continue
            if ("1", y, x) in equal or (("$", y, x) in equal and x == y and y in iterated):
                out += [(schema[s1.index(y)], merged), (x, merged)]
        return schema, out


def _linked(program: Program) -> list[list[Query]]:
    """Queries grouped by resubscription links (connected components), in file order."""
    publishers: dict[str, list[int]] = {}
    for i, query in enumerate(program.queries):
        for sub in published_subqueries(query):
            publishers.setdefault(str(sub.publish), []).append(i)
    parent = list(range(len(program.queries)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, query in enumerate(program.queries):
        for ref in stream_refs(query.source):
            for j in publishers.get(ref.name, []):
                parent[find(i)] = find(j)
        for sub in published_subqueries(query):
            for j in publishers[str(sub.publish)]:
                parent[find(i)] = find(j)
    groups: dict[int, list[Query]] = {}
    for i, query in enumerate(program.queries):
        groups.setdefault(find(i), []).append(query)
    return list(groups.values())


def _solve(candidates: Sequence[list[Keyed]], chosen: Mapping_ = frozenset()) -> Mapping_ | None:
    """One consistent choice of a candidate per query, extending ``chosen`` (depth first,
    bounded), or None."""
    steps = 0

    def search(index: int, chosen: Mapping_) -> Mapping_ | None:
        nonlocal steps
        if index == len(candidates):
            return chosen
        for _attr, pairs in candidates[index]:
            steps += 1
            if steps > _SEARCH_LIMIT:
                return None
            merged = _merge(chosen, pairs)
            if merged is not None:
                found = search(index + 1, merged)
                if found is not None:
                    return found
        return None

    return search(0, chosen)


def partition_classes(program: Program) -> list[KeyClass]:
    """The classes of ``program``'s queries with their keys (None: the global partition)."""
    analysis = _Analysis(program)
    classes = []
    for queries in _linked(program):
        found = _solve([analysis.query(q)[1] for q in queries])
        reads = frozenset(ref.name for q in queries for ref in stream_refs(q.source))
        classes.append(
            KeyClass(
                tuple(q.qid for q in queries),
                reads,
                None if found is None else dict(sorted(found)),
            )
        )
    return classes


def joined_keys(
    program: Program, queries: Sequence[Query], keys: Mapping[str, str]
) -> dict[str, str] | None:
    """The keys of a keyed class once ``queries`` (of ``program``) join it: its ``keys``
    kept, a key added for each stream the queries add; None when they cannot agree.

    A running class keeps its keys (its instances are in the buckets they chose), so a
    query that joins it must be keyed the same way (docs/cel.md 10.6).
    """
    analysis = _Analysis(program)
    found = _solve([analysis.query(q)[1] for q in queries], frozenset(keys.items()))
    return None if found is None else dict(sorted(found))


def linked_queries(program: Program) -> list[list[Query]]:
    """``program``'s queries grouped by resubscription links, in file order."""
    return _linked(program)


def class_program(program: Program, key_class: KeyClass) -> Program:
    """The part of ``program`` one class runs: its queries and the streams they PUBLISH."""
    queries = tuple(q for q in program.queries if q.qid in key_class.queries)
    published = {
        str(sub.publish): program.published[str(sub.publish)]
        for q in queries
        for sub in published_subqueries(q)
    }
    return Program(program.streams, queries, published)


def key_bucket(value: Value, buckets: int) -> int:
    """A stable bucket of a key value (``1`` and ``1.0`` are one value).

    >>> key_bucket("ann", 4), key_bucket(1, 8) == key_bucket(1.0, 8)
    (0, True)
    """
    text = json.dumps(written_value(value), ensure_ascii=False, separators=(",", ":"))
    return zlib.crc32(text.encode("utf-8")) % buckets


def route(classes: Sequence[KeyClass], event: Event, buckets: int) -> list[tuple[int, int]]:
    """(class index, bucket) of every group ``event`` goes to: one per class reading its stream."""
    groups = []
    for index, key_class in enumerate(classes):
        if event.stream not in key_class.reads:
            continue
        keys: Mapping[str, str] | None = key_class.keys
        if keys is None or event.stream not in keys:
            groups.append((index, 0))
        else:
            groups.append((index, key_bucket(event.attrs.get(keys[event.stream]), buckets)))
    return groups
