"""The join groups' keys and the documents' numbering (no other import: the Spark
job's planner processes read these).

Group keys are Spark's state keys: a value bucket's placed key (``>= 0``), or one of
the two kinds that are not value buckets: ``CHAIN_GROUP`` and ``PASS_GROUP`` (rows that
need no state: dead letters and the parts of stateless results, passed straight to
the sink). ``kind_of`` is the one place a key is read.

>>> kind_of(CHAIN_GROUP), kind_of(PASS_GROUP), kind_of(17)
('chain', 'pass', 'value')
>>> spool_offset(7 * SEQ_STRIDE + 3)
7
>>> spool_offset(published_offset(5) * SEQ_STRIDE + 1) - PUBLISHED_BASE
5
"""

from __future__ import annotations

from typing import Literal

#: Documents are numbered ``offset * SEQ_STRIDE + k``: k = 1 for the spool record;
#: 2, 3, ... for the results stateless queries publish from it where Stage 1 runs
#: (``routing``), below ``PUBLISHED_PER_RECORD``. A result a join group publishes is a record
#: of the job's published spool, read back in the next micro-batch: its offset there,
#: plus ``PUBLISHED_BASE``, is its ``offset`` (``published_offset``).
SEQ_STRIDE = 1 << 20
#: How many results the stateless queries may publish from one record (see ``SEQ_STRIDE``;
#: numbers from here up were the chain group's, which no longer publishes inline).
PUBLISHED_PER_RECORD = SEQ_STRIDE // 2
#: Where the published spool's records are numbered from: above any input spool offset
#: (2^42 records), and ``(PUBLISHED_BASE + offset) * SEQ_STRIDE`` still fits a BIGINT.
PUBLISHED_BASE = 1 << 42
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
    """The spool record a document number comes from (a result a stateless query
    published: its cause's; ``PUBLISHED_BASE`` and up: a record of the published spool)."""
    return seq // SEQ_STRIDE


def published_offset(offset: int) -> int:
    """The ``offset`` a record of the job's published spool is routed and numbered by."""
    return PUBLISHED_BASE + offset
