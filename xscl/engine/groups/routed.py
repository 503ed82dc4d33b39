"""What a join group receives, the protocol every group's logic follows, and the keys.

A routed document (``RoutedDoc``) is one spool record (or, in the chain group, one
record and the results it publishes) sent to one group: its sequence number
(``offset * SEQ_STRIDE + 1``; a published result takes the next numbers), the
newest timestamp its stream had delivered (the eviction horizon's base), the string
values it is stored under in this group (``homes``), the values it probes here
(``probes``: its homes, and for a hot value spread over salts, that value in every
salt's group) and the document as bytes (``codec``).

The group keys and the numbering are ``keys`` (re-exported here).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from xscl.engine.groups.composites import Composite
from xscl.engine.groups.decoded import DecodedDocs
from xscl.engine.groups.join_plans import PlanChoice
from xscl.engine.groups.keys import (
    CHAIN_GROUP,
    PASS_GROUP,
    SEQ_STRIDE,
    GroupKind,
    kind_of,
    spool_offset,
)
from xscl.engine.groups.stored import GroupMemory
from xscl.engine.output import ResultRecord
from xscl.engine.records import RecordBuilder
from xscl.engine.subscriptions import Subscriptions

__all__ = [
    "CHAIN_GROUP",
    "PASS_GROUP",
    "SEQ_STRIDE",
    "DocumentStore",
    "GroupContext",
    "GroupKind",
    "GroupLogic",
    "RoutedDoc",
    "horizons",
    "kind_of",
    "lateness_bases",
    "spool_offset",
]


@dataclass(frozen=True)
class RoutedDoc:
    """One document routed to one group (see the module docstring)."""

    seq: int
    newest: int
    homes: tuple[str, ...]
    probes: tuple[str, ...]
    data: bytes


class GroupLogic(Protocol):
    """A group's logic for one micro-batch, built from the group's snapshot.

    ``process`` yields the batch's result records (each result once in the whole
    job); afterwards ``snapshot`` is the group's new state (None: nothing stored),
    ``hot_values`` the values it found hot and ``composites`` the composite events it
    made (``hop_chains``: published for the next micro-batch). Nothing it does depends on how the
    documents were batched.
    """

    def process(self, docs: Sequence[RoutedDoc]) -> Iterator[ResultRecord]: ...

    def snapshot(self) -> bytes | None: ...

    def hot_values(self) -> list[str]: ...

    def composites(self) -> list[Composite]: ...


class DocumentStore(Protocol):
    """Where a matched document's XML is read back (the spool, by sequence number)."""

    def xml(self, seq: int) -> str: ...


@dataclass(frozen=True)
class GroupContext:
    """What a group's logic works with besides its snapshot and documents."""

    subscriptions: Subscriptions
    documents: DocumentStore
    records: RecordBuilder
    allowed_lateness: int | None
    #: a value with more documents stored under it here is reported hot (None: never)
    hot_threshold: int | None = None
    #: the worker's decoded documents of this job and group kind (None: decode each time)
    decoded: DecodedDocs | None = None
    #: the worker's live group states of this job, and this group's key (``stored``)
    memory: GroupMemory[Any] | None = None
    group: int = 0
    #: which keyed chains match their last block through kept prefixes (None: none,
    #: every plan probes; ``join_plans``)
    join_plans: PlanChoice | None = None


def lateness_bases(lateness: int | None, docs: Sequence[RoutedDoc]) -> tuple[int, int] | None:
    """The earliest timestamp a later document may have, before matching the batch and
    after it: the smallest and the largest newest timestamp of the batch's documents,
    less ``lateness`` (None: no lateness, keep everything). ``horizons`` subtracts a
    reach from both. While a join group publishes, the job's source gives every row of
    a batch the same newest, the batch's eviction floor, so both bounds are the floor's
    (``spark_plugin.job.published_floor``).

    >>> lateness_bases(10, [RoutedDoc(1, 100, (), (), b""), RoutedDoc(2, 120, (), (), b"")])
    (90, 110)
    """
    if lateness is None or not docs:
        return None
    return min(d.newest for d in docs) - lateness, max(d.newest for d in docs) - lateness


def horizons(
    lateness: int | None, reach: int | None, docs: Sequence[RoutedDoc]
) -> tuple[int, int] | None:
    """Eviction horizons of a batch: (before matching, after it); None keeps everything.

    A document with newest timestamp n (its own or its stream's before it) that is not
    late can only join documents at or after ``n - lateness - reach``. The first bound
    is the smallest of these over the batch's documents (an early one may still join
    what a later one cannot); the second, the largest, holds for every later batch too
    (newest timestamps only grow).

    >>> horizons(10, 5, [RoutedDoc(1, 100, (), (), b""), RoutedDoc(2, 120, (), (), b"")])
    (85, 105)
    """
    bases = lateness_bases(lateness, docs)
    if bases is None or reach is None:
        return None
    return bases[0] - reach, bases[1] - reach
