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
"""

from __future__ import annotations

from typing import Literal

#: Documents are numbered ``offset * SEQ_STRIDE + k``: k = 1 for the spool record;
#: 2, 3, ... for the results stateless queries publish from it where Stage 1 runs
#: (``routing``), below ``CHAIN_PUBLISHED``; ``CHAIN_PUBLISHED`` + 1, + 2, ... for those
#: the chain group publishes from it and from them.
SEQ_STRIDE = 1 << 20
#: Where the chain group's numbers of published results start (see ``SEQ_STRIDE``).
CHAIN_PUBLISHED = SEQ_STRIDE // 2
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
    """The spool record a document number comes from (a published result: its cause's)."""
    return seq // SEQ_STRIDE
