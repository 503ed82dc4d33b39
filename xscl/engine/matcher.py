"""Evaluating one role plan for a new document (thesis Algorithms 1, 3 and 4).

``match_document`` walks the plan's steps depth-first. Each step probes a hash
structure (the new document's R_binW, a view-cache slice keyed by string value,
or a stored document's R_bin) for candidate (document, node) pairs, restricted
to the var ids the R_T trie allows at that position; value edges are checked as
soon as both ends are placed (empty values never join, spec 3.2); a document
already used by another block is skipped (all documents of a match are
distinct). At a trie leaf the R_T rows are filtered by Algorithm 3's window
test, generalised to chains (spec 3.2), and each surviving row is a match.

Candidates are filtered before any walk (docs/architecture.md, "Probing by the
most selective value"):

* by time: farther from the new document than the widest last window of the
  rows under the trie node reached (every pair of documents in a match lies
  within its row's last window, spec 3.2), or, in a template of FOLLOWED BY
  only, on the wrong side of it (its blocks' timestamps strictly increase); a
  slice is in timestamp order (``view_cache.add_to_slice``), so a probe bisects
  to the window and never reads the documents outside it;
* by value: a document that lacks the value of a placed node that another of
  its block's nodes must equal (``PlanStep.holds``). A hot value's slice (a
  category, a prolific author) holds many documents; few also share the other
  values of a join with several equalities.

Example: for thesis d1 (book) then d2 (blog), role 1 of the Q1-Q3 template
yields the rows Q1 and Q2 with docs (d1, d2) and nodes (0, 2, 4, 0, 2, 3) /
(0, 2, 5, 0, 2, 4) -- Table 6.4(f) up to node numbering.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, cast

from xscl.engine.plans import RolePlan, windows_hold
from xscl.engine.state import DocState
from xscl.engine.view_cache import Slice, entry_ts
from xscl.templates.registry import QueryRow

#: One match: the R_T row, the document of each block, the node of each meta-variable.
Match = tuple[QueryRow, tuple[DocState, ...], tuple[str, ...]]


def no_slice(_value: str) -> Slice:
    """``match_document``'s ``slice_of`` where nothing is stored by value."""
    return {}


def no_stored() -> Iterable[DocState]:
    """``match_document``'s ``stored`` where no plan may scan (nothing is scanned)."""
    return ()


