"""Where a query is evaluated when the join state is partitioned (the Spark job).

Every query is *placed* by what a partition needs to evaluate it, so one template's
queries may sit in several places (a PUBLISH query shares its template with plain
ones). The in-process engine keeps one state and places everything in ``ALL``.

* ``STATELESS``: one block. A result is one document: evaluated where Stage 1 runs,
  with no state at all. The results a stateless query PUBLISHes are documents of
  their stream made right there (``routing``), routed like any other document.
* ``VALUE``: two blocks joined by a value equality (the ``owner_edge``). A match is
  owned by the owner edge's string value: the older document is stored in the group
  of that value, and the newer one probes it there, so each result is found in
  exactly one group (thesis 6.5's R_L slices, partitioned).
* ``TIME``: two blocks joined by no value equality, with a finite window
  (``A JOIN {TRUE, 1h} B``). A match is owned by the time bucket of its older
  document (``time_buckets``): each document is stored in the group of its own
  bucket and probes the groups of the neighbouring ones, so each result is found in
  exactly one group, as a value join's is in its owner value's.
* ``KEYED``: three or more blocks whose value equalities join every block through one
  class of equal values (``key_class``: ``A {a = b} B {b = c} C``, the same author
  three times). Every document of a match holds the match's key value at a node of
  that class, so the match is owned by that value as a two-block match by its owner
  edge's: each document is stored under it in its group, and the newest one finds
  the others there.
* ``COMPOSITE``: three or more blocks without such a class, each block joined to an
  earlier one by a value equality (its **hop edge**, ``hop_links``), or by a finite
  window alone: ``A {a = b} B {c = d} C``,
  ``A {a = b} B {TRUE, 1h} C``. A match of blocks 0..j is a composite event (spec
  3.2) found in the group of hop j's value (or time bucket), and sent, through the
  published spool, to the group of each value (or bucket) hop j + 1 can join it by
  (Hong ch. 4: Cayuga's NEXT keeps a prefix match as an automaton instance indexed by
  what its next edge needs; ``groups.hop_chains``).
* ``CHAIN``: everything else: ``{TRUE, INF}`` joins, and chains with such a hop (no
  value, an INF window): every pair of documents may join there, and no value or time
  bounds them.

Where a query reads from, and whether it PUBLISHes, does not place it: what a join
group publishes is appended to the job's published spool when its batch commits, and
routed like any document in the next micro-batch (docs/architecture.md, "Published
streams").

>>> from xscl.templates.canonical import Template
>>> one = Template((), (0,), (-1,), (True,), ())
>>> two = Template(("JOIN",), (0, 0, 1, 1), (-1, 0, -1, 2), (True, False, True, False), ((1, 3),))
>>> placement_of(one), placement_of(two), owner_edge(two)
('stateless', 'value', (1, 3))
>>> true = Template(("JOIN",), (0, 1), (-1, -1), (True, True), ())
>>> placement_of(true, bounded=True), placement_of(true, bounded=False)
('time', 'chain')
>>> three = Template(("JOIN", "JOIN"), (0, 1, 2), (-1, -1, -1), (True, True, True),
...                  ((0, 1), (1, 2)))
>>> placement_of(three)
'keyed'
>>> hops = Template(("JOIN", "JOIN"), (0, 0, 1, 1, 2), (-1, 0, -1, 2, -1),
...                 (True, False, True, False, True), ((1, 3), (2, 4)))
>>> placement_of(hops), hop_links(hops)
('composite', ((1, 3), (2, 4)))
>>> loose = Template(("JOIN", "JOIN"), (0, 1, 2), (-1, -1, -1), (True, True, True), ((0, 1),))
>>> placement_of(loose, bounded=True), placement_of(loose), hop_links(loose)
('composite', 'chain', ((0, 1), None))
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Literal

from xscl.templates.canonical import Template

if TYPE_CHECKING:
    from xscl.lang.normal_form.model import NormalQuery

Placement = Literal["all", "stateless", "value", "time", "keyed", "composite", "chain"]
ALL: Placement = "all"
STATELESS: Placement = "stateless"
VALUE: Placement = "value"
TIME: Placement = "time"
KEYED: Placement = "keyed"
COMPOSITE: Placement = "composite"
CHAIN: Placement = "chain"


def owner_edge(template: Template) -> tuple[int, int] | None:
    """The value edge whose value places a two-block match (None: no edge joins the blocks).

    >>> owner_edge(Template(("JOIN",), (0, 0, 1, 1), (-1, 0, -1, 2), (True, False, True, False),
    ...                     ((1, 3),)))
    (1, 3)
    """
    return hop_links(template)[0] if template.block_count == 2 else None


def key_class(template: Template) -> tuple[int, ...]:
    """The meta-variables of the first class of values (meta-variables joined by value
    edges, directly or through others) that holds a node of every block; () if none.

    >>> key_class(Template(("JOIN", "JOIN"), (0, 1, 2), (-1, -1, -1), (True, True, True),
    ...                    ((0, 1), (1, 2))))
    (0, 1, 2)
    >>> key_class(Template(("JOIN", "JOIN"), (0, 0, 1, 1, 2), (-1, 0, -1, 2, -1),
    ...                    (True, False, True, False, True), ((1, 3), (2, 4))))
    ()
    """
    root = list(range(template.size))

    def find(meta: int) -> int:
        while root[meta] != meta:
            root[meta] = root[root[meta]]
            meta = root[meta]
        return meta

    for a, b in template.value_edges:
        root[find(a)] = find(b)
    classes: dict[int, list[int]] = {}
    for meta in range(template.size):
        classes.setdefault(find(meta), []).append(meta)
    every = set(range(template.block_count))
    for members in sorted(classes.values()):
        if len(members) > 1 and {template.blocks[m] for m in members} == every:
            return tuple(members)
    return ()


def key_edge(template: Template, role: int) -> tuple[int, int]:
    """A value edge of the key class between block ``role`` and another block: a keyed
    plan's first probe (the new document's key node, then a stored one by its value).

    >>> key_edge(Template(("JOIN", "JOIN"), (0, 1, 2), (-1, -1, -1), (True, True, True),
    ...                   ((0, 1), (1, 2))), 2)
    (1, 2)
    """
    members = set(key_class(template))
    blocks = template.blocks
    for a, b in template.value_edges:
        ends = (blocks[a], blocks[b])
        if a in members and b in members and ends[0] != ends[1] and role in ends:
            return (a, b)
    raise ValueError(f"block {role} has no key edge to another block")


def hop_links(template: Template) -> tuple[tuple[int, int] | None, ...]:
    """Per block r >= 1, its **hop edge**: the first value edge between a node of an
    earlier block and one of block r (``(earlier, r's)``), or None when no value joins
    it to the earlier blocks (its window alone does). A chain's composite event of
    blocks 0..r-1 is joined with block r's document by the value of hop edge r, or by
    time buckets of its window (``groups.hop_chains``).

    >>> hop_links(Template(("JOIN", "JOIN"), (0, 1, 2), (-1, -1, -1), (True, True, True),
    ...                    ((0, 2), (1, 2))))
    (None, (0, 2))
    >>> hop_links(Template(("JOIN", "JOIN"), (0, 1, 2), (-1, -1, -1), (True, True, True),
    ...                    ((0, 1), (0, 2))))
    ((0, 1), (0, 2))
    """
    blocks = template.blocks
    return tuple(
        next(
            ((a, b) for a, b in template.value_edges if blocks[b] == block and blocks[a] < block),
            None,
        )
        for block in range(1, template.block_count)
    )


@lru_cache(maxsize=4096)  # a few templates: placing 100k queries asks it 100k times
def placement_of(template: Template, *, bounded: bool = False) -> Placement:
    """Where a query of ``template`` is evaluated (see the module docstring);
    ``bounded``: every window of a hop without a value equality (``hop_links``) is
    finite."""
    if template.block_count == 1:
        return STATELESS
    if owner_edge(template) is not None:
        return VALUE
    if template.block_count > 2 and key_class(template):
        return KEYED
    if template.block_count > 2 and (bounded or None not in hop_links(template)):
        return COMPOSITE
    return TIME if template.block_count == 2 and bounded else CHAIN


@dataclass(frozen=True)
class Placeable:
    """What placing a query needs: its template, and whether every window of a hop
    without a value equality is finite."""

    template: Template
    bounded: bool

    @classmethod
    def of(cls, normal: NormalQuery, template: Template) -> Placeable:
        """A query's, from its normal form and its template (blocks in query order).

        >>> from xscl.lang.parser import parse_query
        >>> from xscl.templates.shapes import ShapeMemo
        >>> memo = ShapeMemo()
        >>> query = parse_query("q: S//a->x JOIN {x = y, INF} T//b->y JOIN {TRUE, 1h} U//c")
        >>> normal = memo.normal(query)
        >>> Placeable.of(normal, memo.assignment(normal).template).bounded
        True
        """
        links = hop_links(template)
        return cls(
            template,
            all(
                op.window_micros is not None
                for op, link in zip(normal.ops, links, strict=True)
                if link is None
            ),
        )


def place_queries(queries: Mapping[str, Placeable]) -> dict[str, Placement]:
    """Every query's placement: each by its own template and windows.

    >>> one = Template((), (0,), (-1,), (True,), ())
    >>> two = Template(("JOIN",), (0, 1), (-1, -1), (True, True), ((0, 1),))
    >>> place_queries({"pub": Placeable(one, True), "pair": Placeable(two, True)})
    {'pub': 'stateless', 'pair': 'value'}
    """
    return {qid: placement_of(q.template, bounded=q.bounded) for qid, q in queries.items()}
