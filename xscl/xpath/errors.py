"""Errors of Stage 1 (``xscl.xpath``), each with a stable code.

A document that cannot be evaluated raises :class:`Stage1Error`; callers turn
it into a counted dead-letter record (spec section 1, DESIGN "nothing lost").
Codes are part of the public contract: never renumber them.
"""

from __future__ import annotations

#: The document is not well-formed XML (includes truncated and empty input).
NOT_WELL_FORMED = "XSCL-X001"
#: The document is larger than ``ParseLimits.max_bytes``.
TOO_LARGE = "XSCL-X002"
#: The element nesting is deeper than ``ParseLimits.max_depth``.
TOO_DEEP = "XSCL-X003"
#: Bytes that are not valid in the declared (or default UTF-8) encoding.
BAD_ENCODING = "XSCL-X004"
#: An entity reference would have to be expanded (never done: billion laughs, XXE).
ENTITY_REFERENCE = "XSCL-X005"
#: The document's stream has no registered definitions (not an error for
#: ``evaluate``; recorded only as a counter name).
NO_DEFINITIONS = "XSCL-X006"
#: A definition given to ``Stage1`` is not a canonical ``VarDef`` (binds a variable).
BAD_DEFINITION = "XSCL-X010"
#: A required pair is not a pattern edge (different stream or not a path prefix).
BAD_EDGE = "XSCL-X011"
#: A function predicate's regular expression is not a literal or could backtrack
#: exponentially (nested quantifiers); refused when the definition is registered.
UNSAFE_REGEX = "XSCL-X012"
#: An XPath function predicate failed to compile or evaluate (counted, predicate false).
FUNCTION_ERROR = "XSCL-X020"


class Stage1Error(ValueError):
    """A document (or definition) Stage 1 rejects; ``code`` is a stable ``XSCL-X0xx``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
