"""Witness relations produced by Stage 1, as Arrow record batches (thesis 6.3.1).

Thesis 6.3.1 shreds the embeddings of each query block into binary relations
of variable bindings.  Stage 1 emits, per batch of documents, four relations;
every one carries the document key ``(stream, docid, ts)`` so that batches of
many documents can be concatenated and joined later (the thesis's R_bin,
R_doc and R_docTS, i.e. the ``W`` relations of the current document with the
document id added):

``docs`` (R_docTS) — one row per document that parsed:
    ``stream: string, docid: string, ts: int64`` (event time, microseconds
    since the epoch, UTC).

``bindings`` (R_bin) — one row per required pattern edge (parent var, child
var) and pair of nodes (n1, n2) such that n1 is a node of the parent's
definition and n2 a node of the child's definition reached from n1 by the
child's extra steps with all their filters.  With ``//`` steps one n2 may have
several n1.  ``stream, docid, ts, var1: int32, var2: int32, node1: string,
node2: string``.

``values`` (R_doc) — one row per node of every variable whose value is
required: ``stream, docid, ts, var: int32, node: string, strval: string``.
``strval`` is the normalised string value (NFC, outer XML whitespace
stripped).  Nodes whose value is empty are **kept** (their existence matters
to the templates); the value-join layer drops empty values because empty
values never join (spec 3.2).

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
from collections.abc import Iterable
from dataclasses import dataclass

import pyarrow as pa

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
VALUES_SCHEMA = pa.schema(
    [
        *_KEY,
        pa.field("var", pa.int32(), nullable=False),
        pa.field("node", pa.string(), nullable=False),
        pa.field("strval", pa.string(), nullable=False),
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


@dataclass(frozen=True)
class WitnessBatch:
    """The witness relations of a batch of documents (see module docstring)."""

    docs: pa.RecordBatch
    bindings: pa.RecordBatch
    values: pa.RecordBatch
    matches: pa.RecordBatch
    errors: tuple[DocumentError, ...] = ()
    #: function predicates that failed to compile/evaluate (each counted as false)
    function_errors: int = 0

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
            matches=cat("matches", MATCHES_SCHEMA),
            errors=tuple(e for p in parts for e in p.errors),
            function_errors=sum(p.function_errors for p in parts),
        )


def _int32(column: array[int]) -> pa.Array:
    """An Arrow int32 array over a copy of ``column``'s bytes (no per-item conversion)."""
    return pa.Array.from_buffers(pa.int32(), len(column), [None, pa.py_buffer(column.tobytes())])


_ELEMENT_IDS: list[str] = []


def element_ids(count: int) -> list[str]:
    """Interned node ids ``"0"`` .. ``str(count - 1)`` (grown on demand, shared)."""
    if len(_ELEMENT_IDS) < count:
        _ELEMENT_IDS.extend(str(i) for i in range(len(_ELEMENT_IDS), max(count, 1024)))
    return _ELEMENT_IDS


class WitnessBuilder:
    """Columns that one evaluation run appends to; ``build`` makes the Arrow batches once.

    Rows are stored column-wise as small ints: each distinct node a batch
    emits is stored once in a node table (``node_ids``, ``node_values``) and
    rows refer to it by index, so an element matched by hundreds of variables
    costs one string value and a few ``extend`` calls.  ``*_doc`` columns hold
    an index into the document columns.  Arrow ``take`` expands refs and
    document keys into the final string columns in C.
    """

    def __init__(self) -> None:
        self.doc_stream: list[str] = []
        self.doc_docid: list[str] = []
        self.doc_ts: list[int] = []
        self.node_ids: list[str] = []
        self.node_values: list[str] = []
        self.bind_doc = array("i")
        self.bind_var1 = array("i")
        self.bind_var2 = array("i")
        #: element index of the parent node (its id is ``str(index)``)
        self.bind_node1 = array("i")
        self.bind_ref2 = array("i")
        self.value_doc = array("i")
        self.value_var = array("i")
        self.value_ref = array("i")
        self.match_doc = array("i")
        self.match_var = array("i")
        self.match_ref = array("i")
        self.errors: list[DocumentError] = []
        self.function_errors = 0

    def mark(self) -> tuple[int, int, int, int, int]:
        return (
            len(self.doc_stream),
            len(self.bind_doc),
            len(self.value_doc),
            len(self.match_doc),
            len(self.node_ids),
        )

    def rollback(self, mark: tuple[int, int, int, int, int]) -> None:
        """Forget every row appended since ``mark`` (a document that failed midway)."""
        docs, binds, values, matches, nodes = mark
        for column in (self.doc_stream, self.doc_docid, self.doc_ts):
            del column[docs:]
        for binary in (self.bind_doc, self.bind_var1, self.bind_var2, self.bind_node1):
            del binary[binds:]
        del self.bind_ref2[binds:]
        for binary in (self.value_doc, self.value_var, self.value_ref):
            del binary[values:]
        for binary in (self.match_doc, self.match_var, self.match_ref):
            del binary[matches:]
        del self.node_ids[nodes:]
        del self.node_values[nodes:]

    def add_document(self, stream: str, docid: str, ts: int) -> int:
        self.doc_stream.append(stream)
        self.doc_docid.append(docid)
        self.doc_ts.append(ts)
        return len(self.doc_stream) - 1

    def add_node(self, node_id: str, value: str) -> int:
        """Store one emitted node; returns its ref."""
        self.node_ids.append(node_id)
        self.node_values.append(value)
        return len(self.node_ids) - 1

    def fill_doc(self, doc: int) -> None:
        """Set the document column of every row appended since the last call to ``doc``."""
        for doc_column, rows in (
            (self.bind_doc, self.bind_var1),
            (self.value_doc, self.value_var),
            (self.match_doc, self.match_var),
        ):
            missing = len(rows) - len(doc_column)
            if missing > 0:
                doc_column.extend(array("i", [doc]) * missing)

    def _key_columns(self, doc_index: array[int]) -> list[pa.Array]:
        indices = _int32(doc_index)
        return [
            pa.array(self.doc_stream, type=pa.string()).take(indices),
            pa.array(self.doc_docid, type=pa.string()).take(indices),
            pa.array(self.doc_ts, type=pa.int64()).take(indices),
        ]

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
        node_values = pa.array(self.node_values, type=pa.string())
        parents = self.bind_node1
        count = max(parents) + 1 if parents else 0
        parent_ids = pa.array(element_ids(count)[:count], type=pa.string())
        bindings = pa.RecordBatch.from_arrays(
            [
                *self._key_columns(self.bind_doc),
                _int32(self.bind_var1),
                _int32(self.bind_var2),
                parent_ids.take(_int32(parents)),
                node_ids.take(_int32(self.bind_ref2)),
            ],
            schema=BINDINGS_SCHEMA,
        )
        value_refs = _int32(self.value_ref)
        values = pa.RecordBatch.from_arrays(
            [
                *self._key_columns(self.value_doc),
                _int32(self.value_var),
                node_ids.take(value_refs),
                node_values.take(value_refs),
            ],
            schema=VALUES_SCHEMA,
        )
        matches = pa.RecordBatch.from_arrays(
            [
                *self._key_columns(self.match_doc),
                _int32(self.match_var),
                node_ids.take(_int32(self.match_ref)),
            ],
            schema=MATCHES_SCHEMA,
        )
        return WitnessBatch(
            docs=docs,
            bindings=bindings,
            values=values,
            matches=matches,
            errors=tuple(self.errors),
            function_errors=self.function_errors,
        )
