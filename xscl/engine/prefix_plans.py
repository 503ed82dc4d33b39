"""The plans that keep a keyed chain's prefix matches: the cache side of a join group's
plan choice (Babu 2005 §5.5, A-Caching; ``groups.prefix_cache``).

A keyed chain of K blocks (``placements.KEYED``) is matched in the group of its key
value by probing: the newest document walks the stored documents of every other block
(an MJoin, no intermediate state). The other plan keeps, per key label, the matches of
its first K - 1 blocks (its *prefix*, ``hop_plans.prefix_template``, windows included:
chains associate to the left, so a prefix's matches do not depend on the last block),
and a new document of the last block is checked against those only (an XJoin's
subresult). A template can keep its prefix only when the prefix is itself keyed by the
same class: the key class's own value edges within the first K - 1 blocks join all of
them (``prefix_key_class``); its role plans probe along those edges, so a group finds
every prefix match of a key value it holds, exactly as it finds the full ones.

Where it runs: built with the subscriptions (each worker's, once per registry
version); used by the value groups (``groups.prefix_cache``).

>>> from xscl.templates.canonical import Template
>>> t = Template(("JOIN", "JOIN"), (0, 1, 2), (-1, -1, -1), (True, True, True),
...              ((0, 1), (1, 2)))
>>> sorted(prefix_key_class(t))
[0, 1]
>>> [p.role for p in PrefixPlans.of(t).plans]
[0, 1]
>>> through_last = Template(("JOIN", "JOIN"), (0, 1, 2), (-1, -1, -1), (True, True, True),
...                         ((0, 2), (1, 2)))
>>> prefix_key_class(through_last), PrefixPlans.of(through_last)
(frozenset(), None)
"""

from __future__ import annotations

from dataclasses import dataclass

from xscl.engine.hop_plans import prefix_row, prefix_size, prefix_template
from xscl.engine.placements import key_class
from xscl.engine.plans import RolePlan, role_steps
from xscl.engine.state import DocState
from xscl.templates.canonical import Template
from xscl.templates.registry import QueryRow


def prefix_key_class(template: Template) -> frozenset[int]:
    """The key class's meta-variables in the first K - 1 blocks when the class's value
    edges among them join all of those blocks (so the prefix is keyed by the same
    value); else empty: the template always probes."""
    cut = prefix_size(template, template.block_count - 1)
    members = frozenset(m for m in key_class(template) if m < cut)
    root = {m: m for m in members}

    def find(meta: int) -> int:
        while root[meta] != meta:
            meta = root[meta]
        return meta

    for a, b in template.value_edges:
        if a in members and b in members:
            root[find(a)] = find(b)
    blocks = template.blocks
    groups: dict[int, set[int]] = {}
    for m in members:
        groups.setdefault(find(m), set()).add(blocks[m])
    whole = set(range(template.block_count - 1))
    return members if any(found == whole for found in groups.values()) else frozenset()


@dataclass
class PrefixPlans:
    """A keyed template's prefix of K - 1 blocks: its keyed role plans (see the module
    docstring), with each query's row cut after block K - 2."""

    template: Template
    #: the role plan of each block of the prefix, probing along the key class
    plans: list[RolePlan]

    @classmethod
    def of(cls, template: Template) -> PrefixPlans | None:
        """The prefix plans of a keyed ``template``; None when its prefix is not keyed
        by its key class."""
        members = prefix_key_class(template)
        if not members:
            return None
        prefix = prefix_template(template, template.block_count - 1)
        plans = []
        for role in range(prefix.block_count):
            first = next(
                (a, b)
                for a, b in prefix.value_edges
                if a in members
                and b in members
                and role in (prefix.blocks[a], prefix.blocks[b])
                and prefix.blocks[a] != prefix.blocks[b]
            )
            plans.append(RolePlan(prefix, role, role_steps(prefix, role, first, members)))
        if any(step.kind == "scan" for plan in plans for step in plan.steps):
            return None  # not reachable through the class: it would miss prefix matches
        return cls(template, plans)

    def fills(self, doc: DocState) -> bool:
        """Whether ``doc`` binds the first var id of some block of the prefix (it can be
        part of a prefix match)."""
        return any(not plan.var_counts[0].keys().isdisjoint(doc.nodes) for plan in self.plans)

    @property
    def last(self) -> int:
        """The block whose new documents are checked against the kept prefixes."""
        return self.template.block_count - 1

    @property
    def rows(self) -> int:
        return self.plans[0].rows

    def insert(self, row: QueryRow) -> None:
        cut = prefix_row(row, self.last)
        for plan in self.plans:
            plan.insert(cut)

    def delete(self, row: QueryRow) -> None:
        cut = prefix_row(row, self.last)
        for plan in self.plans:
            plan.delete(cut)
