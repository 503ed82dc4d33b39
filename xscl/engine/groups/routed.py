"""What a join group receives, the protocol every group's logic follows, and the keys.

A routed document (``RoutedDoc``) is one spool record (or, in the chain group, one
record and the results it publishes) sent to one group: its sequence number
(``offset * SEQ_STRIDE + 1``; a published result takes the next numbers), the
newest timestamp its stream had delivered (the eviction horizon's base), the string
values it is stored under in this group (``homes``), the values it probes here
(``probes``: its homes, and for a hot value spread over salts, that value in every
salt's group) and the document as bytes (``codec``).

Group keys are Spark's state keys: a value bucket's placed key (``>= 0``), or one
of the two kinds that are not value buckets: ``CHAIN_GROUP`` and ``PASS_GROUP``
(rows that need no state: dead letters and the parts of stateless results, passed
straight to the sink). ``kind_of`` is the one place a key is read.

>>> kind_of(CHAIN_GROUP), kind_of(PASS_GROUP), kind_of(17)
('chain', 'pass', 'value')
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from xscl.engine.groups.decoded import DecodedDocs
from xscl.engine.groups.stored import GroupMemory
from xscl.engine.output import ResultRecord
from xscl.engine.records import RecordBuilder
from xscl.engine.subscriptions import Subscriptions

#: Documents are numbered ``offset * SEQ_STRIDE + k``: k = 1 for the spool record,
#: 2, 3, ... for the results it publishes (in the chain group).
SEQ_STRIDE = 1 << 20
#: State key of the group evaluating the chain-placed queries.
CHAIN_GROUP = -1
#: Key of the rows that need no state (dead letters, stateless results' parts).
PASS_GROUP = -2

GroupKind = Literal["value", "chain", "pass"]


def kind_of(key: int) -> GroupKind:
    """What a group key stands for."""
    if key == CHAIN_GROUP:
        return "chain"
    if key == PASS_GROUP:
        return "pass"
    return "value"


def spool_offset(seq: int) -> int:
    """The spool record a document number comes from (a published result: its cause's).

    >>> spool_offset(7 * SEQ_STRIDE + 3)
    7
    """
    return seq // SEQ_STRIDE


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
    job); afterwards ``snapshot`` is the group's new state (None: nothing stored) and
    ``hot_values`` the values it found hot. Nothing it does depends on how the
    documents were batched.
    """

    def process(self, docs: Sequence[RoutedDoc]) -> Iterator[ResultRecord]: ...

    def snapshot(self) -> bytes | None: ...

    def hot_values(self) -> list[str]: ...


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
    #: the worker's decoded value-group documents of this job (None: decode each time)
    decoded: DecodedDocs | None = None
    #: the worker's live group states of this job, and this group's key (``stored``)
    memory: GroupMemory[Any] | None = None
    group: int = 0


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
    if lateness is None or reach is None or not docs:
        return None
    bound = lateness + reach
    return min(d.newest for d in docs) - bound, max(d.newest for d in docs) - bound
