"""The query registry: the set of live subscriptions, each validated and normalised once.

``QueryRegistry`` is the control plane's source of truth (DESIGN "subscriptions
as data"): it accepts query files or parsed queries, rejects bad ones with
their errors while keeping every other query (spec 5), and keeps for each
registered query its ``NormalQuery``. It also answers the questions the
engines ask about PUBLISH streams: which queries publish a stream, which
queries read another query's output, and an order in which publishers come
before their readers. Pure Python and picklable (plain dicts of frozen
dataclasses), so it can be stored durably or shipped to Spark executors.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from heapq import heapify, heappop, heappush

from xscl.errors import XsclError
from xscl.lang.ast import Query
from xscl.lang.normal_form import VarDef, canonical_variables, normalize
from xscl.lang.normal_form.model import NormalQuery
from xscl.lang.parser import parse_file
from xscl.lang.validation import validate_all

__all__ = ["QueryRegistry"]


class QueryRegistry:
    """Registered queries in registration order, with their normal forms.

    ``streams`` is the catalog of input streams; ``None`` accepts every stream
    name (as the batch command does). Streams PUBLISHed by registered queries
    are always known.
    """

    def __init__(self, streams: Collection[str] | None = None) -> None:
        self.streams: frozenset[str] | None = None if streams is None else frozenset(streams)
        self._queries: dict[str, Query] = {}
        self._normal: dict[str, NormalQuery] = {}

    # --- registration ---------------------------------------------------------------

    def add(
        self, source: str | Iterable[Query], *, source_name: str | None = None
    ) -> tuple[list[Query], list[XsclError]]:
        """Register the queries of a file text (or parsed queries): ``(added, errors)``.

        Every valid query is added; every invalid one is reported and leaves
        the registry as it was. Text is parsed with ``parse_file`` (one error
        per bad query; the others still count). ``source_name`` names the file
        in error messages.
        """
        errors: list[XsclError] = []
        text: str | None = None
        if isinstance(source, str):
            text = source
            parsed = parse_file(source, source=source_name)
            errors.extend(parsed.errors)
            candidates: list[Query] = list(parsed.queries)
        else:
            candidates = list(source)
        valid, problems = validate_all(
            candidates,
            streams=self.streams,
            registered=tuple(self._queries.values()),
            text=text,
        )
        if source_name is not None:
            for problem in problems:
                problem.source = source_name
        errors.extend(problems)
        normal = {q.qid: normalize(q) for q in valid}
        for query in valid:
            self._queries[query.qid] = query
            self._normal[query.qid] = normal[query.qid]
        return valid, errors

    def remove(self, qid: str, *, cascade: bool = False) -> tuple[Query, ...]:
        """Unregister ``qid``; return what was removed, in registration order.

        With a catalog, a query whose PUBLISH stream is the only source of a
        stream other queries read has dependents: removing it raises
        ``ValueError`` unless ``cascade``, which removes them too (recursively).
        Without a catalog every stream name is acceptable, so nothing depends.
        """
        if qid not in self._queries:
            raise KeyError(qid)
        doomed = self._orphaned_by({qid})
        if len(doomed) > 1 and not cascade:
            others = sorted(doomed - {qid})
            raise ValueError(
                f"query {qid!r} feeds {', '.join(others)}; remove them first or pass cascade=True"
            )
        removed = tuple(self._queries[q] for q in self._queries if q in doomed)
        for query in removed:
            del self._queries[query.qid]
            del self._normal[query.qid]
        return removed

    def _orphaned_by(self, removing: set[str]) -> set[str]:
        """``removing`` plus every query left reading a stream that nothing provides."""
        doomed = set(removing)
        if self.streams is None:
            return doomed  # every stream name is acceptable: nobody is orphaned
        while True:
            live = [q for q in self._queries.values() if q.qid not in doomed]
            known = self.streams | {q.publish for q in live if q.publish is not None}
            readers = {q.qid for q in live if any(b.stream not in known for b in q.blocks)}
            if not readers:
                return doomed
            doomed |= readers

    # --- lookup ---------------------------------------------------------------------

    def get(self, qid: str) -> Query:
        """The registered query ``qid`` (``KeyError`` if absent)."""
        return self._queries[qid]

    def normal(self, qid: str) -> NormalQuery:
        """The value-join normal form of ``qid`` (computed once, at registration)."""
        return self._normal[qid]

    def queries(self) -> tuple[Query, ...]:
        """Every registered query, in registration order."""
        return tuple(self._queries.values())

    def normal_queries(self) -> tuple[NormalQuery, ...]:
        """Every registered query's normal form, in registration order."""
        return tuple(self._normal.values())

    def shared_variables(self) -> dict[VarDef, list[tuple[str, str]]]:
        """``canonical_variables`` over the registered queries."""
        return canonical_variables(self.normal_queries())

    def __contains__(self, qid: object) -> bool:
        return qid in self._queries

    def __len__(self) -> int:
        return len(self._queries)

    def __iter__(self) -> Iterator[Query]:
        return iter(self.queries())

    # --- the PUBLISH graph ------------------------------------------------------------

    def publishers(self) -> dict[str, tuple[str, ...]]:
        """Each PUBLISHed stream and the queries publishing it (several = the union)."""
        found: dict[str, list[str]] = {}
        for query in self._queries.values():
            if query.publish is not None:
                found.setdefault(query.publish, []).append(query.qid)
        return {stream: tuple(qids) for stream, qids in found.items()}

    def publish_graph(self) -> dict[str, tuple[str, ...]]:
        """Which query feeds which: publisher qid -> the qids reading its stream."""
        graph: dict[str, list[str]] = {qid: [] for qid in self._queries}
        publishers = self.publishers()
        for reader in self._queries.values():
            for block in reader.blocks:
                for source in publishers.get(block.stream, ()):
                    if reader.qid not in graph[source]:
                        graph[source].append(reader.qid)
        return {qid: tuple(readers) for qid, readers in graph.items()}

    def topological_order(self) -> tuple[str, ...]:
        """All qids, every publisher before the queries reading its stream.

        Kahn's algorithm; among queries ready at the same time, registration
        order wins, so the order is deterministic. The registry holds no cycle
        (rejected at registration), so every query is listed.
        """
        position = {qid: i for i, qid in enumerate(self._queries)}
        graph = self.publish_graph()
        indegree = dict.fromkeys(graph, 0)
        for readers in graph.values():
            for reader in readers:
                indegree[reader] += 1
        ready = [(position[q], q) for q, n in indegree.items() if n == 0]
        heapify(ready)
        order: list[str] = []
        while ready:
            _pos, qid = heappop(ready)
            order.append(qid)
            for reader in graph[qid]:
                indegree[reader] -= 1
                if indegree[reader] == 0:
                    heappush(ready, (position[reader], reader))
        return tuple(order)
