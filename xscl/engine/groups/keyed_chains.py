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

**A hot key** ``L`` of value ``v`` (``key_labels``: "store everywhere, probe one").
A document routed after ``L`` turned hot (post-hot) is stored under the spread label
``H`` in the group of every salt of ``L`` and probes ``L`` in salt 0's group and ``H``
in its own salt's group (both, when they are one group); one routed before (pre-hot)
is stored under ``L`` in salt 0's group and probes ``L`` there. The matching runs one
pass per key label probed here (``passes``):

* pass ``L``: ``v``'s slice is the documents stored here under ``L`` and under ``H``;
  a match is kept only when at least one of its documents, the new one included, is
  stored here under ``L`` (is pre-hot);
* pass ``H``: ``v``'s slice is the documents stored here under ``H`` only.

Each match is found exactly once. Let ``n`` be its newest document (the one whose
arrival finds it; every other one was stored before, in every group it was routed to).
If ``n`` is pre-hot it probes only ``L``, in salt 0's group, where every pre-hot
document is stored under ``L`` and every post-hot one under ``H``: pass ``L`` finds
it (``n`` itself is under ``L``). If ``n`` is post-hot and some document of the match
is pre-hot, only salt 0's group holds that one (under ``L``): pass ``L`` finds it there
(the post-hot ones are under ``H`` in every group), and pass ``H`` in ``n``'s own
salt's group cannot (a document is missing from ``H``). If every document is post-hot,
each is stored under ``H`` in every group: pass ``H`` in ``n``'s own salt's group finds
it, pass ``L`` rejects it (no document under ``L``), and no other group has ``n``
probe ``H``. Pass ``L`` of a post-hot document is skipped once every pre-hot document
here is older than the plans' widest window allows (no match can hold one), so salt
0's group stops doing the key's whole work when its pre-hot documents age, evicted or
not; a key is spread only when every keyed plan's windows are finite (``routing``), so
that this always happens. Eviction is per stored document (``stored``) and a copy is evicted only
when no later document can join it, so nothing more is needed (docs/architecture.md,
"Chains keyed by a value").

Where it runs: inside a group's ``process`` (``value_group``), once per new document
that probes a key label there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from xscl.engine.key_labels import is_spread_label, key_label, spread_label
from xscl.engine.matcher import Match, match_document, no_stored
from xscl.engine.plans import RolePlan
from xscl.engine.state import DocState
from xscl.engine.view_cache import Slice, add_to_slice


def value_slice(part: Slice, doc: DocState, value: str) -> None:
    """Add ``doc``'s (var, node) pairs whose value is ``value`` to a slice."""
    for var, node, strval in doc.value_rows:
        if strval == value:
            add_to_slice(part, var, doc, node)


def value_only(value: str, part: Slice) -> Callable[[str], Slice]:
    """A matcher's ``slice_of`` that holds ``part`` for ``value`` and nothing for any
    other value (a pass probes its own key value only).

    >>> slice_of = value_only("ab", {3: []})
    >>> slice_of("ab"), slice_of("cd")
    ({3: []}, {})
    """

    def slice_of(probed: str) -> Slice:
        return part if probed == value else {}

    return slice_of


def passes(new: DocState, probes: frozenset[str]) -> dict[str, tuple[str, set[int]]]:
    """The key labels ``new`` probes here: label -> (its value, the var ids at which
    ``new`` holds that value).

    >>> doc = DocState("S", "d", 0, "", 1)
    >>> doc.value_rows = [(3, "0", "ab"), (4, "1", "cd"), (5, "2", "ab")]
    >>> passes(doc, frozenset({"#ab", "#*ab", "#ef"}))
    {'#ab': ('ab', {3, 5}), '#*ab': ('ab', {3, 5})}
    """
    out: dict[str, tuple[str, set[int]]] = {}
    for var, _node, value in new.value_rows:
        for label in (key_label(value), spread_label(value)):
            if label in probes:
                out.setdefault(label, (value, set()))[1].add(var)
    return out


#: How a keyed plan's matches with a new document are found in one pass: (plan, new
#: document, the pass's slice, its label, its key value) -> the matches
Runner = Callable[[RolePlan, DocState, Callable[[str], Slice], str, str], Iterable[Match]]


def probe(
    plan: RolePlan, new: DocState, slice_of: Callable[[str], Slice], _label: str, _value: str
) -> Iterable[Match]:
    """The MJoin plan: walk the pass's stored documents (``groups.join_plans``)."""
    return match_document(plan, new, slice_of, no_stored)


def keyed_matches(
    plans: Sequence[RolePlan],
    new: DocState,
    probes: frozenset[str],
    homes: frozenset[str],
    pass_slice: Callable[[str, str], Slice],
    stored_under: Callable[[str], Mapping[int, int]],
    reach: int | None,
    run: Runner | None = None,
) -> Iterator[Match]:
    """The matches of the keyed ``plans`` with ``new`` found here (``probes``, ``homes``:
    what the document probes and is stored under in this group;
    ``pass_slice(label, value)``: the pairs of ``value`` in the documents of the pass of
    ``label`` (see the module docstring), the group's batch cache;
    ``stored_under(label)``: sequence number -> timestamp of the documents stored here
    under ``label``; ``reach``: the plans' widest window, None: INF; ``run``: how a
    plan's matches are found in a pass, by default ``probe``)."""
    run = run or probe
    for label, (value, keying) in passes(new, probes).items():
        # pass H, or pass L of a pre-hot ``new``: every match; else only those with a
        # pre-hot document
        every = is_spread_label(label) or label in homes
        pre_hot = {} if every else stored_under(label)
        if not every and not pre_hot:
            continue  # no pre-hot document here: every match is all post-hot
        if not every and reach is not None and max(pre_hot.values()) < new.ts - reach:
            continue  # every pre-hot document is out of every window: the same
        slice_of = value_only(value, pass_slice(label, value))  # another value: its own pass
        for plan in plans:
            anchor = plan.probe_anchor()
            if anchor is None or keying.isdisjoint(plan.var_counts[anchor]):
                continue  # its first probe starts from no key value held here
            for match in run(plan, new, slice_of, label, value):
                if every or any(doc.seq in pre_hot for doc in match[1]):
                    yield match
