"""Where ``xscl serve`` evaluates each query of a file, in words (``xscl explain``).

The placement (``placements``) decides whether a query's work spreads over the job's
partitions or runs in its one chain group; a user writing a chain wants to know which
before subscribing thousands of them.

>>> from xscl.lang.parser import parse_queries
>>> text = '''
... one: S//item[./a = 'x'];
... pair: S//item[./a->x] JOIN {x = y, 1h} T//item[./a->y];
... three: S//item[./a->x] FOLLOWED BY {x = y, 1d} S//item[./a->y]
...        FOLLOWED BY {y = z, 1d} S//item[./a->z];
... near: S//item JOIN {TRUE, 1h} T//item;
... ever: S//item JOIN {TRUE, INF} T//item;
... two: S//item[./a->x][./b->p] JOIN {x = y, 1h} T//item[./a->y]
...      JOIN {p = q, 1h} U//item[./b->q];
... loose: S//item[./a->x] JOIN {x = y, 1h} T//item[./a->y] JOIN {TRUE, 1h} U//item;
... forever: S//item[./a->x] JOIN {x = y, 1h} T//item[./a->y] JOIN {TRUE, INF} U//item;
... mixed: S//item[./a->x] JOIN {x = y, INF} T//item[./a->y] JOIN {TRUE, 1h} U//item;
... busy: S//item[./a->x] JOIN {x = y, 1h} S//item[./a->y] PUBLISH B;
... '''
>>> print(placement_report(parse_queries(text)))  # doctest: +NORMALIZE_WHITESPACE
Where `xscl serve` evaluates each query (docs/architecture.md, "The join state partitioned"):
  one: where Stage 1 runs, with no join state (one block)
  pair: the value groups, partitioned by the value of x = y
  three: the value groups, partitioned by the value of x = y = z (a keyed chain); its
    last block probes the other blocks' documents or checks the kept matches of the
    first blocks, whichever each group measures cheaper (--join-plan)
  near: the value groups, partitioned by time buckets of its window
  ever: the chain group: one partition holding every document of its streams
    (docs/architecture.md, "The chain group"), because its join has no value condition
    and an INF window
  two: the value groups, one hop at a time: partitioned by the value of x = y, then
    p = q; a match of the first blocks goes on to the next hop's value as a composite
    event from the next micro-batch
  loose: the value groups, one hop at a time: partitioned by the value of x = y, then
    time buckets of its window; a match of the first blocks goes on to the next hop's
    value as a composite event from the next micro-batch
  forever: the chain group: one partition holding every document of its streams
    (docs/architecture.md, "The chain group"), because a hop of its 3 blocks has no
    value condition and an INF window
  mixed: the value groups, one hop at a time: partitioned by the value of x = y, then
    time buckets of its window; a match of the first blocks goes on to the next hop's
    value as a composite event from the next micro-batch
  busy: the value groups, partitioned by the value of x = y; its results are documents
    of B from the next micro-batch
"""

from __future__ import annotations

from collections.abc import Sequence

from xscl.engine.placements import (
    CHAIN,
    COMPOSITE,
    KEYED,
    STATELESS,
    TIME,
    VALUE,
    Placeable,
    hop_links,
    key_class,
    owner_edge,
    place_queries,
)
from xscl.engine.prefix_plans import prefix_key_class
from xscl.lang.ast import Query
from xscl.templates.assign import TemplateAssignment
from xscl.templates.shapes import ShapeMemo

_CHAIN_WHY = (
    "the chain group: one partition holding every document of its streams "
    '(docs/architecture.md, "The chain group")'
)


def placement_report(queries: Sequence[Query]) -> str:
    """One line per query: where the Spark job evaluates it, and why."""
    shapes = ShapeMemo()
    normals = {q.qid: shapes.normal(q) for q in queries}
    assignments = {qid: shapes.assignment(normal) for qid, normal in normals.items()}
    places = place_queries(
        {qid: Placeable.of(normals[qid], a.template) for qid, a in assignments.items()}
    )
    lines = [
        "Where `xscl serve` evaluates each query "
        '(docs/architecture.md, "The join state partitioned"):'
    ]
    for query in queries:
        why = _why(places[query.qid], assignments[query.qid])
        if query.publish is not None:
            why += f"; {_published(places[query.qid], query.publish)}"
        lines.append(f"  {query.qid}: {why}")
    return "\n".join(lines)


def _published(where: str, stream: str) -> str:
    """Where a query's PUBLISHed results become documents of ``stream``."""
    if where == STATELESS:
        return f"its results are documents of {stream} made there"
    return f"its results are documents of {stream} from the next micro-batch"


def _why(where: str, assignment: TemplateAssignment) -> str:
    template, names = assignment.template, assignment.names
    if where == STATELESS:
        return "where Stage 1 runs, with no join state (one block)"
    if where == VALUE:
        edge = owner_edge(template)
        assert edge is not None
        return f"the value groups, partitioned by the value of {names[edge[0]]} = {names[edge[1]]}"
    if where == TIME:
        return "the value groups, partitioned by time buckets of its window"
    if where == KEYED:
        key = " = ".join(names[m] for m in key_class(template))
        said = f"the value groups, partitioned by the value of {key} (a keyed chain)"
        if prefix_key_class(template):
            said += (
                "; its last block probes the other blocks' documents or checks the kept "
                "matches of the first blocks, whichever each group measures cheaper "
                "(--join-plan)"
            )
        return said
    if where == COMPOSITE:
        hops = ", then ".join(
            "time buckets of its window" if edge is None else f"{names[edge[0]]} = {names[edge[1]]}"
            for edge in hop_links(template)
        )
        return (
            "the value groups, one hop at a time: partitioned by the value of "
            f"{hops}; a match of the first blocks goes on to the next hop's value as a "
            "composite event from the next micro-batch"
        )
    assert where == CHAIN
    if template.block_count == 2:
        return f"{_CHAIN_WHY}, because its join has no value condition and an INF window"
    return (
        f"{_CHAIN_WHY}, because a hop of its {template.block_count} blocks has no value "
        "condition and an INF window"
    )
