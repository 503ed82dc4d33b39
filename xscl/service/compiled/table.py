"""The compiled table: each subscribed query parsed, normalised and assigned its template, as data.

Registering a query from its text costs a parse, the normal form's rewrite rules
and the template assignment (graph minor, canonical form); every Python worker of
the streaming job paid that for every subscription at its start. The compiled
table holds the outcome, one row per query, so a worker registers from it without
parsing or normalising (``sources.FromTable``), and a restart reuses it.

Layout: ``REGISTRY/compiled/event=N/*.parquet`` holds the queries of subscribe
event N (unsubscribe events need nothing: their ids are in the event file). A
folder appears whole (renamed into place), written once per event, by the compile
job (``spark_plugin.compile_job``) or in process (``write_event``). ``spark.read.parquet(
"REGISTRY/compiled")`` reads every event's rows with an ``event`` column.

Columns (composite cells are ``values.encode`` JSON text; Parquet's dictionary
encoding stores each distinct cell once):

==============  ==============================================================
position        the query's place in its event (registration order)
qid             the query's id
explicit_id     whether the id was written in the file
blocks          the query's AST blocks, one cell each
ops             its join operators (a tuple of ``JoinOp``)
select          its SELECT variables (null: ``SELECT *``)
publish         its PUBLISH stream (null: none)
namespaces      its namespace bindings
normal_blocks   the normal form's blocks (pattern-variable trees with definitions)
normal_ops      the normal form's operators (kind, window)
equalities      the normal form's value equalities
template        the R_T table the query belongs to (its template)
names           R_T row: the query variable filling each meta-variable
definitions     R_T row: each meta-variable's definition (the definitions table)
windows         R_T row: windows in microseconds (null: INF)
kinds           R_T row: operator kinds
==============  ==============================================================

Where it runs: ``compiled_batch`` in the compile job's executor tasks (or in one
process, ``compile_job.compile_in_process``); ``read_event`` in every Python worker, once per
subscribe event (``live_queries.LiveQueries``). Nothing here is pickled.
"""

from __future__ import annotations

import heapq
import io
import shutil
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from operator import itemgetter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from xscl.lang.ast import Query
from xscl.lang.normal_form.model import NormalQuery
from xscl.service.compiled.values import Decoder, encode
from xscl.templates.assign import TemplateAssignment

__all__ = [
    "QUERY_COLUMNS",
    "SCHEMA",
    "CompiledQuery",
    "EventQueries",
    "compiled_batch",
    "compiled_folder",
    "decode_table",
    "iter_event",
    "publish_folder",
    "read_event",
    "write_event",
]

#: Arrow schema of the compiled table (``event`` is the folder's).
SCHEMA = pa.schema(
    [
        ("position", pa.int32()),
        ("qid", pa.string()),
        ("explicit_id", pa.bool_()),
        ("blocks", pa.list_(pa.string())),
        ("ops", pa.string()),
        ("select", pa.list_(pa.string())),
        ("publish", pa.string()),
        ("namespaces", pa.string()),
        ("normal_blocks", pa.list_(pa.string())),
        ("normal_ops", pa.string()),
        ("equalities", pa.string()),
        ("template", pa.string()),
        ("names", pa.list_(pa.string())),
        ("definitions", pa.list_(pa.string())),
        ("windows", pa.list_(pa.int64())),
        ("kinds", pa.list_(pa.string())),
    ]
)


@dataclass(frozen=True, slots=True)
class CompiledQuery:
    """One query ready to register: its normal form and its template assignment."""

    normal: NormalQuery
    assignment: TemplateAssignment

    @property
    def qid(self) -> str:
        return self.normal.qid

    @property
    def query(self) -> Query:
        return self.normal.query


def compiled_folder(registry: str | Path, version: int) -> Path:
    """Where the compiled rows of subscribe event ``version`` live."""
    return Path(registry) / "compiled" / f"event={version}"


