"""Stage 1 on the executors, and where each document goes next (inside the job's source).

Per spool record, in its partition's offset order:

1. Stage 1 (thesis 6.3) with the value engine of the batch's registry version
   (``queries.queries_at``): one shared pass over every registered definition;
   a document it rejects (malformed, too large, too deep, entity) is a dead letter;
2. lateness (docs/language.md): later than ``newest_before - allowed lateness`` is a
   dead letter with code ``XSCL-R008`` — decided here, before any stateful operator,
   from the record alone, so it does not depend on the batching and nothing is
   dropped silently by Spark;
3. routing: the document is encoded once, its string values as digests and without
   its XML (``codec``; groups read a matched document back from the spool,
   ``documents``), and sent to the join group
   (``groups``) of each value it holds at an **owner edge** (``queries.owner_edge``:
   the value join that places a two-block match), tagged with those values (it is
   stored there under them), and to the chain group when a chain-engine query reads
   its stream. A document with neither can never take part in a result and goes
   nowhere.

**Hot values** (``hot_values``): a value the join groups reported as hot is spread
over ``salts`` groups: a new document is stored under it in the group of one salt
(chosen by its key) and probes the groups of all salts, salt 0 included, where the
value's documents were stored before it turned hot. A value once hot stays hot (the
set only grows), so every stored row stays reachable, and each pair is still found in
exactly one group: the one storing its older document. The set (of value digests,
``codec.digest``) is read once per task from the job's hot-values folder, which the
driver's commit extends between batches.

Output rows (``ROUTED_DDL``): ``group`` (the state key: a value bucket's key, placed
so buckets spread evenly over the state partitions (``placement``), ``CHAIN_GROUP``
or ``DEAD_GROUP``), ``seq``, ``ts``, ``newest`` (the newest timestamp the stream had
delivered up to and including this record: the eviction horizon's base), ``version``,
``doc`` (the encoded document), ``homes`` (the values it is stored under in that
group) and ``line`` (a dead letter's JSON line).

Where it runs: ``RouteTask`` is built on the driver once per query start and pickled
to executors (it holds strings and integers only); ``route`` runs on an executor once
per Arrow batch of records (``spool_source.ARROW_BATCH_ROWS``, in ``routed_source``).
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

import pyarrow as pa

from xscl.engine.codec import digest_rows, encode
from xscl.service.live_queries import SEQ_STRIDE, queries_at
from xscl.spark_plugin.job.placement import group_keys
from xscl.xpath import Stage1Error

#: State key of the group evaluating the chain-engine queries.
CHAIN_GROUP = -1
#: Key of the rows that only carry dead letters through the stateful operator.
DEAD_GROUP = -2
#: Spark DDL of the routed rows.
ROUTED_DDL = (
    "group INT, seq BIGINT, ts BIGINT, newest BIGINT, version INT, doc BINARY, "
    "homes ARRAY<STRING>, line BINARY"
)
ROUTED_SCHEMA = pa.schema(
    [
        ("group", pa.int32()),
        ("seq", pa.int64()),
        ("ts", pa.int64()),
        ("newest", pa.int64()),
        ("version", pa.int32()),
        ("doc", pa.binary()),
        ("homes", pa.list_(pa.string())),
        ("line", pa.binary()),
    ]
)
def value_bucket(value: str, buckets: int) -> int:
    """The join group of a string value (stable across processes and runs).

    >>> value_bucket("Danny Ayers", 256) == value_bucket("Danny Ayers", 256)
    True
    """
    return zlib.crc32(value.encode("utf-8")) % buckets


def salted_bucket(value: str, salt: int, buckets: int) -> int:
    """The join group of ``value`` under ``salt`` (salt 0 is the value's own group).

    >>> salted_bucket("News", 0, 256) == value_bucket("News", 256)
    True
    """
    if salt == 0:
        return value_bucket(value, buckets)
    return zlib.crc32(f"{value}\x00{salt}".encode()) % buckets


def _salt_of(stream: str, docid: str, salts: int) -> int:
    """The salt a document of a hot value is stored under (stable across runs)."""
    return zlib.crc32(f"{stream}\x00{docid}".encode()) % salts


def hot_values(folder: str) -> frozenset[str]:
    """Every value recorded in a job's hot-values folder (``sink`` writes one file per
    batch that found new ones; executors read it once per task)."""
    out: set[str] = set()
    path = Path(folder)
    if path.is_dir():
        for file in sorted(path.glob("*.json")):
            out.update(json.loads(file.read_text(encoding="utf-8")))
    return frozenset(out)


def dead_line(offset: int, stream: str, docid: str, reason: str, code: str) -> bytes:
    """One dead-letter record as a JSON line (the dead letters' format)."""
    record = {"offset": offset, "stream": stream, "docid": docid, "reason": reason, "code": code}
    return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


class RouteTask:
    """Evaluates and routes record batches (see the module docstring); the job's source
    (``routed_source``) calls ``route`` in its ``read``."""

    def __init__(
        self,
        registry: str,
        buckets: int,
        allowed_lateness: int | None,
        hot_folder: str | None = None,
        salts: int = 1,
        partitions: int = 1,
        applied: str | None = None,
    ) -> None:
        self.registry = registry
        #: where the job records the offsets subscription events took effect at
        self.applied = applied
        self.buckets = buckets
        #: state partitions: bucket b's group key lands on partition b mod this
        self.partitions = partitions
        self.allowed_lateness = allowed_lateness
        self.hot_folder = hot_folder
        self.salts = salts

    def route(self, batch: pa.RecordBatch, hot: frozenset[str] = frozenset()) -> pa.RecordBatch:
        """Evaluate and route every record of ``batch`` (executor).

        ``batch``: the ``xscl-spool`` source's columns, ``ts`` as integer microseconds.
        ``hot``: the job's hot values (``hot_values``), read once per task by the caller.
        """
        out: list[list[Any]] = [[] for _ in ROUTED_SCHEMA]
        placed = group_keys(self.buckets, self.partitions)
        names = ("offset", "stream", "docid", "ts", "xml", "newest_before", "version")
        columns = [batch.column(n).to_pylist() for n in names]
        lateness = self.allowed_lateness
        for offset, stream, docid, ts, xml, newest_before, version in zip(*columns, strict=True):
            newest = ts if newest_before is None else max(ts, newest_before)
            key = (offset * SEQ_STRIDE + 1, ts, newest, version)
            queries = queries_at(self.registry, version, self.applied)
            try:
                rows = queries.value.stage1.evaluate_rows(stream, docid, ts, xml)
            except Stage1Error as exc:
                line = dead_line(offset, stream, docid, exc.message, exc.code)
                _emit(out, DEAD_GROUP, key, None, [], line)
                continue
            if lateness is not None and newest_before is not None and ts < newest_before - lateness:
                line = dead_line(offset, stream, docid, "late", "XSCL-R008")
                _emit(out, DEAD_GROUP, key, None, [], line)
                continue
            rows = digest_rows(rows)  # the groups join on digests (``codec``)
            owners, chain_streams = queries.routing()
            homes: dict[int, list[str]] = {}
            values = dict(rows.values)
            routed: set[str] = set()
            for var, node in rows.value_nodes:
                value = values[node]
                if var not in owners or not value or value in routed:
                    continue
                routed.add(value)
                if value in hot:  # probe every salt, store under one
                    home = salted_bucket(value, _salt_of(stream, docid, self.salts), self.buckets)
                    for salt in range(self.salts):
                        group = salted_bucket(value, salt, self.buckets)
                        found = homes.setdefault(group, [])
                        if group == home and value not in found:
                            found.append(value)
                else:
                    homes.setdefault(value_bucket(value, self.buckets), []).append(value)
            chain = stream in chain_streams
            if not homes and not chain:
                continue
            data = encode(stream, docid, ts, "", key[0], rows)  # XML: from the spool
            for bucket, stored in sorted(homes.items()):
                _emit(out, placed[bucket], key, data, stored, None)
            if chain:
                _emit(out, CHAIN_GROUP, key, data, [], None)
        arrays = [pa.array(c, f.type) for c, f in zip(out, ROUTED_SCHEMA, strict=True)]
        return pa.RecordBatch.from_arrays(arrays, schema=ROUTED_SCHEMA)


def _emit(
    out: list[list[Any]],
    group: int,
    key: tuple[int, int, int, int],
    doc: bytes | None,
    homes: list[str],
    line: bytes | None,
) -> None:
    """Append one routed row (``key``: seq, ts, newest, version) to the output columns."""
    for column, value in zip(out, (group, *key, doc, homes, line), strict=True):
        column.append(value)
