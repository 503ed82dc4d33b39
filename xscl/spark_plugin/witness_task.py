"""Stage 1 on the executors: spool records in, one witness row per document out.

``WitnessTask`` is the function the job gives ``DataFrame.mapInArrow`` every
micro-batch (see ``xscl.spark_plugin.pipeline``). It evaluates the documents of a
partition with a ``Stage1`` rebuilt from the driver's ``Stage1Spec``
(``Stage1.from_spec``: same var ids), so the driver's engine reads the witnesses
as its own (``DocumentRows``) and only joins. This is the parallel, CPU-heavy part
of the pipeline (parsing + the shared automaton, thesis 6.3).

Where things run:

* ``WitnessTask(...)`` is built on the driver, once per micro-batch; it holds the
  spec as a Spark **broadcast** (shipped once per executor, not per task) and a
  version key; it must be picklable (it is, by cloudpickle, with the task).
* ``__call__`` runs on an executor, in a Python worker, once per partition; the
  rebuilt ``Stage1`` is cached per worker process by version key, so a stable set
  of subscriptions compiles its automaton once per worker, not per batch.

Output: one row per input document (schema ``WITNESS_SCHEMA``), its key and XML,
either an error (``error_code``/``error``: the document is rejected, e.g.
malformed XML) or the witness rows as parallel list columns. String values
travel once per node (``value_node``/``value_str``, Stage 1's ``values``); the
(var, node) rows of value-required variables (``member_var``/``member_node``,
Stage 1's ``value_nodes``) carry node ids only.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from xscl.xpath import DocumentRows, Stage1, Stage1Error, Stage1Spec

#: Spark DDL of ``mapInArrow``'s output.
WITNESS_DDL = (
    "offset BIGINT, stream STRING, docid STRING, ts BIGINT, xml STRING, "
    "error_code STRING, error STRING, "
    "value_node ARRAY<STRING>, value_str ARRAY<STRING>, "
    "member_var ARRAY<INT>, member_node ARRAY<STRING>, "
    "match_var ARRAY<INT>, match_node ARRAY<STRING>, "
    "bind_var1 ARRAY<INT>, bind_var2 ARRAY<INT>, bind_node1 ARRAY<STRING>, "
    "bind_node2 ARRAY<STRING>"
)

_INTS = pa.list_(pa.int32())
_STRS = pa.list_(pa.string())
WITNESS_SCHEMA = pa.schema(
    [
        ("offset", pa.int64()),
        ("stream", pa.string()),
        ("docid", pa.string()),
        ("ts", pa.int64()),
        ("xml", pa.string()),
        ("error_code", pa.string()),
        ("error", pa.string()),
        ("value_node", _STRS),
        ("value_str", _STRS),
        ("member_var", _INTS),
        ("member_node", _STRS),
        ("match_var", _INTS),
        ("match_node", _STRS),
        ("bind_var1", _INTS),
        ("bind_var2", _INTS),
        ("bind_node1", _STRS),
        ("bind_node2", _STRS),
    ]
)
#: (relation of ``DocumentRows``, tuple position) written into each list column
_LISTS = (
    ("values", 0),
    ("values", 1),
    ("value_nodes", 0),
    ("value_nodes", 1),
    ("matches", 0),
    ("matches", 1),
    ("bindings", 0),
    ("bindings", 1),
    ("bindings", 2),
    ("bindings", 3),
)

#: Per Python worker: the Stage 1 of the last spec version seen.
_compiled: dict[str, Stage1] = {}


class WitnessTask:
    """The ``mapInArrow`` function of one micro-batch (see the module docstring)."""

    def __init__(self, spec: Any, version: str) -> None:
        #: a Spark ``Broadcast[Stage1Spec]`` (or the spec itself, for local use)
        self.spec = spec
        self.version = version

    def stage1(self) -> Stage1:
        """This version's Stage 1, compiled once per worker process (executor)."""
        stage1 = _compiled.get(self.version)
        if stage1 is None:
            spec = self.spec.value if hasattr(self.spec, "value") else self.spec
            if not isinstance(spec, Stage1Spec):
                raise TypeError(f"expected a Stage1Spec, got {type(spec).__name__}")
            stage1 = Stage1.from_spec(spec)
            _compiled.clear()  # one version at a time: older ones are never asked again
            _compiled[self.version] = stage1
        return stage1

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Witness rows of one partition's documents (executor, once per partition)."""
        stage1 = self.stage1()
        for batch in batches:
            yield witness_batch(stage1, batch)


def witness_batch(stage1: Stage1, batch: pa.RecordBatch) -> pa.RecordBatch:
    """Evaluate every document of ``batch`` (offset, stream, docid, ts, xml)."""
    columns: list[list[Any]] = [[] for _ in WITNESS_SCHEMA]
    names = ("offset", "stream", "docid", "ts", "xml")
    rows = zip(*(batch.column(n).to_pylist() for n in names), strict=True)
    for offset, stream, docid, ts, xml in rows:
        for column, value in zip(columns, (offset, stream, docid, ts, xml), strict=False):
            column.append(value)
        try:
            witnesses = stage1.evaluate_rows(stream, docid, ts, xml)
        except Stage1Error as exc:
            columns[5].append(exc.code)
            columns[6].append(exc.message)
            for column in columns[7:]:
                column.append(None)
            continue
        columns[5].append(None)
        columns[6].append(None)
        for column, (relation, position) in zip(columns[7:], _LISTS, strict=True):
            column.append([row[position] for row in getattr(witnesses, relation)])
    arrays = [pa.array(c, f.type) for c, f in zip(columns, WITNESS_SCHEMA, strict=True)]
    return pa.RecordBatch.from_arrays(arrays, schema=WITNESS_SCHEMA)


def read_witness(row: dict[str, Any]) -> Any:
    """The ``DocumentRows`` or ``Stage1Error`` of one output row (driver)."""
    if row["error_code"] is not None:
        return Stage1Error(row["error_code"], row["error"])
    return DocumentRows(
        list(zip(row["value_node"], row["value_str"], strict=True)),
        list(zip(row["member_var"], row["member_node"], strict=True)),
        list(zip(row["match_var"], row["match_node"], strict=True)),
        list(
            zip(
                row["bind_var1"],
                row["bind_var2"],
                row["bind_node1"],
                row["bind_node2"],
                strict=True,
            )
        ),
    )