def match_document(
    plan: RolePlan,
    new: DocState,
    slice_of: Callable[[str], Slice],
    stored: Callable[[], Iterable[DocState]],
) -> Iterator[Match]:
    """Every match of ``plan``'s queries with ``new`` in block ``plan.role`` (see module doc).

    ``slice_of(value)``: the stored entries with that value, each list in timestamp
    order (``view_cache.add_to_slice``); ``stored()``: every stored document (scans).
    """
    if plan.var_counts[0].keys().isdisjoint(new.nodes):
        return  # the new document binds no var id the plan's first step allows
    template = plan.template
    steps = plan.steps
    blocks = template.blocks
    depth_count = len(steps)
    docs: list[DocState | None] = [None] * template.block_count
    nodes: list[str] = [""] * template.size
    var_at: list[int] = [0] * template.size
    sides = plan.sides
    new_ts = new.ts

    def values_agree(checks: tuple[int, ...], meta: int, doc: DocState, node: str) -> bool:
        value = doc.values.get(node, "")
        if not value:
            return False
        for other in checks:
            if other == meta:
                continue
            other_doc = docs[blocks[other]]
            assert other_doc is not None
            if other_doc.values.get(nodes[other], "") != value:
                return False
        return True

    def placements(depth: int, trie: dict[int, Any]) -> Iterator[tuple[Any, DocState, str]]:
        """(trie child, document, node) for every way to place step ``depth``'s meta-variable.

        Only var ids both the trie and the probed index have are tried; the probe
        that does not depend on the var id (a view-cache slice) is made once.
        """
        step = steps[depth]
        kind = step.kind
        meta = step.meta
        if kind == "new_root":
            yield from _joint(trie, new.nodes, var_at, meta, new)
            return
        if kind == "value" or kind == "scan":
            side = sides[step.block]
            needed = set()
            for held in step.holds:
                held_doc = docs[blocks[held]]
                assert held_doc is not None
                held_value = held_doc.values.get(nodes[held], "")
                if not held_value:
                    return  # empty values never join
                needed.add(held_value)
            if kind == "scan":
                lo, hi = offsets(side, plan.span_below(trie))
                for doc in stored():
                    if lo <= doc.ts - new_ts <= hi and needed <= doc.strings and doc not in docs:
                        yield from _joint(trie, doc.nodes, var_at, meta, doc)
                return
            anchor = step.anchor
            anchor_doc = docs[blocks[anchor]]
            assert anchor_doc is not None
            value = anchor_doc.values.get(nodes[anchor], "")
            if not value:
                return
            needed.discard(value)  # every candidate holds the probed value
            part = slice_of(value)
            for var, sub in _common(trie, part):
                var_at[meta] = var
                lo, hi = offsets(side, plan.span_below(sub))
                entries = part[var]  # in timestamp order: read only the window's
                last = new_ts + hi
                first = bisect.bisect_left(entries, new_ts + lo, key=entry_ts)
                for k in range(first, len(entries)):
                    doc, node = entries[k]
                    if doc.ts > last:
                        break
                    if needed <= doc.strings and doc not in docs:
                        yield sub, doc, node
            return
        anchor = step.anchor
        anchor_var = var_at[anchor]
        anchor_node = nodes[anchor]
        placed = new if kind == "new_down" else docs[step.block]
        assert placed is not None
        if kind == "up":
            up = placed.up
            for var, sub in trie.items():
                index = up.get((var, anchor_var))
                if index:
                    var_at[meta] = var
                    for node in index.get(anchor_node, ()):
                        yield sub, placed, node
            return
        down = placed.down
        for var, sub in trie.items():
            index = down.get((anchor_var, var))
            if index:
                var_at[meta] = var
                for node in index.get(anchor_node, ()):
                    yield sub, placed, node

    def walk(depth: int, trie: dict[int, Any]) -> Iterator[Match]:
        if depth == depth_count:
            block_docs = cast(tuple[DocState, ...], tuple(docs))  # every block is placed
            ts = [d.ts for d in block_docs]
            span = max(ts) - min(ts)
            for row in plan.rows_by_span(trie):
                widest = row.windows[-1] if row.windows else 0
                if widest is not None and widest < span:
                    break  # and every row after it: their spans are narrower
                if windows_hold(row.kinds, row.windows, ts):
                    yield row, block_docs, tuple(nodes)
            return
        step = steps[depth]
        meta, block, checks = step.meta, step.block, step.checks
        first_in_block = step.kind in ("new_root", "value", "scan")
        for sub, doc, node in placements(depth, trie):
            if checks and not values_agree(checks, meta, doc, node):
                continue
            nodes[meta] = node
            if first_in_block:
                docs[block] = doc
                yield from walk(depth + 1, sub)
                docs[block] = None
            else:
                yield from walk(depth + 1, sub)

    docs[plan.role] = new
    yield from walk(0, plan.trie)


#: no bound on a block's timestamp offset (an INF window)
UNBOUNDED = 1 << 62


def offsets(side: int, span: int | None) -> tuple[int, int]:
    """The (least, greatest) ``ts - new.ts`` of a document on ``side`` in a match whose
    blocks lie within ``span`` of each other (None: INF)."""
    reach = UNBOUNDED if span is None else span
    if side < 0:
        return -reach, -1
    if side > 0:
        return 1, reach
    return -reach, reach


def _common(trie: dict[int, Any], index: Mapping[int, Any]) -> Iterator[tuple[int, Any]]:
    """(var, trie child) for the var ids both ``trie`` and ``index`` have (smaller side looped)."""
    if len(index) < len(trie):
        for var in index:
            sub = trie.get(var)
            if sub is not None:
                yield var, sub
    else:
        for var, sub in trie.items():
            if var in index:
                yield var, sub


def _joint(
    trie: dict[int, Any],
    bound: Mapping[int, list[str]],
    var_at: list[int],
    meta: int,
    doc: DocState,
) -> Iterator[tuple[Any, DocState, str]]:
    """Placements of ``meta`` at every node ``doc`` binds to a var id the trie allows."""
    for var, sub in _common(trie, bound):
        var_at[meta] = var
        for node in bound[var]:
            yield sub, doc, node
