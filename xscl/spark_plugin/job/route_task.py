"""Stage 1 on the executors, and where each document goes next (the ``mapInArrow`` step).

Per spool record, in its partition's offset order:

1. Stage 1 (thesis 6.3) with the value engine of the batch's registry version
   (``queries.queries_at``): one shared pass over every registered definition;
   a document it rejects (malformed, too large, too deep, entity) is a dead letter;
2. lateness (docs/language.md): later than ``newest_before - allowed lateness`` is a
   dead letter with code ``XSCL-R008`` — decided here, before any stateful operator,
   from the record alone, so it does not depend on the batching and nothing is
   dropped silently by Spark;
3. routing: the document is encoded once (``codec``) and sent to the join group
   (``groups``) of each value it holds at an **owner edge** (``queries.owner_edge``:
   the value join that places a two-block match), tagged with those values (it is
   stored there under them), and to the chain group when a chain-engine query reads
   its stream. A document with neither can never take part in a result and goes
   nowhere.

Output rows (``ROUTED_DDL``): ``group`` (the state key: a value bucket, ``CHAIN_GROUP``
or ``DEAD_GROUP``), ``seq``, ``ts``, ``newest`` (the newest timestamp the stream had
delivered up to and including this record: the eviction horizon's base), ``version``,
``doc`` (the encoded document), ``homes`` (the values it is stored under in that
group) and ``line`` (a dead letter's JSON line).

Where it runs: ``RouteTask`` is built on the driver once per query start and pickled
to executors (it holds strings and integers only); ``__call__`` runs on an executor
once per partition and attempt.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from xscl.spark_plugin.job.codec import encode
from xscl.spark_plugin.job.queries import SEQ_STRIDE, queries_at
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
#: Input columns (the ``xscl-spool`` source's, ts as microseconds).
INPUT_COLUMNS = (
    "offset",
    "stream",
    "docid",
    "unix_micros(ts) AS ts",
    "xml",
    "newest_before",
    "version",
)


def value_bucket(value: str, buckets: int) -> int:
    """The join group of a string value (stable across processes and runs).

    >>> value_bucket("Danny Ayers", 256) == value_bucket("Danny Ayers", 256)
    True
    """
    return zlib.crc32(value.encode("utf-8")) % buckets


def dead_line(offset: int, stream: str, docid: str, reason: str, code: str) -> bytes:
    """One dead-letter record as a JSON line (the dead letters' format)."""
    record = {"offset": offset, "stream": stream, "docid": docid, "reason": reason, "code": code}
    return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


class RouteTask:
    """The ``mapInArrow`` function of the job (see the module docstring)."""

    def __init__(self, registry: str, buckets: int, allowed_lateness: int | None) -> None:
        self.registry = registry
        self.buckets = buckets
        self.allowed_lateness = allowed_lateness

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Routed rows of one partition's records (executor, once per partition)."""
        for batch in batches:
            yield self.route(batch)

    def route(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """Evaluate and route every record of ``batch`` (executor)."""
        out: list[list[Any]] = [[] for _ in ROUTED_SCHEMA]
        names = ("offset", "stream", "docid", "ts", "xml", "newest_before", "version")
        columns = [batch.column(n).to_pylist() for n in names]
        lateness = self.allowed_lateness
        for offset, stream, docid, ts, xml, newest_before, version in zip(*columns, strict=True):
            newest = ts if newest_before is None else max(ts, newest_before)
            seq = offset * SEQ_STRIDE + 1

            def emit(group: int, doc: bytes | None, homes: list[str], line: bytes | None) -> None:
                for column, value in zip(
                    out, (group, seq, ts, newest, version, doc, homes, line), strict=True
                ):
                    column.append(value)

            queries = queries_at(self.registry, version)
            try:
                rows = queries.value.stage1.evaluate_rows(stream, docid, ts, xml)
            except Stage1Error as exc:
                emit(DEAD_GROUP, None, [], dead_line(offset, stream, docid, exc.message, exc.code))
                continue
            if lateness is not None and newest_before is not None and ts < newest_before - lateness:
                emit(DEAD_GROUP, None, [], dead_line(offset, stream, docid, "late", "XSCL-R008"))
                continue
            owners = _owner_vars(queries)
            homes: dict[int, list[str]] = {}
            values = dict(rows.values)
            for var, node in rows.value_nodes:
                if var in owners:
                    value = values[node]
                    if value:
                        found = homes.setdefault(value_bucket(value, self.buckets), [])
                        if value not in found:
                            found.append(value)
            chain = stream in _chain_streams(queries)
            if not homes and not chain:
                continue
            data = encode(stream, docid, ts, xml, seq, rows)
            for group, stored in sorted(homes.items()):
                emit(group, data, stored, None)
            if chain:
                emit(CHAIN_GROUP, data, [], None)
        arrays = [pa.array(c, f.type) for c, f in zip(out, ROUTED_SCHEMA, strict=True)]
        return pa.RecordBatch.from_arrays(arrays, schema=ROUTED_SCHEMA)


#: Per worker: (registry version object id) -> derived routing sets
_derived: dict[int, tuple[int, frozenset[int], frozenset[str]]] = {}


def _owner_vars(queries: Any) -> frozenset[int]:
    return _routing(queries)[1]


def _chain_streams(queries: Any) -> frozenset[str]:
    return _routing(queries)[2]


def _routing(queries: Any) -> tuple[int, frozenset[int], frozenset[str]]:
    """The routing sets of a ``JobQueries``, computed once per version (executor)."""
    known = _derived.get(id(queries))
    if known is None or known[0] != queries.version:
        known = (queries.version, queries.owner_vars(), queries.chain_streams())
        _derived.clear()
        _derived[id(queries)] = known
    return known
