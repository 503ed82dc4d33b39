"""Evaluating one role plan for a new document (thesis Algorithms 1, 3 and 4).

``match_document`` walks the plan's steps depth-first. Each step probes a hash
structure (the new document's R_binW, a view-cache slice keyed by string value,
or a stored document's R_bin) for candidate (document, node) pairs, restricted
to the var ids the R_T trie allows at that position; value edges are checked as
soon as both ends are placed (empty values never join, spec 3.2); a document
already used by another block is skipped (all documents of a match are
distinct). At a trie leaf the R_T rows are filtered by Algorithm 3's window
test, generalised to chains (spec 3.2), and each surviving row is a match.

Candidates more than the plan's largest window away from the new document are
skipped early (every pair of documents in a match lies within the last window).

Example: for thesis d1 (book) then d2 (blog), role 1 of the Q1-Q3 template
yields the rows Q1 and Q2 with docs (d1, d2) and nodes (0, 2, 4, 0, 2, 3) /
(0, 2, 5, 0, 2, 4) -- Table 6.4(f) up to node numbering.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from xscl.engine.plans import RolePlan, windows_hold
from xscl.engine.state import DocState
from xscl.engine.view_cache import Slice
from xscl.templates.registry import QueryRow

#: One match: the R_T row, the document of each block, the node of each meta-variable.
Match = tuple[QueryRow, tuple[DocState, ...], tuple[str, ...]]


def match_document(
    plan: RolePlan,
    new: DocState,
    slice_of: Callable[[str], Slice],
    stored: Callable[[], Iterable[DocState]],
) -> Iterator[Match]:
    """Every match of ``plan``'s queries with ``new`` in block ``plan.role`` (see module doc)."""
    template = plan.template
    steps = plan.steps
    depth_count = len(steps)
    docs: list[DocState | None] = [None] * template.block_count
    nodes: list[str] = [""] * template.size
    var_at: list[int] = [0] * template.size
    reach = plan.max_window
    new_ts = new.ts

    def near(doc: DocState) -> bool:
        return reach is None or abs(doc.ts - new_ts) <= reach

    def free(doc: DocState, block: int) -> bool:
        return all(other is not doc for b, other in enumerate(docs) if b != block)

    def candidates(depth: int, var: int) -> Iterable[tuple[DocState, str]]:
        step = steps[depth]
        kind = step.kind
        if kind == "new_root":
            return ((new, n) for n in new.nodes.get(var, ()))
        if kind == "new_down":
            anchor = step.anchor
            found = new.down.get((var_at[anchor], var))
            return ((new, n) for n in found.get(nodes[anchor], ())) if found else ()
        if kind in ("up", "down"):
            anchor = step.anchor
            doc = docs[step.block]
            assert doc is not None
            if kind == "up":
                index = doc.up.get((var, var_at[anchor]))
            else:
                index = doc.down.get((var_at[anchor], var))
            return ((doc, n) for n in index.get(nodes[anchor], ())) if index else ()
        if kind == "value":
            anchor = step.anchor
            anchor_doc = docs[template.blocks[anchor]]
            assert anchor_doc is not None
            value = anchor_doc.values.get(nodes[anchor], "")
            if not value:
                return ()
            entries = slice_of(value).get(var, ())
            return ((d, n) for d, n in entries if near(d) and free(d, step.block))
        return (  # scan
            (d, n)
            for d in stored()
            if near(d) and free(d, step.block)
            for n in d.nodes.get(var, ())
        )

    def values_agree(depth: int, doc: DocState, node: str) -> bool:
        checks = steps[depth].checks
        if not checks:
            return True
        value = doc.values.get(node, "")
        if not value:
            return False
        for other in checks:
            if other == steps[depth].meta:
                continue
            other_doc = docs[template.blocks[other]]
            assert other_doc is not None
            if other_doc.values.get(nodes[other], "") != value:
                return False
        return True

    def walk(depth: int, trie: dict[int, Any]) -> Iterator[Match]:
        if depth == depth_count:
            block_docs = tuple(d for d in docs if d is not None)
            ts = [d.ts for d in block_docs]
            rows: Iterable[QueryRow] = trie.values()
            for row in rows:
                if windows_hold(row.kinds, row.windows, ts):
                    yield row, block_docs, tuple(nodes)
            return
        step = steps[depth]
        meta, block = step.meta, step.block
        first_in_block = step.kind in ("new_root", "value", "scan")
        for var, sub in trie.items():
            var_at[meta] = var
            for doc, node in candidates(depth, var):
                if not values_agree(depth, doc, node):
                    continue
                nodes[meta] = node
                if first_in_block:
                    docs[block] = doc
                yield from walk(depth + 1, sub)
            if first_in_block:
                docs[block] = None

    docs[plan.role] = new
    yield from walk(0, plan.trie)
