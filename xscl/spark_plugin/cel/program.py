"""The CEL job's queries, as every process sees them: text + XSCL catalog -> program, classes.

Built on the driver to plan and check, and again once per Python worker on the
executors (cached by the text and catalog), so the plan's objects hold only strings.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache

from xscl.errors import XsclError
from xscl.events.partitioning import KeyClass, partition_classes
from xscl.lang.cel.parser import parse_file
from xscl.lang.cel.validation import Program, validate

__all__ = ["CelJobQueries", "job_queries", "load_cel"]


@dataclass(frozen=True)
class CelJobQueries:
    """The valid program and its partition classes."""

    program: Program
    classes: tuple[KeyClass, ...]

    def group_keys(self, buckets: int) -> list[str]:
        """Every group key: ``class:bucket`` (one bucket for a global class)."""
        return [
            f"{index}:{bucket}"
            for index, key_class in enumerate(self.classes)
            for bucket in range(buckets if key_class.keys is not None else 1)
        ]


def load_cel(
    text: str, catalog: dict[str, tuple[str, ...]], source: str
) -> tuple[Program, list[XsclError]]:
    """Parse and validate a CEL file against the XSCL catalog; the program and every error."""
    parsed = parse_file(text, source=source)
    program, errors = validate(parsed, catalog=catalog, text=text, source=source)
    return program, [*parsed.errors, *errors]


@lru_cache(maxsize=4)
def job_queries(text: str, catalog_json: str) -> CelJobQueries:
    """The job's program and classes (cached per worker; the text was checked at start)."""
    catalog = {k: tuple(v) for k, v in json.loads(catalog_json).items()}
    program, _errors = load_cel(text, catalog, "cel-queries")
    return CelJobQueries(program, tuple(partition_classes(program)))
