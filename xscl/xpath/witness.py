"""Witness relations produced by Stage 1, as Arrow record batches (thesis 6.3.1).

Thesis 6.3.1 shreds the embeddings of each query block into binary relations
of variable bindings.  Stage 1 emits, per batch of documents, five relations;
every one carries the document key ``(stream, docid, ts)`` so that batches of
many documents can be concatenated and joined later (the thesis's R_bin,
R_doc and R_docTS, i.e. the ``W`` relations of the current document with the
document id added; R_doc is shipped as ``values`` + ``value_nodes`` so that
each string value is emitted once per node):

``docs`` (R_docTS) — one row per document that parsed:
    ``stream: string, docid: string, ts: int64`` (event time, microseconds
    since the epoch, UTC).

``bindings`` (R_bin) — one row per required pattern edge (parent var, child
var) and pair of nodes (n1, n2) such that n1 is a node of the parent's
definition and n2 a node of the child's definition reached from n1 by the
child's extra steps with all their filters.  With ``//`` steps one n2 may have
several n1.  ``stream, docid, ts, var1: int32, var2: int32, node1: string,
node2: string``.

``values`` (R_docW, issue 3) — one row per **distinct node** (per
document) whose value some variable requires: ``stream, docid, ts, node:
string, strval: string``.  ``strval`` is the normalised string value (NFC,
outer XML whitespace stripped).  A node matched by many value-required
variables (an item element is typically bound by ~17) carries its string
once, not once per variable.  Nodes whose value is empty are **kept** (their
existence matters to the templates); the value-join layer drops empty values
because empty values never join (spec 3.2).

``value_nodes`` — one row per node of every variable whose value is
required: ``stream, docid, ts, var: int32, node: string``.  Joined with
``values`` on (document, node) it gives the thesis's R_doc rows (var, node,
strval); every ``value_nodes`` row has exactly one ``values`` row and every
``values`` row at least one ``value_nodes`` row.  It is a relation of its own
rather than rows of ``matches`` so that a consumer tells value-required
variables from ``require_nodes`` ones without knowing the registrations, and
so that a var required both ways is not emitted twice into one relation.

``matches`` — one row per node of every variable registered with
``require_nodes`` (existence tests, SELECT output): ``stream, docid, ts,
var: int32, node: string``.

Node ids follow spec section 1: ``"N"`` for the N-th element in pre-order
(root = 0), ``"N/@qname"`` for an attribute, ``"N/text()[k]"`` for a text
node.  Row order is deterministic (the walk order of the document) but is not
part of the contract.  Variable ids are those returned by ``Stage1.register``.

Documents that could not be evaluated produce no rows; they are listed in
``WitnessBatch.errors`` with their stable error code.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import chain, repeat
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

_KEY = [
    pa.field("stream", pa.string(), nullable=False),
    pa.field("docid", pa.string(), nullable=False),
    pa.field("ts", pa.int64(), nullable=False),
]

DOCS_SCHEMA = pa.schema(_KEY)
BINDINGS_SCHEMA = pa.schema(
    [
        *_KEY,
        pa.field("var1", pa.int32(), nullable=False),
        pa.field("var2", pa.int32(), nullable=False),
        pa.field("node1", pa.string(), nullable=False),
        pa.field("node2", pa.string(), nullable=False),
    ]
)
#: R_docW: one row per distinct node whose value is required (issue 3)
VALUES_SCHEMA = pa.schema(
    [
        *_KEY,
        pa.field("node", pa.string(), nullable=False),
        pa.field("strval", pa.string(), nullable=False),
    ]
)
#: (var, node) of every value-required variable; strval is in ``values``
VALUE_NODES_SCHEMA = pa.schema(
    [
        *_KEY,
        pa.field("var", pa.int32(), nullable=False),
        pa.field("node", pa.string(), nullable=False),
    ]
)
MATCHES_SCHEMA = pa.schema(
    [
        *_KEY,
        pa.field("var", pa.int32(), nullable=False),
        pa.field("node", pa.string(), nullable=False),
    ]
)


@dataclass(frozen=True)
class DocumentError:
    """A document Stage 1 could not evaluate (a dead letter for the caller)."""

    stream: str
    docid: str
    ts: int
    code: str
    message: str


class DocumentRows(NamedTuple):
    """One document's witness rows as Python tuples (no Arrow, no document key).

    What ``Stage1.evaluate_rows`` returns for a consumer that works document by
    document in Python (the engine, the Spark executors' output): building Arrow
    batches for one small document costs more than evaluating it.
    """

    #: ``values``: (node, strval), once per node
    values: list[tuple[str, str]]
    #: ``value_nodes``: (var, node)
    value_nodes: list[tuple[int, str]]
    #: ``matches``: (var, node)
    matches: list[tuple[int, str]]
    #: ``bindings``: (var1, var2, node1, node2)
    bindings: list[tuple[int, int, str, str]]


@dataclass(frozen=True)
class WitnessBatch:
    """The witness relations of a batch of documents (see module docstring)."""

    docs: pa.RecordBatch
    bindings: pa.RecordBatch
    values: pa.RecordBatch
    value_nodes: pa.RecordBatch
    matches: pa.RecordBatch
    errors: tuple[DocumentError, ...] = ()
    #: function predicates that failed to compile/evaluate (each counted as false)
    function_errors: int = 0

    def rows(self) -> DocumentRows:
        """The rows of a ONE-document batch as Python tuples (``Stage1.evaluate_rows``'s)."""

        def columns(batch: pa.RecordBatch, names: tuple[str, ...]) -> list[Any]:
            if batch.num_rows == 0:
                return []
            return list(zip(*(batch.column(n).to_pylist() for n in names), strict=True))

        return DocumentRows(
            columns(self.values, ("node", "strval")),
            columns(self.value_nodes, ("var", "node")),
            columns(self.matches, ("var", "node")),
            columns(self.bindings, ("var1", "var2", "node1", "node2")),
        )

    @staticmethod
    def concat(batches: Iterable[WitnessBatch]) -> WitnessBatch:
        """One batch holding the rows and errors of ``batches`` in order."""
        builder = WitnessBuilder()
        parts = list(batches)
        result = builder.build()
        if not parts:
            return result

        def cat(name: str, schema: pa.Schema) -> pa.RecordBatch:
            table = pa.Table.from_batches([getattr(p, name) for p in parts], schema=schema)
            return (
                table.combine_chunks().to_batches()[0] if table.num_rows else getattr(result, name)
            )

        return WitnessBatch(
            docs=cat("docs", DOCS_SCHEMA),
            bindings=cat("bindings", BINDINGS_SCHEMA),
            values=cat("values", VALUES_SCHEMA),
            value_nodes=cat("value_nodes", VALUE_NODES_SCHEMA),
            matches=cat("matches", MATCHES_SCHEMA),
            errors=tuple(e for p in parts for e in p.errors),
            function_errors=sum(p.function_errors for p in parts),
        )


def r_doc_rows(batch: WitnessBatch) -> list[dict[str, Any]]:
    """The thesis's R_doc rows of ``batch``: ``value_nodes`` joined with ``values``.

    One dict (stream, docid, ts, var, node, strval) per ``value_nodes`` row,
    in its order; for tools and tests (the engine joins per document itself).
    """
    strval = {
        (r["stream"], r["docid"], r["ts"], r["node"]): r["strval"] for r in batch.values.to_pylist()
    }
    return [
        {**r, "strval": strval[(r["stream"], r["docid"], r["ts"], r["node"])]}
        for r in batch.value_nodes.to_pylist()
    ]


def _int32(column: array[int]) -> pa.Array:
    """An Arrow int32 array over a copy of ``column``'s bytes (no per-item conversion)."""
    return pa.Array.from_buffers(pa.int32(), len(column), [None, pa.py_buffer(column.tobytes())])


class _Runs:
    """Rows stored as runs (``refs[i]`` repeated ``counts[i]`` times) for Arrow to expand.

    ``column(table)`` is ``table.take(expanded refs)`` computed as a
    run-end-encoded array of ``table.take(refs)`` decoded in C: one copy per
    row and no per-row index lookup (twice as fast as ``take`` on strings).
    """

    __slots__ = ("ends", "refs")

    def __init__(self, refs: array[int], counts: array[int]) -> None:
        self.refs = _int32(refs)
        self.ends = pc.cumulative_sum(_int32(counts)) if refs else None

    def column(self, table: pa.Array) -> pa.Array:
        if self.ends is None:
            return pa.array([], type=table.type)
        runs = pa.RunEndEncodedArray.from_arrays(self.ends, table.take(self.refs))
        return pc.run_end_decode(runs)


_ELEMENT_IDS: list[str] = []


def element_ids(count: int) -> list[str]:
    """Interned node ids ``"0"`` .. ``str(count - 1)`` (grown on demand, shared)."""
    if len(_ELEMENT_IDS) < count:
        _ELEMENT_IDS.extend(str(i) for i in range(len(_ELEMENT_IDS), max(count, 1024)))
    return _ELEMENT_IDS


#: lengths of every column of a builder, to roll back a document that failed midway
Mark = tuple[int, ...]


class WitnessBuilder:
    """Columns that one evaluation run appends to; ``build`` makes the Arrow batches once.

    Each distinct node a batch emits is stored once in a node table
    (``node_ids`` and ``node_doc``: its document's index) and rows refer to
    it by its index (ref).  The nodes whose value is required are listed
    once each (``value_refs``, with their string in ``value_strs``): the
    ``values`` relation.  Rows are stored column-wise as C int arrays, and
    the columns that repeat one value over the rows of a node are stored as
    runs (``*_refs`` and ``*_counts``: ref ``r`` for ``n`` rows): an element
    matched by hundreds of variables costs one string value, one ``memcpy``
    of its precomputed var ids and two appends.  Arrow expands the runs and
    ``take``s node ids and document keys into the final columns in C.
    """

    def __init__(self) -> None:
        self.doc_stream: list[str] = []
        self.doc_docid: list[str] = []
        self.doc_ts: list[int] = []
        self.node_ids: list[str] = []
        self.node_doc = array("i")
        #: the ``values`` rows: ref of the node, its normalised string value
        self.value_refs = array("i")
        self.value_strs: list[str] = []
        #: runs of ``value_nodes`` rows
        self.member_var = array("i")
        self.member_refs = array("i")
        self.member_counts = array("i")
        self.match_var = array("i")
        self.match_refs = array("i")
        self.match_counts = array("i")
        self.bind_var1 = array("i")
        self.bind_var2 = array("i")
        #: runs of bindings rows: the element index of the parent node (its id
        #: is ``str(index)``), the child node's ref, the number of rows
        self.bind_parents = array("i")
        self.bind_refs = array("i")
        self.bind_counts = array("i")
        self.errors: list[DocumentError] = []
        self.function_errors = 0

    def _columns(self) -> tuple[list[str] | list[int] | array[int], ...]:
        return (
            self.doc_stream,
            self.doc_docid,
            self.doc_ts,
            self.node_ids,
            self.node_doc,
            self.value_refs,
            self.value_strs,
            self.member_var,
            self.member_refs,
            self.member_counts,
            self.match_var,
            self.match_refs,
            self.match_counts,
            self.bind_var1,
            self.bind_var2,
            self.bind_parents,
            self.bind_refs,
            self.bind_counts,
        )

    def mark(self) -> Mark:
        return tuple(map(len, self._columns()))

    def rollback(self, mark: Mark) -> None:
        """Forget every row appended since ``mark`` (a document that failed midway)."""
        for column, length in zip(self._columns(), mark, strict=True):
            del column[length:]

    def add_document(self, stream: str, docid: str, ts: int) -> int:
        self.doc_stream.append(stream)
        self.doc_docid.append(docid)
        self.doc_ts.append(ts)
        return len(self.doc_stream) - 1

    def add_node(self, node_id: str) -> int:
        """Store one emitted node; returns its ref."""
        self.node_ids.append(node_id)
        return len(self.node_ids) - 1

    def add_value(self, ref: int, value: str) -> None:
        """The ``values`` row of node ``ref`` (at most once per node)."""
        self.value_refs.append(ref)
        self.value_strs.append(value)

    def fill_doc(self, doc: int) -> None:
        """Set the document of every node stored since the last call to ``doc``."""
        missing = len(self.node_ids) - len(self.node_doc)
        if missing > 0:
            self.node_doc.extend(array("i", [doc]) * missing)

    @staticmethod
    def _key_columns(node_keys: list[pa.Array], runs: _Runs) -> list[pa.Array]:
        return [runs.column(column) for column in node_keys]

    def rows(self) -> DocumentRows:
        """The rows of a builder that holds ONE document, as Python tuples.

        The runs are expanded by C-level iterators (``repeat`` per run,
        ``chain`` over runs, ``zip`` with the var column): no Python loop per row.
        """
        node_ids = self.node_ids
        node_id = node_ids.__getitem__
        parent_ids = element_ids(max(self.bind_parents) + 1 if self.bind_parents else 0)

        def expand(refs: array[int], counts: array[int], ids: list[str]) -> Iterator[str]:
            return chain.from_iterable(map(repeat, map(ids.__getitem__, refs), counts))

        return DocumentRows(
            list(zip(map(node_id, self.value_refs), self.value_strs, strict=True)),
            list(
                zip(
                    self.member_var,
                    expand(self.member_refs, self.member_counts, node_ids),
                    strict=True,
                )
            ),
            list(
                zip(
                    self.match_var,
                    expand(self.match_refs, self.match_counts, node_ids),
                    strict=True,
                )
            )
            if self.match_var
            else [],
            list(
                zip(
                    self.bind_var1,
                    self.bind_var2,
                    expand(self.bind_parents, self.bind_counts, parent_ids),
                    expand(self.bind_refs, self.bind_counts, node_ids),
                    strict=True,
                )
            )
            if self.bind_var1
            else [],
        )

    def build(self) -> WitnessBatch:
        docs = pa.RecordBatch.from_arrays(
            [
                pa.array(self.doc_stream, type=pa.string()),
                pa.array(self.doc_docid, type=pa.string()),
                pa.array(self.doc_ts, type=pa.int64()),
            ],
            schema=DOCS_SCHEMA,
        )
        node_ids = pa.array(self.node_ids, type=pa.string())
        node_doc = _int32(self.node_doc)
        #: the document key columns per node
        node_keys = [docs.column(i).take(node_doc) for i in range(3)]
        parents = self.bind_parents
        count = max(parents) + 1 if parents else 0
        parent_ids = pa.array(element_ids(count)[:count], type=pa.string())
        bind_runs = _Runs(self.bind_refs, self.bind_counts)
        bindings = pa.RecordBatch.from_arrays(
            [
                *self._key_columns(node_keys, bind_runs),
                _int32(self.bind_var1),
                _int32(self.bind_var2),
                _Runs(parents, self.bind_counts).column(parent_ids),
                bind_runs.column(node_ids),
            ],
            schema=BINDINGS_SCHEMA,
        )
        value_refs = _int32(self.value_refs)
        values = pa.RecordBatch.from_arrays(
            [
                *(column.take(value_refs) for column in node_keys),
                node_ids.take(value_refs),
                pa.array(self.value_strs, type=pa.string()),
            ],
            schema=VALUES_SCHEMA,
        )
        member_runs = _Runs(self.member_refs, self.member_counts)
        value_nodes = pa.RecordBatch.from_arrays(
            [
                *self._key_columns(node_keys, member_runs),
                _int32(self.member_var),
                member_runs.column(node_ids),
            ],
            schema=VALUE_NODES_SCHEMA,
        )
        match_runs = _Runs(self.match_refs, self.match_counts)
        matches = pa.RecordBatch.from_arrays(
            [
                *self._key_columns(node_keys, match_runs),
                _int32(self.match_var),
                match_runs.column(node_ids),
            ],
            schema=MATCHES_SCHEMA,
        )
        return WitnessBatch(
            docs=docs,
            bindings=bindings,
            values=values,
            value_nodes=value_nodes,
            matches=matches,
            errors=tuple(self.errors),
            function_errors=self.function_errors,
        )
