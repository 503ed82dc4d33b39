"""Join of block matches across documents (spec/XSCL.md section 3.2).

Blocks are joined left to right. A partial match of blocks ``B1..Bk`` is a
composite event: its documents (all distinct), the nodes of the join
variables bound so far, and its interval ``[start, end]`` (min and max
timestamps). Extending it with a document at time ``t`` for the next block
requires, for operator ``(C) op {p, T} B``:

* ``FOLLOWED BY``: ``C.end < t`` and ``t - C.start <= T``;
* ``JOIN``: ``max(C.end, t) - min(C.start, t) <= T``;
* ``INF``: no bound on ``T`` (FOLLOWED BY still needs ``C.end < t``);
* every equality of ``p`` holds: both normalised string values are non-empty
  and equal. Equalities whose variables are on the same side act as filters.

Candidates of each block are sorted by timestamp and the window narrows the
range scanned (bisect); the exact rule above is then checked for each
candidate, so the narrowing is only an optimisation.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from xscl.lang.ast import Block, JoinOp, Predicate, Query, Step
from xscl.reference.documents import Document
from xscl.reference.xmltree import Node


@dataclass(frozen=True)
class Candidate:
    """One document for one block with one distinct assignment of its join variables."""

    doc: Document
    nodes: tuple[tuple[str, Node], ...]


@dataclass(frozen=True)
class Match:
    """A (partial) match: documents in block order, join-variable nodes, interval."""

    docs: tuple[Document, ...]
    nodes: dict[str, Node]
    start: int
    end: int


def _step_variables(steps: Sequence[Step]) -> list[str]:
    names: list[str] = []
    for step in steps:
        if step.var:
            names.append(step.var)
        for predicate in step.predicates:
            names.extend(_predicate_variables(predicate))
    return names


def _predicate_variables(predicate: Predicate) -> list[str]:
    path = getattr(predicate, "path", None)
    return _step_variables(path.steps) if path is not None else []


def block_variables(block: Block) -> list[str]:
    """Every variable bound in ``block`` (steps and predicates)."""
    return _step_variables(block.steps)


def join_variables(query: Query) -> set[str]:
    """Variables that occur in some join predicate."""
    return {name for op in query.ops for eq in op.equalities for name in (eq.left, eq.right)}


def window_holds(op: JoinOp, start: int, end: int, t: int) -> bool:
    """The time condition of ``(C=[start,end]) op B`` for B at time ``t``."""
    limit = op.window.micros
    if op.kind == "FOLLOWED BY":
        return end < t and (limit is None or t - start <= limit)
    return limit is None or max(end, t) - min(start, t) <= limit


def _time_range(op: JoinOp, start: int, end: int) -> tuple[int | None, int | None, bool]:
    """(low, high, low_exclusive) bounds that contain every t passing ``window_holds``."""
    limit = op.window.micros
    high = None if limit is None else start + limit
    if op.kind == "FOLLOWED BY":
        return end, high, True
    return (None if limit is None else end - limit), high, False


class ChainJoiner:
    """Joins per-block candidates of one query into full matches."""

    def __init__(self, query: Query, values: dict[int, str]) -> None:
        """``values`` maps ``id(node)`` to its normalised string value."""
        self._query = query
        self._values = values

    def _value(self, node: Node) -> str:
        return self._values[id(node)]

    def _equalities_hold(self, op: JoinOp, nodes: dict[str, Node]) -> bool:
        for equality in op.equalities:
            if equality.left not in nodes or equality.right not in nodes:
                raise ValueError(
                    f"query {self._query.qid}: join predicate uses {equality.left!r} or "
                    f"{equality.right!r}, not bound by this or an earlier block"
                )
            left = self._value(nodes[equality.left])
            if not left or left != self._value(nodes[equality.right]):
                return False
        return True

    def _probe(self, op: JoinOp, earlier: set[str], new: set[str]) -> tuple[str, str] | None:
        """An equality of ``op`` between an earlier variable and one of the new block, if any."""
        for equality in op.equalities:
            for old_var, new_var in (
                (equality.left, equality.right),
                (equality.right, equality.left),
            ):
                if old_var in earlier and new_var in new:
                    return old_var, new_var
        return None

    def _buckets(
        self, candidates: Sequence[Candidate], key_var: str | None
    ) -> dict[str | None, tuple[list[Candidate], list[int]]]:
        """Candidates grouped by the value of ``key_var`` (all in one group when None), by ts.

        Empty values are left out: they never satisfy an equality.
        """
        groups: dict[str | None, list[Candidate]] = {}
        for cand in candidates:
            key = None if key_var is None else self._value(dict(cand.nodes)[key_var])
            if key_var is None or key:
                groups.setdefault(key, []).append(cand)
        out: dict[str | None, tuple[list[Candidate], list[int]]] = {}
        for key, group in groups.items():
            group.sort(key=lambda c: c.doc.ts_micros)
            out[key] = (group, [c.doc.ts_micros for c in group])
        return out

    def join(self, candidates: Sequence[Sequence[Candidate]]) -> list[Match]:
        """All full matches; ``candidates[i]`` are block i's candidates.

        For speed, when the operator equates an earlier variable with one of the
        new block, the new block's candidates are looked up by that value (a
        necessary condition); every condition is still checked in full.
        """
        matches = [
            Match((c.doc,), dict(c.nodes), c.doc.ts_micros, c.doc.ts_micros) for c in candidates[0]
        ]
        earlier = {name for c in candidates[0] for name, _ in c.nodes}
        for op, block_candidates in zip(self._query.ops, candidates[1:], strict=True):
            new = {name for c in block_candidates for name, _ in c.nodes}
            probe = self._probe(op, earlier, new)
            buckets = self._buckets(block_candidates, None if probe is None else probe[1])
            extended: list[Match] = []
            for match in matches:
                key = None if probe is None else self._value(match.nodes[probe[0]])
                if key not in buckets:
                    continue
                ordered, times = buckets[key]
                low, high, exclusive = _time_range(op, match.start, match.end)
                if low is None:
                    first = 0
                elif exclusive:
                    first = bisect_right(times, low)
                else:
                    first = bisect_left(times, low)
                last = len(ordered) if high is None else bisect_right(times, high)
                used = {doc.key for doc in match.docs}
                for cand in ordered[first:last]:
                    t = cand.doc.ts_micros
                    if cand.doc.key in used or not window_holds(op, match.start, match.end, t):
                        continue
                    nodes = {**match.nodes, **dict(cand.nodes)}
                    if self._equalities_hold(op, nodes):
                        extended.append(
                            Match(
                                (*match.docs, cand.doc),
                                nodes,
                                min(match.start, t),
                                max(match.end, t),
                            )
                        )
            matches = extended
            earlier |= new
        return matches