class _Encoder:
    """``encode`` once per distinct value (queries of one shape share their parts)."""

    def __init__(self) -> None:
        self._known: dict[object, str] = {}

    def text(self, value: object) -> str:
        known = self._known.get(value)
        if known is None:
            known = encode(value)
            self._known[value] = known
        return known

    def texts(self, values: Iterable[object]) -> list[str]:
        return [self.text(v) for v in values]


def compiled_batch(queries: Iterable[tuple[int, CompiledQuery]]) -> pa.RecordBatch:
    """Rows of ``(position, compiled query)`` as a record batch of ``SCHEMA``."""
    encoder = _Encoder()
    columns: dict[str, list[object]] = {name: [] for name in SCHEMA.names}
    for position, compiled in queries:
        normal, assignment, query = compiled.normal, compiled.assignment, compiled.query
        row: dict[str, object] = {
            "position": position,
            "qid": query.qid,
            "explicit_id": query.explicit_id,
            "blocks": encoder.texts(query.blocks),
            "ops": encoder.text(query.ops),
            "select": None if query.select is None else list(query.select),
            "publish": query.publish,
            "namespaces": encoder.text(query.namespaces),
            "normal_blocks": encoder.texts(normal.blocks),
            "normal_ops": encoder.text(normal.ops),
            "equalities": encoder.text(normal.equalities),
            "template": encoder.text(assignment.template),
            "names": list(assignment.names),
            "definitions": encoder.texts(assignment.definitions),
            "windows": list(assignment.windows),
            "kinds": list(assignment.kinds),
        }
        for name, value in row.items():
            columns[name].append(value)
    return pa.RecordBatch.from_pydict(columns, schema=SCHEMA)


def decode_table(table: pa.Table) -> list[CompiledQuery]:
    """The compiled queries of ``table``, in position order (no parsing, no rewriting)."""
    return [query for _, query in sorted(_decoded(Decoder(), table), key=itemgetter(0))]


def _decoded(decoder: Decoder, table: pa.Table) -> Iterator[tuple[int, CompiledQuery]]:
    """(position, compiled query) of each row of ``table``, in row order."""
    c = {name: table.column(name).to_pylist() for name in SCHEMA.names}
    value, values = decoder.value, decoder.values
    for i, position in enumerate(c["position"]):
        qid = c["qid"][i]
        query = _query(decoder, {name: c[name][i] for name in QUERY_COLUMNS})
        normal = NormalQuery(
            query,
            values(c["normal_blocks"][i]),
            value(c["normal_ops"][i]),
            value(c["equalities"][i]),
        )
        assignment = TemplateAssignment(
            qid,
            value(c["template"][i]),
            tuple(c["names"][i]),
            values(c["definitions"][i]),
            tuple(c["kinds"][i]),
            tuple(c["windows"][i]),
        )
        yield position, CompiledQuery(normal, assignment)


#: Rows decoded at a time by ``iter_event`` from each file of an event.
ROWS_PER_BATCH = 2_000
#: Distinct cells ``iter_event``'s decoder remembers before it starts again: cells shared
#: by many queries are still decoded once per this many, and the texts of cells each
#: query has alone (a keyword's definition) are not kept for the whole event.
DECODED_CELLS = 50_000


def read_event(registry: str | Path, version: int) -> list[CompiledQuery]:
    """The compiled queries of subscribe event ``version`` (its folder must exist)."""
    return list(iter_event(registry, version))


def iter_event(registry: str | Path, version: int) -> Iterator[CompiledQuery]:
    """``read_event`` one query at a time: each file read ``ROWS_PER_BATCH`` rows at a
    time and the files merged by position, so a worker holds a batch per file, not the
    event's table and every query decoded (at 1M subscriptions those took gigabytes
    beside the engines being built)."""
    decoder = Decoder(limit=DECODED_CELLS)
    streams = [_file_rows(decoder, path) for path in _part_files(registry, version)]
    for _position, query in heapq.merge(*streams, key=itemgetter(0)):
        yield query


