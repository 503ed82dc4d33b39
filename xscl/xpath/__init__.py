"""Stage 1: shared XPath evaluation of all registered variable definitions (thesis 6.3).

Public API: :class:`Stage1` (register definitions, state requirements,
evaluate documents), the witness relations of :mod:`xscl.xpath.witness`,
safe parsing limits; its errors (``Stage1Error``, codes ``XSCL-X0xx``) are in
:mod:`xscl.errors`.
"""

from xscl.errors import Stage1Error
from xscl.xpath.safe_parse import ParseLimits, parse_document
from xscl.xpath.stage1 import Document, Stage1, Stage1Spec
from xscl.xpath.witness import (
    BINDINGS_SCHEMA,
    DOCS_SCHEMA,
    MATCHES_SCHEMA,
    VALUE_NODES_SCHEMA,
    VALUES_SCHEMA,
    DocumentError,
    DocumentRows,
    WitnessBatch,
    r_doc_rows,
)

__all__ = [
    "BINDINGS_SCHEMA",
    "DOCS_SCHEMA",
    "MATCHES_SCHEMA",
    "VALUES_SCHEMA",
    "VALUE_NODES_SCHEMA",
    "Document",
    "DocumentError",
    "DocumentRows",
    "ParseLimits",
    "Stage1",
    "Stage1Error",
    "Stage1Spec",
    "WitnessBatch",
    "parse_document",
    "r_doc_rows",
]
