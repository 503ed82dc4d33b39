"""The plans that join a composite-placed chain one hop at a time (``groups.hop_chains``).

A chain of K blocks whose every block r >= 1 is joined to an earlier one by a value
equality or a finite window (``placements.hop_links``) is matched as Cayuga's NEXT does
(Hong ch. 4): the match of blocks 0..r-1, a composite event (spec 3.2), meets block r's
document in the group of hop r's value, or of its time bucket. Each hop checks a
*prefix* of the chain: the template and the query rows cut after block r
(``prefix_template``, ``prefix_row``), with the windows of the first r operators, so a
composite event is a real match of its prefix, windows included (left-associative
chains: a prefix's semantics do not depend on the blocks after it, docs/language.md
"Joins across documents").

Per hop r, the role plan of block r in the prefix of r + 1 blocks, probing hop r's
edge first (a hop without one scans: the group gives it the documents of its time
buckets); hop 1 also has block 0's plan (both ends of the first hop are documents, and
either may arrive last). A time hop's class is its row's (``hop_class``): each query's
matches go only through the buckets of its own window's class.

Where it runs: built with the subscriptions (each worker's, once per registry
version); matched in the value groups (``groups.hop_chains``).

>>> from xscl.templates.canonical import Template
>>> t = Template(("JOIN", "FOLLOWED BY"), (0, 0, 1, 1, 2), (-1, 0, -1, 2, -1),
...              (True, False, True, False, True), ((1, 3), (2, 4)))
>>> cut = prefix_template(t, 2)
>>> cut.kinds, cut.blocks, cut.value_edges
(('JOIN',), (0, 0, 1, 1), ((1, 3),))
>>> plans = HopPlans.of(t)
>>> [[p.role for p in hop] for hop in plans.hops]
[[0, 1], [2]]
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import reduce

from xscl.engine.placements import COMPOSITE, hop_links
from xscl.engine.plans import RolePlan, role_steps, wider
from xscl.engine.time_buckets import window_class
from xscl.templates.canonical import Template
from xscl.templates.registry import QueryRow


def prefix_size(template: Template, blocks: int) -> int:
    """How many meta-variables the first ``blocks`` blocks have (numbered block by block)."""
    return sum(1 for b in template.blocks if b < blocks)


def prefix_template(template: Template, blocks: int) -> Template:
    """``template`` cut after its first ``blocks`` blocks."""
    size = prefix_size(template, blocks)
    return Template(
        template.kinds[: blocks - 1],
        template.blocks[:size],
        template.parents[:size],
        template.documents[:size],
        tuple((a, b) for a, b in template.value_edges if b < size),
    )


def prefix_row(row: QueryRow, blocks: int) -> QueryRow:
    """``row`` cut after its first ``blocks`` blocks (the whole row for all of them)."""
    if blocks == row.template.block_count:
        return row
    size = prefix_size(row.template, blocks)
    return replace(
        row,
        var_ids=row.var_ids[:size],
        windows=row.windows[: blocks - 1],
        kinds=row.kinds[: blocks - 1],
        names=row.names[:size],
        template=prefix_template(row.template, blocks),
    )


@dataclass
class HopPlans:
    """One composite-placed template's hop plans (see the module docstring)."""

    template: Template
    #: hop r's edge at ``edges[r - 1]`` (None: a time hop)
    edges: tuple[tuple[int, int] | None, ...]
    #: hop r's plans at ``hops[r - 1]``: block r's in the prefix of r + 1 blocks (hop 1:
    #: block 0's too)
    hops: list[list[RolePlan]]
    #: the whole R_T row of each query
    full_rows: dict[str, QueryRow] = field(default_factory=dict)
    #: the widest window of the template's rows (None: INF): how long a composite event
    #: is kept for a later document (kept as rows come and go)
    max_window: int | None = 0

    @classmethod
    def of(cls, template: Template) -> HopPlans:
        edges = hop_links(template)
        if template.block_count < 3:
            raise ValueError(f"{template} is not placed {COMPOSITE}")
        hops: list[list[RolePlan]] = []
        for r, edge in enumerate(edges, start=1):
            prefix = prefix_template(template, r + 1)
            roles = (0, 1) if r == 1 else (r,)
            hops.append([RolePlan(prefix, role, role_steps(prefix, role, edge)) for role in roles])
        return cls(template, edges, hops)

    def insert(self, row: QueryRow) -> None:
        for r, plans in enumerate(self.hops, start=1):
            cut = prefix_row(row, r + 1)
            for plan in plans:
                plan.insert(cut)
        self.full_rows[row.qid] = row
        self._recompute()

    def delete(self, row: QueryRow) -> None:
        for r, plans in enumerate(self.hops, start=1):
            cut = prefix_row(row, r + 1)
            for plan in plans:
                plan.delete(cut)
        self.full_rows.pop(row.qid, None)
        self._recompute()

    def _recompute(self) -> None:
        widest: int | None = 0
        for row in self.full_rows.values():
            widest = reduce(wider, row.windows, widest)
        self.max_window = widest

    @property
    def rows(self) -> int:
        return len(self.full_rows)

    @property
    def block_count(self) -> int:
        return self.template.block_count

    def hop_class(self, qid: str, hop: int) -> int:
        """The time class of query ``qid``'s window at time hop ``hop`` (finite: a
        query with a time hop is placed here only when its windows are)."""
        window = self.full_rows[qid].windows[hop - 1]
        assert window is not None, "a composite chain's time hop has a finite window"
        return window_class(window)
