"""Which state partition a join group lands on, so the groups can be spread evenly.

Spark places a group of the stateful operator by ``pmod(murmur3(key, seed 42),
partitions)`` (``HashPartitioning`` of the grouping key; a streaming query runs
without adaptive execution, so nothing regroups them). Value buckets hashed to
arbitrary integer keys land unevenly — 16 groups over 4 partitions often put 6 on
one and 2 on another — so the slowest join task waits for three times the mean
work. ``group_keys`` picks, for bucket ``b``, a key that lands on partition
``b mod partitions``: every partition gets the same number of buckets, and what is
left of the skew is the values themselves (hot values are spread by salting).

``spark_hash_int`` is Spark's ``Murmur3_x86_32.hashInt`` (tested against
``spark_partition_id()``).

Where it runs: ``group_keys`` on the driver, once per job start (``plan.start_job``; a
few microseconds per bucket); the keys it picks travel in the source tasks' ``RouteTask``.

>>> [partition_of(k, 4) for k in group_keys(8, 4)]
[0, 1, 2, 3, 0, 1, 2, 3]
"""

from __future__ import annotations

from functools import lru_cache

_SEED = 42
_MASK = 0xFFFFFFFF


def _rotl(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (32 - bits))) & _MASK


def spark_hash_int(value: int, seed: int = _SEED) -> int:
    """Spark's Murmur3 hash of a 32-bit integer (signed, as Spark returns it).

    >>> spark_hash_int(0), spark_hash_int(1)
    (933211791, -559580957)
    """
    k1 = _rotl((value & _MASK) * 0xCC9E2D51 & _MASK, 15) * 0x1B873593 & _MASK
    h1 = (_rotl(seed ^ k1, 13) * 5 + 0xE6546B64) & _MASK
    h1 ^= 4
    h1 ^= h1 >> 16
    h1 = h1 * 0x85EBCA6B & _MASK
    h1 ^= h1 >> 13
    h1 = h1 * 0xC2B2AE35 & _MASK
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 >= 1 << 31 else h1


def partition_of(key: int, partitions: int) -> int:
    """The state partition Spark gives the group of integer ``key``."""
    return spark_hash_int(key) % partitions


@lru_cache(maxsize=8)
def group_keys(buckets: int, partitions: int) -> tuple[int, ...]:
    """For each bucket ``b``, a distinct non-negative key on partition ``b % partitions``."""
    free: dict[int, list[int]] = {p: [] for p in range(partitions)}
    keys: list[int] = []
    candidate = 0
    for bucket in range(buckets):
        wanted = bucket % partitions
        while not free[wanted]:
            free[partition_of(candidate, partitions)].append(candidate)
            candidate += 1
        keys.append(free[wanted].pop(0))
    return tuple(keys)
