"""Result records as Parquet part files: the same records as spec section 4, as a table.

The streaming job writes JSON Lines by default (the spec's interchange format);
``--results-format parquet`` writes each micro-batch's results as one Parquet
file instead, under the same commit protocol (``xscl.results.commit``: staged, renamed,
named by the batch's marker). Why: one document takes part in many results and
a ``SELECT *`` result embeds its documents' elements, so consecutive records
repeat the same kilobytes; zstd over Parquet pages removes most of that, where
JSON Lines writes every copy (docs/benchmarks.md, "Results as Parquet").

Columns (``RESULT_SCHEMA``): ``query``, ``result_id``, ``docs`` (a list of
``{stream, docid, ts}`` in block order, ``ts`` a UTC microsecond timestamp),
``nodes`` and ``values`` (maps from join variable), ``xml``. Spark, DuckDB or
pandas read the part files directly; ``parquet_records`` turns them back into
the spec's record dicts (what ``xscl.results.read.read_results`` yields for either
format).

The ``xscl-results`` data source writes Parquet too
(``.option("format", "parquet")``): then a task's Arrow batches go to its
staging file as they come, in the DataFrame's own schema
(``stage_record_batches``), and ``parquet_records`` reads such a file back as
the JSON Lines writer would have written it (timestamps as RFC 3339 UTC, maps
and structs as objects).

Example::

    with StagedParquet(folder) as staged:
        for record in records:
            staged.write(record)
    part = staged.part()          # StagedPart(0, ".../<uuid>.parquet", rows)
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from xscl.connectors.document import format_ts
from xscl.connectors.durable import fsync_file
from xscl.results.commit import STAGING, StagedPart

if TYPE_CHECKING:
    from xscl.engine.output import ResultRecord

SUFFIX = ".parquet"
#: The part files' schema: spec section 4's record fields.
RESULT_SCHEMA = pa.schema(
    [
        pa.field("query", pa.string(), nullable=False),
        pa.field("result_id", pa.string(), nullable=False),
        pa.field(
            "docs",
            pa.list_(
                pa.struct(
                    [
                        pa.field("stream", pa.string(), nullable=False),
                        pa.field("docid", pa.string(), nullable=False),
                        pa.field("ts", pa.timestamp("us", tz="UTC"), nullable=False),
                    ]
                )
            ),
            nullable=False,
        ),
        pa.field("nodes", pa.map_(pa.string(), pa.string()), nullable=False),
        pa.field("values", pa.map_(pa.string(), pa.string()), nullable=False),
        pa.field("xml", pa.large_string(), nullable=False),
    ]
)
#: A row group is written once its records' XML reaches this many characters (or
#: ``ROW_GROUP_ROWS``): the driver holds one group. With 64 Mi its peak memory at
#: 10k subscriptions was twice JSON Lines'; with 16 Mi, 1.25 times.
ROW_GROUP_CHARS = 16 * 2**20
ROW_GROUP_ROWS = 65_536
#: zstd level 1: the fastest to write on the feed benchmark's records; level 3 took
#: 8% longer to save 3 of 12.5 MiB (docs/benchmarks.md).
COMPRESSION = "zstd"
COMPRESSION_LEVEL = 1


class StagedParquet:
    """A batch's result records streamed to one staging Parquet file (created on the first).

    Runs on the driver, once per micro-batch. Closed (last row group written,
    file ``fsync``-ed) when the ``with`` block ends; ``part`` is then what
    ``commit_batch`` renames into place, None when there were no results.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path: Path | None = None
        self.rows = 0
        self._writer: pq.ParquetWriter | None = None
        self._columns: dict[str, list[Any]] = {name: [] for name in RESULT_SCHEMA.names}
        self._chars = 0

    def __enter__(self) -> StagedParquet:
        return self

    def write(self, record: ResultRecord) -> None:
        """Buffer one record; a full row group goes to the file."""
        xml = record.built_xml if record.xml_parts is None else "".join(record.xml_parts)
        self.write_fields(
            record.query, record.result_id, record.docs, record.nodes, record.values, xml or ""
        )

    def write_fields(
        self,
        query: str,
        result_id: str,
        docs: Iterable[tuple[str, str, int]],
        nodes: Any,
        values: Any,
        xml: str,
    ) -> None:
        """Buffer one record given field by field (``docs``: (stream, docid, ts µs);
        ``nodes``/``values``: a mapping or (name, value) pairs)."""
        columns = self._columns
        columns["query"].append(query)
        columns["result_id"].append(result_id)
        columns["docs"].append([{"stream": s, "docid": d, "ts": t} for s, d, t in docs])
        columns["nodes"].append(nodes)
        columns["values"].append(values)
        columns["xml"].append(xml)
        self.rows += 1
        self._chars += len(xml)
        if self._chars >= ROW_GROUP_CHARS or len(columns["xml"]) >= ROW_GROUP_ROWS:
            self._flush()

    def _flush(self) -> None:
        if not self._columns["xml"]:
            return
        if self._writer is None:
            self.folder.mkdir(parents=True, exist_ok=True)
            self.path = self.folder / f"{uuid.uuid4().hex}{SUFFIX}"
            self._writer = pq.ParquetWriter(
                self.path,
                RESULT_SCHEMA,
                compression=COMPRESSION,
                compression_level=COMPRESSION_LEVEL,
                use_dictionary=["query", "docs.list.element.stream"],
            )
        table = pa.Table.from_pydict(self._columns, schema=RESULT_SCHEMA)
        self._writer.write_table(table, row_group_size=len(table))
        self._columns = {name: [] for name in RESULT_SCHEMA.names}
        self._chars = 0

    def __exit__(self, *exc: object) -> None:
        if exc[0] is not None:  # the batch failed: its replay stages a new file
            self.abort()
        else:
            self.finish()

    def finish(self) -> None:
        """Write the last row group and make the file durable."""
        self._flush()
        if self._writer is not None:
            self._writer.close()
            self._writer = None
            assert self.path is not None
            fsync_file(self.path)

    def abort(self) -> None:
        """Close the file without its last row group (the batch failed)."""
        if self._writer is not None:
            self._writer.close()

    def part(self) -> StagedPart | None:
        """The staged file for ``commit_batch`` (None when the batch had no results)."""
        if self.path is None:
            return None
        return StagedPart(0, str(self.path), self.rows)


