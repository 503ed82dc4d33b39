"""The view cache VC of thesis 6.5: slices of R_L keyed by string value (Algorithms 4-5).

A slice ``R_L,s`` holds, for string value ``s``, every stored (var, document,
node) whose value is ``s`` — sigma_{strVal=s}(R_doc), grouped by variable; the
R_bin half of R_L is a hash probe per document (``DocState.up``), so a slice is
enough to join on ``s`` and climb to the template's structural nodes.

* ``lookup(strings)`` gives the slices for a new document's strings (its R_docW
  strings): hits come from the cache; misses are computed with **one** scan of
  R_doc for all missing strings (E_L,s) and inserted (Algorithm 4, lines 2-8).
  A string never stored before has an empty slice and needs no scan.
* ``add(doc)`` merges the new document's rows into the cached slices
  (Algorithm 5: R_L,s := R_L,s u R_R,s); a string seen for the first time gets
  a fresh, complete slice.
* ``remove(doc)`` drops an evicted document (watermark / window eviction).
* Memory bound: at most ``max_rows`` cached tuples; least recently used slices
  are dropped first (a dropped slice is recomputed by a scan when needed).
* ``enabled=False`` is thesis Algorithm 1: no materialisation, every document
  recomputes its slices from R_doc by a scan (the benchmark's "no view cache").

Example::

    cache = ViewCache(max_rows=1_000_000)
    slices = cache.lookup({"Danny Ayers"}, state_docs)   # {"Danny Ayers": {x5: [(d1, "2")]}}
"""

from __future__ import annotations

import bisect
from collections import Counter, OrderedDict
from collections.abc import Iterable

from xscl.engine.state import DocState

#: A slice: var id -> [(document, node)] with that string value, in timestamp order
#: (``add_to_slice``), so a probe reads only the documents its window reaches.
Slice = dict[int, list[tuple[DocState, str]]]


def entry_ts(entry: tuple[DocState, str]) -> int:
    """A slice entry's timestamp (the key slices are ordered by)."""
    return entry[0].ts


def add_to_slice(part: Slice, var: int, doc: DocState, node: str) -> None:
    """Add one entry, keeping ``part[var]`` in timestamp order (arrival order among
    equal timestamps); in-order documents are appended, late ones inserted."""
    entries = part.setdefault(var, [])
    if not entries or entries[-1][0].ts <= doc.ts:
        entries.append((doc, node))
    else:
        bisect.insort_right(entries, (doc, node), key=entry_ts)


class ViewCache:
    """See the module docstring."""

    def __init__(self, *, enabled: bool = True, max_rows: int | None = 5_000_000) -> None:
        self.enabled = enabled
        self.max_rows = max_rows
        self._slices: OrderedDict[str, Slice] = OrderedDict()
        self._sizes: dict[str, int] = {}
        self.rows = 0
        #: how many stored R_doc rows hold each string (tells a miss from an empty slice)
        self._stored: Counter[str] = Counter()
        self.hits = 0
        self.misses = 0
        self.scans = 0

    def lookup(self, strings: Iterable[str], docs: Iterable[DocState]) -> dict[str, Slice]:
        """Slices for ``strings`` (non-empty ones only), scanning ``docs`` for misses."""
        found: dict[str, Slice] = {}
        missing: set[str] = set()
        for s in strings:
            if not s or s in found:
                continue
            if self.enabled and self._stored[s] == 0:
                found[s] = {}
            elif self.enabled and s in self._slices:
                self._slices.move_to_end(s)
                found[s] = self._slices[s]
                self.hits += 1
            else:
                missing.add(s)
        if missing:
            self.misses += len(missing)
            self.scans += 1
            computed: dict[str, Slice] = {s: {} for s in missing}
            for doc in docs:
                for var, node, strval in doc.value_rows:
                    if strval in missing:
                        add_to_slice(computed[strval], var, doc, node)
            for s, part in computed.items():
                found[s] = part
                if self.enabled:
                    self._put(s, part)
        return found

    def add(self, doc: DocState) -> None:
        """Merge ``doc``'s R_doc rows into the state and the cached slices (Algorithm 5)."""
        for var, node, strval in doc.value_rows:
            if not strval:
                continue
            fresh = self._stored[strval] == 0
            self._stored[strval] += 1
            if not self.enabled:
                continue
            part = self._slices.get(strval)
            if part is None and fresh:
                part = {}
                self._slices[strval] = part
                self._sizes[strval] = 0
            if part is not None:
                add_to_slice(part, var, doc, node)
                self._sizes[strval] += 1
                self.rows += 1
        self._shrink()

    def remove(self, doc: DocState) -> None:
        """Forget an evicted document."""
        self.remove_many([doc])

    def remove_many(self, docs: Iterable[DocState]) -> None:
        """Forget evicted documents: each touched slice is filtered once, not per document."""
        gone: dict[str, set[int]] = {}
        rows: Counter[str] = Counter()  # ``add`` counts rows, not documents
        for doc in docs:
            for _, _, strval in doc.value_rows:
                if strval:
                    gone.setdefault(strval, set()).add(id(doc))
                    rows[strval] += 1
        for strval, ids in gone.items():
            self._stored[strval] -= rows[strval]
            if self._stored[strval] <= 0:  # no stored document holds it any more
                del self._stored[strval]
                if strval in self._slices:
                    del self._slices[strval]
                    self.rows -= self._sizes.pop(strval)
                continue
            part = self._slices.get(strval)
            if part is None:
                continue
            removed = 0
            for var in list(part):
                kept = [entry for entry in part[var] if id(entry[0]) not in ids]
                removed += len(part[var]) - len(kept)
                if kept:
                    part[var] = kept
                else:
                    del part[var]
            self._sizes[strval] -= removed
            self.rows -= removed

    def _put(self, s: str, part: Slice) -> None:
        size = sum(len(entries) for entries in part.values())
        old = self._sizes.pop(s, 0)
        self.rows += size - old
        self._slices[s] = part
        self._sizes[s] = size
        self._shrink()

    def _shrink(self) -> None:
        if self.max_rows is None:
            return
        while self.rows > self.max_rows and len(self._slices) > 1:
            s, _ = self._slices.popitem(last=False)
            self.rows -= self._sizes.pop(s)

    @property
    def entries(self) -> int:
        return len(self._slices)
