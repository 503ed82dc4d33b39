"""A keyed chain's prefix matches kept in one group: the cache plan (Babu 2005 §5.5,
A-Caching; the plans: ``engine.prefix_plans``).

Per key label probed in the group (a *pass*, ``keyed_chains``), the cache holds every
match of the template's first K - 1 blocks among the documents of that pass, as the
tuple of its documents in block order. A new document of the last block is then
checked against those tuples only, by the full template's last-role plan restricted
to each tuple's documents (``complete``), instead of walking every stored document of
the other blocks (probing). Both give the same matches:

* a full match's first K - 1 documents are a match of the prefix (left-associative
  chains), all holding the key value, so they are a tuple of the pass when the last
  document arrives: it was added when its newest document was stored (``add``), or
  built from the stored documents (``build``), and it leaves only when one of its
  documents is evicted (``keep_only``), which happens only when no later document can
  join it;
* a tuple yields only the matches whose first K - 1 documents are exactly it, in its
  block order, so a match is found through one tuple.

The cache is derived state: it lives in the worker's memory with the group's documents
(``stored.GroupMemory``), never in the snapshot, and a worker without it builds it
from the stored documents. Which templates a group caches is the plan choice's
(``groups.join_plans``); the results never depend on it.

Where it runs: in a value group's batch (``value_group``), per new document of a
cached template's blocks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from xscl.engine.groups.keyed_chains import value_only, value_slice
from xscl.engine.matcher import Match, match_document, no_stored
from xscl.engine.plans import RolePlan
from xscl.engine.prefix_plans import PrefixPlans
from xscl.engine.state import DocState
from xscl.engine.view_cache import Slice

#: Bytes one kept tuple costs, about: its dict entry, the key of sequence numbers and
#: the tuple of documents (measured with ``sys.getsizeof`` for three blocks; the
#: documents themselves are the group's)
TUPLE_BYTES = 260

Tuple = tuple[DocState, ...]


class PrefixCache:
    """One keyed template's prefix matches in one group (see the module docstring)."""

    def __init__(self, plans: PrefixPlans) -> None:
        self.plans = plans
        #: pass label -> the sequence numbers of a prefix match -> its documents
        self.tables: dict[str, dict[tuple[int, ...], Tuple]] = {}

    @property
    def size(self) -> int:
        """How many prefix matches are kept."""
        return sum(len(table) for table in self.tables.values())

    @property
    def bytes(self) -> int:
        return self.size * TUPLE_BYTES

    def add(self, label: str, new: DocState, slice_of: Callable[[str], Slice]) -> None:
        """Keep the prefix matches ``new`` makes with the documents of pass ``label``
        (``slice_of``: that pass's slice, without ``new``)."""
        table = self.tables.setdefault(label, {})
        for match in self._prefix_matches(new, slice_of):
            docs = match[1]
            table.setdefault(tuple(d.seq for d in docs), docs)

    def build(self, label: str, docs: Iterable[DocState], slice_of: Callable[[str], Slice]) -> None:
        """The prefix matches among the documents of pass ``label`` (``slice_of``: the
        pass's slice, with all of them): each found once, from its newest document."""
        table = self.tables.setdefault(label, {})
        for doc in docs:
            for match in self._prefix_matches(doc, slice_of):
                found = match[1]
                if max(d.seq for d in found) == doc.seq:
                    table.setdefault(tuple(d.seq for d in found), found)

    def _prefix_matches(self, new: DocState, slice_of: Callable[[str], Slice]) -> Iterator[Match]:
        for plan in self.plans.plans:
            yield from match_document(plan, new, slice_of, no_stored)

    def complete(self, plan: RolePlan, new: DocState, label: str, value: str) -> Iterator[Match]:
        """The full matches of the last-role ``plan`` with ``new``, through the prefix
        matches of pass ``label`` (key ``value``)."""
        for seqs, members in self.tables.get(label, {}).items():
            part: Slice = {}
            for member in members:
                value_slice(part, member, value)
            for match in match_document(plan, new, value_only(value, part), no_stored):
                if tuple(d.seq for d in match[1][:-1]) == seqs:
                    yield match

    def keep_only(self, stored: set[int]) -> None:
        """Drop the prefix matches with a document no longer stored (evicted)."""
        for label, table in list(self.tables.items()):
            gone = [seqs for seqs in table if not stored.issuperset(seqs)]
            for seqs in gone:
                del table[seqs]
            if not table:
                del self.tables[label]
