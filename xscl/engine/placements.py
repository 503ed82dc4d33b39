"""Where a query is evaluated when the join state is partitioned (the Spark job).

Every query is *placed* by what a partition needs to evaluate it, so one template's
queries may sit in several places (a PUBLISH query shares its template with plain
ones). The in-process engine keeps one state and places everything in ``ALL``.

* ``STATELESS``: one block, publishing nothing and reading no published stream. A
  result is one document: evaluated where Stage 1 runs, with no state at all.
* ``VALUE``: two blocks joined by a value equality (the ``owner_edge``), same
  conditions. A match is owned by the owner edge's string value: the older document
  is stored in the group of that value, and the newer one probes it there, so each
  result is found in exactly one group (thesis 6.5's R_L slices, partitioned).
* ``TIME``: two blocks joined by no value equality, with a finite window
  (``A JOIN {TRUE, 1h} B``). A match is owned by the time bucket of its older
  document (``time_buckets``): each document is stored in the group of its own
  bucket and probes the groups of the neighbouring ones, so each result is found in
  exactly one group, as a value join's is in its owner value's.
* ``CHAIN``: everything else: three or more blocks, ``{TRUE, INF}`` joins, PUBLISH and
  the queries reading published streams.

>>> from xscl.templates.canonical import Template
>>> one = Template((), (0,), (-1,), (True,), ())
>>> two = Template(("JOIN",), (0, 0, 1, 1), (-1, 0, -1, 2), (True, False, True, False), ((1, 3),))
>>> placement_of(one, reads_published=False, publishes=False), owner_edge(two)
('stateless', (1, 3))
>>> placement_of(two, reads_published=False, publishes=True)
'chain'
>>> true = Template(("JOIN",), (0, 1), (-1, -1), (True, True), ())
>>> placement_of(true, reads_published=False, publishes=False, bounded=True)
'time'
>>> placement_of(true, reads_published=False, publishes=False, bounded=False)
'chain'
"""

from __future__ import annotations

from typing import Literal

from xscl.templates.canonical import Template

Placement = Literal["all", "stateless", "value", "time", "chain"]
ALL: Placement = "all"
STATELESS: Placement = "stateless"
VALUE: Placement = "value"
TIME: Placement = "time"
CHAIN: Placement = "chain"


def owner_edge(template: Template) -> tuple[int, int] | None:
    """The value edge whose value places a two-block match (None: no edge joins the blocks).

    >>> owner_edge(Template(("JOIN",), (0, 0, 1, 1), (-1, 0, -1, 2), (True, False, True, False),
    ...                     ((1, 3),)))
    (1, 3)
    """
    if template.block_count != 2:
        return None
    for a, b in template.value_edges:
        if template.blocks[a] != template.blocks[b]:
            return (a, b)
    return None


def placement_of(
    template: Template, *, reads_published: bool, publishes: bool, bounded: bool = False
) -> Placement:
    """Where a query of ``template`` is evaluated (see the module docstring);
    ``bounded``: every window of the query is finite."""
    if publishes or reads_published:
        return CHAIN
    if template.block_count == 1:
        return STATELESS
    if owner_edge(template) is not None:
        return VALUE
    return TIME if template.block_count == 2 and bounded else CHAIN
