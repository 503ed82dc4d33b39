"""Stage 1: shared XPath evaluation of all registered variable definitions (thesis 6.3).

Public API: :class:`Stage1` (register definitions, state requirements, evaluate
documents into the witness rows of :mod:`xscl.xpath.witness`) and safe parsing
limits; its errors (``Stage1Error``, codes ``XSCL-X0xx``) are in :mod:`xscl.errors`.
"""

from xscl.errors import Stage1Error
from xscl.xpath.safe_parse import ParseLimits, parse_document
from xscl.xpath.stage1 import Stage1
from xscl.xpath.witness import DocumentRows

__all__ = [
    "DocumentRows",
    "ParseLimits",
    "Stage1",
    "Stage1Error",
    "parse_document",
]
