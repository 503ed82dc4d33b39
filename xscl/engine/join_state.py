"""The in-process join state: every stored document, the view cache, eviction order.

Thesis Algorithm 2 and 5: a document that has been matched joins the state
(``store``) and the cached slices R_L,s; ``matches`` runs role plans for a new
document against it (thesis Algorithm 4, ``xscl.engine.matcher``); ``evict`` drops
the documents older than a horizon (the watermark minus every window).

The in-process engine keeps one ``JoinState`` for its whole run; the Spark job's
chain group builds one per micro-batch from its stored documents
(``xscl.engine.groups``).

Example::

    state = JoinState()
    found = state.matches(subscriptions.plans(), doc)   # then state.store(doc)
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable

from xscl.engine.matcher import Match, match_document
from xscl.engine.plans import RolePlan
from xscl.engine.state import DocState
from xscl.engine.view_cache import Slice, ViewCache


class JoinState:
    """See the module docstring."""

    def __init__(
        self, *, view_cache: bool = True, view_cache_max_rows: int | None = 5_000_000
    ) -> None:
        self.docs: dict[tuple[str, str], DocState] = {}
        self.cache = ViewCache(enabled=view_cache, max_rows=view_cache_max_rows)
        self._by_ts: list[tuple[int, int, tuple[str, str]]] = []

    def store(self, doc: DocState, reach: int | None = 0) -> None:
        """Add a matched document to the state and the cached slices; ``reach``: how much
        older than ``evict``'s horizon it may be and still be kept (None: always kept;
        ``partner_reach``)."""
        self.docs[doc.key] = doc
        self.cache.add(doc)
        if reach is not None:
            heapq.heappush(self._by_ts, (doc.ts + reach, doc.seq, doc.key))

    def matches(self, plans: Iterable[RolePlan], doc: DocState) -> list[Match]:
        """Every match of ``plans`` with ``doc`` in the plan's role, against the state."""
        strings = {s for _, _, s in doc.value_rows if s}
        memo: dict[str, Slice] = self.cache.lookup(strings, self.docs.values()) if strings else {}

        def slice_of(value: str) -> Slice:
            part = memo.get(value)
            if part is None:
                part = self.cache.lookup([value], self.docs.values()).get(value, {})
                memo[value] = part
            return part

        def stored() -> Iterable[DocState]:
            return self.docs.values()

        found: list[Match] = []
        for plan in plans:
            found.extend(match_document(plan, doc, slice_of, stored))
        return found

    def evict(self, horizon: int) -> int:
        """Drop the documents older than ``horizon`` by more than their reach; how many."""
        evicted = []
        while self._by_ts and self._by_ts[0][0] < horizon:
            _, _, key = heapq.heappop(self._by_ts)
            doc = self.docs.pop(key, None)
            if doc is not None:
                evicted.append(doc)
        if evicted:
            self.cache.remove_many(evicted)  # each slice filtered once
        return len(evicted)
