"""What ``xscl explain --sharing`` prints: counts, the largest sharing groups, how they were found.

Both ways of finding the groups end here: ``in_process`` summarises the oracle's
groups of compiled queries (``keys``); the Spark side (``registry``) aggregates on
the executors and collects only the few rows this summary holds. Groups are ordered
by size, largest first, then by their smallest query id; a group shows its first
``QIDS_SHOWN`` query ids in sorted order.

Where it runs: the driver (or the CLI without Spark), once per command.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from xscl.service.compiled.table import CompiledQuery
from xscl.service.sharing.keys import DEFINITION, STREAM, TEMPLATE, groups, live_keys

__all__ = ["IN_PROCESS", "QIDS_SHOWN", "GroupSummary", "SharingSummary", "in_process"]

#: Query ids shown per group.
QIDS_SHOWN = 5
#: The name of the in-process implementation (``keys.groups``).
IN_PROCESS = "union-find (in process)"


@dataclass(frozen=True)
class GroupSummary:
    """One sharing group: its size, the distinct templates and definitions its queries
    use, and its first query ids."""

    size: int
    templates: int
    definitions: int
    qids: tuple[str, ...]


@dataclass(frozen=True)
class SharingSummary:
    """The sharing groups of a set of live queries (see the module docstring)."""

    queries: int
    templates: int
    definitions: int
    #: streams a live query PUBLISHes
    published_streams: int
    groups: int
    singletons: int
    largest: tuple[GroupSummary, ...]
    implementation: str
    #: rounds of the components algorithm (None: it does not say)
    rounds: int | None
    seconds: float
    #: live queries missing from the graph: their subscribe event is not compiled
    not_compiled: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def lines(self) -> list[str]:
        """The summary as text."""
        out = [
            f"queries            {self.queries:>12,}",
            f"templates          {self.templates:>12,}",
            f"definitions        {self.definitions:>12,}",
            f"published streams  {self.published_streams:>12,}",
            f"sharing groups     {self.groups:>12,}  ({self.singletons:,} of one query)",
        ]
        if self.not_compiled:
            out.append(f"not compiled       {self.not_compiled:>12,}  (not in the groups)")
        if self.largest:
            out.append(f"largest groups (of {self.groups:,}):")
            out.append("         size  templates  definitions  queries")
            for group in self.largest:
                more = ", ..." if group.size > len(group.qids) else ""
                out.append(
                    f"  {group.size:>11,}  {group.templates:>9,}  {group.definitions:>11,}  "
                    f"{', '.join(group.qids)}{more}"
                )
        rounds = "" if self.rounds is None else f", {self.rounds} round(s)"
        out.append(f"found by {self.implementation}{rounds} in {self.seconds:.2f} s")
        return out


def in_process(queries: Sequence[CompiledQuery], top: int) -> SharingSummary:
    """The summary of ``queries`` (live, compiled) from the union-find oracle."""
    started = time.perf_counter()
    keys = live_keys(queries)
    found = groups((qid, key) for qid, its in keys.items() for key in its)
    seconds = time.perf_counter() - started
    summaries = []
    for members in found:
        kinds = Counter(kind for kind, _ in {k for qid in members for k in keys[qid]})
        summaries.append(
            GroupSummary(
                len(members),
                kinds[TEMPLATE],
                kinds[DEFINITION],
                tuple(sorted(members)[:QIDS_SHOWN]),
            )
        )
    summaries.sort(key=lambda g: (-g.size, g.qids[0]))
    every = Counter(kind for kind, _ in {k for its in keys.values() for k in its})
    return SharingSummary(
        queries=len(queries),
        templates=every[TEMPLATE],
        definitions=every[DEFINITION],
        published_streams=every[STREAM],
        groups=len(found),
        singletons=sum(1 for g in found if len(g) == 1),
        largest=tuple(summaries[:top]),
        implementation=IN_PROCESS,
        rounds=None,
        seconds=seconds,
    )
