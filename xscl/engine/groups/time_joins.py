"""The time-placed joins' matches in a group (``placements.TIME``, ``time_buckets``).

A new document probes, in a group, the time labels routing gave it there. Per class,
the plans of the time-placed templates scan the documents stored under those labels
(the group's ``StoredDocs``, by label) and keep the matches whose R_T row is of that
class: a query's matches are found only through its own class's labels, so each is
found once, in the group of the label its older-arriving document is stored under
(``time_buckets``).

Where it runs: inside a group's ``process`` (``value_group``), once per new document
that probes a time label there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

from xscl.engine.groups.stored import StoredDoc, StoredDocs
from xscl.engine.matcher import Match, match_document, no_slice
from xscl.engine.plans import RolePlan
from xscl.engine.state import DocState
from xscl.engine.time_buckets import is_label, label_class, row_class


def time_matches(
    plans: Sequence[RolePlan],
    new: DocState,
    probes: Iterable[str],
    stored: StoredDocs,
    state_of: Callable[[StoredDoc], DocState],
) -> Iterator[Match]:
    """The matches of the time-placed ``plans`` with ``new`` found here (``probes``: what
    the document probes in this group; its values are not looked at)."""
    by_class: dict[int, list[str]] = {}
    for label in probes:
        if is_label(label):
            by_class.setdefault(label_class(label), []).append(label)
    for width, labels in by_class.items():

        def scan(labels: list[str] = labels) -> Iterator[DocState]:
            for label in labels:
                for position in stored.index.get(label, ()):
                    yield state_of(stored.docs[position])

        for plan in plans:
            for match in match_document(plan, new, no_slice, scan):
                if row_class(match[0]) == width:
                    yield match
