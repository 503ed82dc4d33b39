"""The keyed chains' matches in a group (``placements.KEYED``, ``key_labels``).

A new document probes, in a group, the key labels of the key values it holds there.
A keyed role plan probes only along the key class's edges (``plans.role_steps``'s
``probe_class``), its first probe from the new document's key node
(``placements.key_edge``): each probe finds the documents stored under that value's
label, and only when the new document probes that label here. The equalities outside
the class are checked as filters. Every document of a match holds the match's key
value and is stored under its label in that label's group, so each match is found
there once, when its newest document arrives, as a two-block match is in its owner
edge's group.

Where it runs: inside a group's ``process`` (``value_group``), once per new document
that probes a key label there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

from xscl.engine.key_labels import key_label
from xscl.engine.matcher import Match, match_document
from xscl.engine.plans import RolePlan
from xscl.engine.state import DocState
from xscl.engine.view_cache import Slice, add_to_slice


def _no_scan() -> Iterable[DocState]:
    return ()


def value_slice(part: Slice, doc: DocState, value: str) -> None:
    """Add ``doc``'s (var, node) pairs whose value is ``value`` to a slice."""
    for var, node, strval in doc.value_rows:
        if strval == value:
            add_to_slice(part, var, doc, node)


def keyed_matches(
    plans: Sequence[RolePlan],
    new: DocState,
    probes: frozenset[str],
    label_slice: Callable[[str, str], Slice],
) -> Iterator[Match]:
    """The matches of the keyed ``plans`` with ``new`` found here (``probes``: what the
    document probes in this group; ``label_slice(label, value)``: the pairs of
    ``value`` in the documents stored under ``label``, the group's batch cache)."""
    keying = {var for var, _node, value in new.value_rows if key_label(value) in probes}
    if not keying:
        return

    def slice_of(value: str) -> Slice:
        label = key_label(value)
        return label_slice(label, value) if label in probes else {}  # else owned elsewhere

    for plan in plans:
        anchor = plan.probe_anchor()
        if anchor is None or keying.isdisjoint(plan.var_counts[anchor]):
            continue  # its first probe starts from no key value held here
        yield from match_document(plan, new, slice_of, _no_scan)
