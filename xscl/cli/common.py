"""Helpers shared by the commands: loading query files, printing errors, durations, paths."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from xscl.errors import XsclError, XsclSyntaxError
from xscl.lang.ast import Query
from xscl.lang.durations import parse_duration as parse_duration
from xscl.lang.parser import parse_file
from xscl.lang.source import read_source
from xscl.lang.validation import validate_all


@dataclass(frozen=True)
class LoadedQueries:
    """The valid queries of a file and every error found in it."""

    queries: tuple[Query, ...]
    errors: tuple[XsclError, ...]


def load_queries(path: str | Path, *, streams: Sequence[str] | None = None) -> LoadedQueries:
    """Parse and validate a query file; bad queries are reported, good ones kept.

    Raises ``OSError`` when the file cannot be read and ``XsclSyntaxError``
    ``XSCL-P013`` when it is not UTF-8 (``cannot_read`` says either).
    """
    text = read_source(path)
    parsed = parse_file(text, source=str(path))
    good, invalid = validate_all(list(parsed.queries), streams=streams, text=text)
    return LoadedQueries(tuple(good), by_position([*parsed.errors, *invalid]))


def by_position(errors: Sequence[XsclError]) -> tuple[XsclError, ...]:
    """``errors`` in the order of the file: by line and column (syntax and validation
    errors mixed), errors with no position last, ties in their given order."""

    def position(error: XsclError) -> tuple[float, float]:
        far = float("inf")
        line, column = error.line, error.column
        return (far if line is None else line, far if column is None else column)

    return tuple(sorted(errors, key=position))


def cannot_read(
    command: str,
    path: str,
    exc: OSError | XsclSyntaxError,
    *,
    as_json: bool = False,
    option: str = "",
) -> int:
    """Say why the query file ``path`` cannot be read (the path once); the exit code, 2.

    A file that is not UTF-8 is its coded error, with the line and column of its first
    bad byte; a file that cannot be opened is ``cannot read [OPTION ]PATH: REASON``.
    """
    if isinstance(exc, XsclSyntaxError):
        print_errors([exc], source=path, as_json=as_json)
    else:
        named = f"{option} {path}" if option else path
        print(f"xscl {command}: cannot read {named}: {exc.strerror or exc}", file=sys.stderr)
    return 2


def print_errors(errors: Sequence[XsclError], *, source: str, as_json: bool = False) -> None:
    """Write every error to stderr, as text with a caret excerpt or as JSON lines."""
    for error in errors:
        if as_json:
            print(json.dumps({"source": source, **error.to_dict()}), file=sys.stderr)
        elif error.source:  # the location already names the file
            print(error, file=sys.stderr)
        else:
            print(f"{source}:{error}", file=sys.stderr)


def duration_argument(text: str) -> int:
    """An option's duration in microseconds (an argparse ``type``: a bad one is a usage
    error). ``--history 0`` asks for none."""
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def positive_duration_argument(text: str) -> int:
    """``duration_argument`` above 0 (``--retention``)."""
    micros = duration_argument(text)
    if micros <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return micros


#: The exit code when some queries of a file were rejected (each printed with its coded
#: error): ``xscl check`` and ``xscl cel check``; ``xscl cel run`` and ``xscl serve
#: --cel-queries`` after running the file's valid queries (docs/cel.md 7).
EXIT_REJECTED = 2


# -- paths a command writes: say why not before the work, in one line -----------------

#: What to do about an ``--output`` that cannot be written.
OUTPUT_ADVICE = "give --output a file path in a directory you can write to"


def unwritable_folder(folder: str | Path) -> str | None:
    """Why files cannot be created in ``folder`` (made if missing); None when they can.

    Looks at the nearest existing ancestor-or-self: it must be a directory this
    process may write to (``os.access``, which also says no on a read-only file
    system; root may write anywhere else, but never under a regular file).
    Nothing is created.
    """
    existing = Path(folder)
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is a file, not a directory"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{existing} is not writable (permissions or a read-only file system)"
    return None


def unwritable_file(path: str | Path) -> str | None:
    """Why ``path`` cannot be written (created or replaced); None when it can."""
    target = Path(path)
    if target.is_dir():
        return f"{target} is a directory"
    return unwritable_folder(target.parent)


def os_error_reason(exc: OSError) -> str:
    """``PATH: strerror`` of an ``OSError`` (its own text when it names no path)."""
    if exc.filename is not None and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    return str(exc)
