"""The CEL job's queries file, checked: text + XSCL catalog -> program and errors.

Runs on the driver (``cel.serve``, before Spark starts) and in ``xscl cel``; the
running job's queries are its CEL registry's (``service.cel_subscriptions``).
"""

from __future__ import annotations

from xscl.errors import XsclError
from xscl.lang.cel.parser import parse_file
from xscl.lang.cel.validation import Program, validate

__all__ = ["load_cel"]


def load_cel(
    text: str, catalog: dict[str, tuple[str, ...]], source: str
) -> tuple[Program, list[XsclError]]:
    """Parse and validate a CEL file against the XSCL catalog; the program and every error."""
    parsed = parse_file(text, source=source)
    program, errors = validate(parsed, catalog=catalog, text=text, source=source)
    return program, [*parsed.errors, *errors]
