"""What a query shares with others, and the sharing groups found by union-find (the oracle).

A query's sharing keys are ``(kind, value)`` pairs:

* ``("template", T)``: its template (a ``Template``);
* ``("definition", D)``: each Stage-1 definition of its R_T row (a ``VarDef``);
* ``("stream", S)``: the stream it PUBLISHes, and each stream it reads that a live
  query publishes (a stream nobody publishes shares nothing but the spool).

Two values are equal exactly when their compiled-table cells are (``values.encode``
is stable and decodes back to an equal value), so the Spark graph, keyed by those
cells (``registry``), groups the queries the same way; values hash far faster than
they encode.

Queries with a key in common are in one group, and so, transitively, are their
partners: the groups are the connected components of the bipartite graph between
queries and keys. ``groups`` finds them with union-find over ``(query, key)`` pairs:

>>> sorted(map(sorted, groups([("q1", "a"), ("q2", "a"), ("q2", "b"), ("q3", "b"),
...                            ("q4", "c")])))
[['q1', 'q2', 'q3'], ['q4']]

It is the oracle the Spark implementations are tested against
(``components``), and what ``xscl explain --sharing FILE`` runs.
Where it runs: in one process (the driver, or the CLI without Spark).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import TypeVar

from xscl.service.compiled.table import CompiledQuery

__all__ = [
    "DEFINITION",
    "STREAM",
    "TEMPLATE",
    "groups",
    "live_keys",
    "query_keys",
    "sharing_groups",
]

TEMPLATE = "template"
DEFINITION = "definition"
STREAM = "stream"

_V = TypeVar("_V", bound=Hashable)


def groups(pairs: Iterable[tuple[_V, Hashable]]) -> list[list[_V]]:
    """The vertices of ``(vertex, key)`` pairs grouped by shared keys (union-find with
    path halving and union by size); groups and their members in first-seen order."""
    index: dict[tuple[int, Hashable], int] = {}  # (0, vertex) or (1, key) -> node
    parent: list[int] = []
    size: list[int] = []
    vertices: dict[_V, int] = {}

    def node(name: tuple[int, Hashable]) -> int:
        found = index.get(name)
        if found is None:
            found = index[name] = len(parent)
            parent.append(found)
            size.append(1)
        return found

    def find(n: int) -> int:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for vertex, key in pairs:
        v = vertices.get(vertex)
        if v is None:
            v = vertices[vertex] = node((0, vertex))
        a, b = find(v), find(node((1, key)))
        if a != b:
            if size[a] < size[b]:
                a, b = b, a
            parent[b] = a
            size[a] += size[b]
    out: dict[int, list[_V]] = {}
    for vertex, v in vertices.items():
        out.setdefault(find(v), []).append(vertex)
    return list(out.values())


def query_keys(compiled: CompiledQuery, published: frozenset[str]) -> list[tuple[str, Hashable]]:
    """The sharing keys of one query; ``published``: the streams live queries PUBLISH."""
    assignment, query = compiled.assignment, compiled.query
    keys: list[tuple[str, Hashable]] = [(TEMPLATE, assignment.template)]
    keys.extend((DEFINITION, d) for d in assignment.definitions)
    if query.publish is not None:
        keys.append((STREAM, query.publish))
    keys.extend((STREAM, b.stream) for b in query.blocks if b.stream in published)
    return list(dict.fromkeys(keys))


def live_keys(queries: Sequence[CompiledQuery]) -> dict[str, list[tuple[str, Hashable]]]:
    """Each of ``queries``' (the live ones) sharing keys, by query id."""
    published = frozenset(q.query.publish for q in queries if q.query.publish is not None)
    return {q.qid: query_keys(q, published) for q in queries}


def sharing_groups(queries: Sequence[CompiledQuery]) -> list[list[str]]:
    """The sharing groups of ``queries`` (the live ones), as lists of query ids."""
    keys = live_keys(queries)
    return groups((qid, key) for qid, its in keys.items() for key in its)