def _file_rows(decoder: Decoder, path: Path) -> Iterator[tuple[int, CompiledQuery]]:
    """A file's rows by position: in batches when it is in position order (a compile
    task writes its part so), else whole and sorted."""
    file = pq.ParquetFile(path)
    positions = file.read(columns=["position"], use_threads=False).column(0).to_pylist()
    if any(a > b for a, b in pairwise(positions)):
        table = file.read(columns=SCHEMA.names, use_threads=False)
        yield from sorted(_decoded(decoder, table), key=itemgetter(0))
        return
    for batch in file.iter_batches(ROWS_PER_BATCH, columns=SCHEMA.names, use_threads=False):
        yield from _decoded(decoder, pa.Table.from_batches([batch]))


def _part_files(registry: str | Path, version: int) -> list[Path]:
    """The Parquet files of subscribe event ``version``'s compiled folder."""
    folder = compiled_folder(registry, version)
    return sorted(p for p in folder.glob("*.parquet") if not p.name.startswith((".", "_")))


def _read_columns(registry: str | Path, version: int, columns: Sequence[str]) -> pa.Table:
    """``columns`` of every row of subscribe event ``version``'s compiled folder."""
    # ParquetFile, not read_table: that one imports pyarrow.dataset (and pandas) first
    tables = [
        pq.ParquetFile(p).read(columns=list(columns), use_threads=False)
        for p in _part_files(registry, version)
    ]
    return pa.concat_tables(tables) if tables else SCHEMA.empty_table().select(list(columns))


#: The columns a query's AST is decoded from (``Query`` without its normal form).
QUERY_COLUMNS = ("qid", "explicit_id", "blocks", "ops", "select", "publish", "namespaces")


def _query(decoder: Decoder, cells: dict[str, Any]) -> Query:
    """A query's AST from its ``QUERY_COLUMNS`` cells."""
    select = cells["select"]
    return Query(
        cells["qid"],
        decoder.values(cells["blocks"]),
        decoder.value(cells["ops"]),
        None if select is None else tuple(select),
        cells["publish"],
        decoder.value(cells["namespaces"]),
        cells["explicit_id"],
    )


class EventQueries(Mapping[str, Query]):
    """Subscribe event ``version``'s queries by id, from the compiled table, each
    decoded when first asked (executors: the Atom feeds' subtitles, which need the
    texts of the few queries a batch's feeds show, not of every subscription)."""

    def __init__(self, registry: str | Path, version: int) -> None:
        self._table = _read_columns(registry, version, QUERY_COLUMNS)
        self._rows = {qid: i for i, qid in enumerate(self._table.column("qid").to_pylist())}
        self._decoder = Decoder()
        self._decoded: dict[str, Query] = {}

    def __getitem__(self, qid: str) -> Query:
        query = self._decoded.get(qid)
        if query is None:
            row = self._rows[qid]
            cells = {name: self._table.column(name)[row].as_py() for name in QUERY_COLUMNS}
            query = self._decoded[qid] = _query(self._decoder, cells)
        return query

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)


def write_event(registry: str | Path, version: int, table: pa.Table) -> bool:
    """Write event ``version``'s compiled rows (in process); False if already there.

    The folder is filled under a temporary name and renamed into place, so a reader
    sees all of the event's rows or none.
    """
    target = compiled_folder(registry, version)
    if target.exists():
        return False
    staging = target.parent / f".staging-{uuid.uuid4().hex}"
    staging.mkdir(parents=True)
    try:
        buffer = io.BytesIO()
        pq.write_table(table.select(SCHEMA.names), buffer)
        (staging / "part-00000.parquet").write_bytes(buffer.getvalue())
        return publish_folder(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def publish_folder(staging: Path, target: Path) -> bool:
    """Rename a filled folder to ``target`` unless it exists (then another writer won)."""
    try:
        staging.rename(target)
    except OSError:
        if target.exists():
            return False
        raise
    return True
