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

from collections.abc import Iterable
from dataclasses import dataclass, field

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


@dataclass
class WitnessBuilder:
    """Column lists that one evaluation run appends to; ``build`` makes Arrow batches.

    Per-document rows are appended with the document key stored once per
    document (``*_doc`` holds an index into ``docs``), which keeps the hot
    loop to a few list appends.
    """

    doc_stream: list[str] = field(default_factory=list)
    doc_docid: list[str] = field(default_factory=list)
    doc_ts: list[int] = field(default_factory=list)
    bind_doc: list[int] = field(default_factory=list)
    bind_var1: list[int] = field(default_factory=list)
    bind_var2: list[int] = field(default_factory=list)
    bind_node1: list[str] = field(default_factory=list)
    bind_node2: list[str] = field(default_factory=list)
    value_doc: list[int] = field(default_factory=list)
    value_var: list[int] = field(default_factory=list)
    value_node: list[str] = field(default_factory=list)
    value_str: list[str] = field(default_factory=list)
    match_doc: list[int] = field(default_factory=list)
    match_var: list[int] = field(default_factory=list)
    match_node: list[str] = field(default_factory=list)
    errors: list[DocumentError] = field(default_factory=list)
    function_errors: int = 0

    def mark(self) -> tuple[int, int, int, int]:
        return (len(self.doc_stream), len(self.bind_doc), len(self.value_doc), len(self.match_doc))

    def rollback(self, mark: tuple[int, int, int, int]) -> None:
        """Forget every row appended since ``mark`` (a document that failed midway)."""
        docs, binds, values, matches = mark
        for column in (self.doc_stream, self.doc_docid, self.doc_ts):
            del column[docs:]
        for column in (self.bind_doc, self.bind_var1, self.bind_var2, self.bind_node1):
            del column[binds:]
        del self.bind_node2[binds:]
        for column in (self.value_doc, self.value_var, self.value_node, self.value_str):
            del column[values:]
        for column in (self.match_doc, self.match_var, self.match_node):
            del column[matches:]

    def add_document(self, stream: str, docid: str, ts: int) -> int:
        self.doc_stream.append(stream)
        self.doc_docid.append(docid)
        self.doc_ts.append(ts)
        return len(self.doc_stream) - 1

    def _key_columns(self, doc_index: list[int]) -> list[pa.Array]:
        indices = pa.array(doc_index, type=pa.int32())
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
        bindings = pa.RecordBatch.from_arrays(
            [
                *self._key_columns(self.bind_doc),
                pa.array(self.bind_var1, type=pa.int32()),
                pa.array(self.bind_var2, type=pa.int32()),
                pa.array(self.bind_node1, type=pa.string()),
                pa.array(self.bind_node2, type=pa.string()),
            ],
            schema=BINDINGS_SCHEMA,
        )
        values = pa.RecordBatch.from_arrays(
            [
                *self._key_columns(self.value_doc),
                pa.array(self.value_var, type=pa.int32()),
                pa.array(self.value_node, type=pa.string()),
                pa.array(self.value_str, type=pa.string()),
            ],
            schema=VALUES_SCHEMA,
        )
        matches = pa.RecordBatch.from_arrays(
            [
                *self._key_columns(self.match_doc),
                pa.array(self.match_var, type=pa.int32()),
                pa.array(self.match_node, type=pa.string()),
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