def stage_record_batches(
    path: str, batches: Iterable[pa.RecordBatch], partition: int = 0
) -> StagedPart:
    """Write one task's Arrow batches to a staging Parquet file, each ``result_id`` once.

    Runs on executors, once per task attempt (``xscl-results`` with
    ``.option("format", "parquet")``); what it returns is pickled to the driver's
    commit. The file has the batches' schema and one row group per batch.
    ``partition``: the task's, the part's order in its batch.
    """
    staging = Path(path) / STAGING
    target = staging / f"{uuid.uuid4().hex}{SUFFIX}"
    writer: pq.ParquetWriter | None = None
    seen: set[Any] = set()
    rows = 0
    try:
        for batch in batches:
            keep = []
            for result_id in batch.column("result_id").to_pylist():
                keep.append(result_id not in seen)
                seen.add(result_id)
            if not all(keep):
                batch = batch.filter(pa.array(keep))
            if batch.num_rows == 0:
                continue
            if writer is None:
                staging.mkdir(parents=True, exist_ok=True)
                writer = pq.ParquetWriter(
                    target,
                    batch.schema,
                    compression=COMPRESSION,
                    compression_level=COMPRESSION_LEVEL,
                )
            writer.write_batch(batch)
            rows += batch.num_rows
    finally:
        if writer is not None:
            writer.close()
    if writer is None:
        return StagedPart(partition, None, 0)
    fsync_file(target)
    return StagedPart(partition, str(target), rows)


def parquet_records(path: str | Path) -> Iterator[dict[str, Any]]:
    """The records of one part file as spec section 4 dicts (``ts`` as RFC 3339 UTC).

    A file in another schema than ``RESULT_SCHEMA`` (written by the data source
    from a user's DataFrame) comes back as its JSON Lines twin would read.
    """
    parquet = pq.ParquetFile(path)
    if not parquet.schema_arrow.equals(RESULT_SCHEMA):
        yield from _plain_records(parquet)
        return
    for group in range(parquet.num_row_groups):
        table = parquet.read_row_group(group)
        docs = table.column("docs").cast(_DOCS_AS_MICROS).to_pylist()
        queries = table.column("query").to_pylist()
        ids = table.column("result_id").to_pylist()
        nodes = table.column("nodes").to_pylist()
        values = table.column("values").to_pylist()
        xml = table.column("xml").to_pylist()
        for index, query in enumerate(queries):
            yield {
                "query": query,
                "result_id": ids[index],
                "docs": [
                    {"stream": d["stream"], "docid": d["docid"], "ts": format_ts(d["ts"])}
                    for d in docs[index]
                ],
                "nodes": dict(nodes[index]),
                "values": dict(values[index]),
                "xml": xml[index],
            }


#: ``docs`` with ``ts`` as plain microseconds (to format them like JSON Lines do).
_DOCS_AS_MICROS = pa.list_(
    pa.struct(
        [
            pa.field("stream", pa.string(), nullable=False),
            pa.field("docid", pa.string(), nullable=False),
            pa.field("ts", pa.int64(), nullable=False),
        ]
    )
)


def parquet_column(path: str | Path, name: str) -> list[str]:
    """Column ``name`` (``result_id``, ``query``) of one part file, any schema that has
    one, as strings."""
    values = pq.read_table(path, columns=[name]).column(name).to_pylist()
    return [str(value) for value in values]


def _plain_records(parquet: pq.ParquetFile) -> Iterator[dict[str, Any]]:
    schema = parquet.schema_arrow
    for group in range(parquet.num_row_groups):
        for row in parquet.read_row_group(group).to_pylist():
            yield {field.name: _plain(row[field.name], field.type) for field in schema}


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def json_value(value: Any) -> Any:
    """``value`` as JSON data: timestamps as RFC 3339 UTC (naive ones read as local time).

    >>> json_value({"at": dt.datetime(2006, 6, 1, 10, tzinfo=dt.timezone.utc), "n": [1]})
    {'at': '2006-06-01T10:00:00Z', 'n': [1]}
    """
    if isinstance(value, dt.datetime):
        moment = value if value.tzinfo is not None else value.astimezone()
        delta = moment - _EPOCH
        return format_ts((delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds)
    if isinstance(value, dict):
        return {str(key): json_value(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_value(item) for item in value]
    return value


def _plain(value: Any, kind: pa.DataType) -> Any:
    """``value`` as the JSON Lines writer writes it: maps and structs as objects."""
    if value is None:
        return None
    if pa.types.is_map(kind):
        return {str(key): _plain(item, kind.item_type) for key, item in value}
    if pa.types.is_struct(kind):
        return {field.name: _plain(value[field.name], field.type) for field in kind}
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return [_plain(item, kind.value_type) for item in value]
    return json_value(value)
