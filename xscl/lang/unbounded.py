"""Joins whose state grows without bound: a warning when they are subscribed, not an error.

A join with no value condition and an INF window (``A JOIN {TRUE, INF} B``) pairs every
document of one side with every document of the other, forever: its results grow with
the product of the two streams, nothing it stores is ever evicted, and with no value
and no window to partition by it runs in one partition (docs/architecture.md, "The
chain group"). It is valid XSCL (docs/language.md, "Joins across documents"), so it is
accepted; ``xscl subscribe``, ``xscl check`` and the API say so once, with the
operator's line and column.

>>> from xscl.lang.parser import parse_queries
>>> (q,) = parse_queries("Q: S//a->x JOIN {TRUE, INF} S//b->y;")
>>> (line,) = unbounded_joins(q)
>>> line[:58]
'Q (line 1, column 12): JOIN {TRUE, INF} pairs every two do'
"""

from __future__ import annotations

from xscl.lang.ast import Query


def unbounded_joins(query: Query, name: str | None = None) -> list[str]:
    """One line per operator of ``query`` with no value condition and an INF window
    (``name``: how the query is named to its reader; default its id)."""
    lines = []
    for op in query.ops:
        if op.equalities or not op.window.is_infinite:
            continue
        where = "" if op.span is None else f" (line {op.span.line}, column {op.span.column})"
        lines.append(
            f"{name or query.qid}{where}: {op.kind} {{TRUE, INF}} pairs every two documents of its "
            "sides and keeps them all; give it a window or a value condition"
        )
    return lines
