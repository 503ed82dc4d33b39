"""XSCL language: AST, parser, printer, errors, normal form and validation."""

from xscl.errors import (
    ERROR_CODES,
    XsclError,
    XsclSyntaxError,
    XsclValidationError,
    excerpt_at,
    line_column,
)
from xscl.lang.parser import (
    KEYWORDS,
    XML_NAMESPACE,
    ParseResult,
    parse_file,
    parse_queries,
    parse_query,
)
from xscl.lang.printer import format_file, format_query

__all__ = [
    "ERROR_CODES",
    "KEYWORDS",
    "XML_NAMESPACE",
    "ParseResult",
    "XsclError",
    "XsclSyntaxError",
    "XsclValidationError",
    "excerpt_at",
    "format_file",
    "format_query",
    "line_column",
    "parse_file",
    "parse_queries",
    "parse_query",
]
