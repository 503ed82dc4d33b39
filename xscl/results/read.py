"""Reading committed results: the markers readers see, and each committed record once.

A results folder's layout and its commit protocol are ``xscl.results.commit``. Readers
read only part files named by visible markers, and drop any repeated result id (first
committed wins), so even an upstream that emits a result twice yields a set.

Where it runs: anywhere that reads the shared results folder (the driver's progress
and its last count, ``xscl status``, the CEL job's source on executors, users' code).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from xscl.connectors.durable import write_atomically
from xscl.errors import ResultsDirectoryError
from xscl.results.channels import line_members, line_records
from xscl.results.commit import COMMITS, epoch_chain, epoch_folder


def _markers_in(
    folder: Path, cache: dict[Path, dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    commits = folder / COMMITS
    if not commits.is_dir():
        return []
    markers = []
    for marker in sorted(commits.glob("*.json")):
        known = None if cache is None else cache.get(marker)
        if known is None:
            try:
                known = json.loads(marker.read_text(encoding="utf-8"))
            except ValueError as exc:
                raise ResultsDirectoryError(f"commit marker {marker} is not JSON: {exc}") from exc
            if cache is not None:
                cache[marker] = known
        markers.append(known)
    return markers


def visible_markers(
    path: str | Path, cache: dict[Path, dict[str, Any]] | None = None
) -> list[tuple[Path, dict[str, Any]]]:
    """(folder of its parts, marker) of every marker readers see, in commit order.

    A plain results directory: its markers. An epoch chain: each epoch's markers
    after its own ``after`` and up to the next epoch's (the newest: all).
    ``cache`` (marker file -> marker): markers already read, kept by a reader that
    asks every micro-batch; a marker is written once, atomically, and never changed.
    """
    root = Path(path)
    chain = epoch_chain(root)
    if not chain:
        return [(root, marker) for marker in _markers_in(root, cache)]
    out = []
    for index, (epoch, after) in enumerate(chain):
        cut = chain[index + 1][1] if index + 1 < len(chain) else None
        folder = epoch_folder(root, epoch)
        for marker in _markers_in(folder, cache):
            batch = int(marker["batch"])
            if batch > after and (cut is None or batch <= cut):
                out.append((folder, marker))
    return out


def committed_markers(path: str | Path) -> list[dict[str, Any]]:
    """The commit markers of a results directory, in commit order (streaming batches first)."""
    return [marker for _folder, marker in visible_markers(path)]


def read_results(path: str | Path, key: str = "result_id") -> Iterator[dict[str, Any]]:
    """Every committed result record once (first committed wins), in commit order.

    ``key``: the field that identifies a record (``id`` for CEL results, docs/cel.md 5.2).

    Part files are JSON Lines or Parquet (``results.parquet``), by their suffix;
    a directory may hold both (the job restarted with another ``--results-format``).
    """
    seen: set[str] = set()
    for file in _committed_parts(Path(path)):
        for record in part_records(file):
            if record[key] in seen:
                continue
            seen.add(record[key])
            yield record


def count_results(path: str | Path) -> int:
    """How many records ``read_results`` yields (``result_ids``)."""
    return len(result_ids(path))


def result_ids(path: str | Path) -> set[str]:
    """The result ids of every committed record, reading only the ids.

    From a Parquet part that is one column, from a JSON line its leading
    ``{"query":…,"result_id":…`` (``_jsonl_result_ids``), not every record's XML:
    the job reports the count at the end of a run, and parsing each line whole was
    most of the driver's CPU at 1.2 million results (docs/benchmarks.md).
    """
    seen: set[str] = set()
    for file in _committed_parts(Path(path)):
        if file.suffix == ".parquet":
            from xscl.results.parquet import parquet_column

            with _readable_parquet(file):
                seen.update(parquet_column(file, "result_id"))
        else:
            seen.update(_jsonl_result_ids(file))
    return seen


#: How every JSON line of the job starts (``engine.json_lines.JsonLineEncoder``): the query id
#: as a JSON string (escapes included, group 1), then the hex result id (group 2).
LEADING_FIELDS = re.compile(rb'\{"query":"((?:[^"\\]|\\.)*)","result_id":"([0-9a-f]+)"')


def _jsonl_result_ids(file: Path) -> Iterator[str]:
    """The result id of each line of a JSON Lines part, read from the line's start.

    >>> import tempfile
    >>> part = Path(tempfile.mkdtemp()) / "part.jsonl"
    >>> lines = [{"query": 'q"1', "result_id": "ab12"}, {"result_id": "cd34", "query": "q2"}]
    >>> _ = part.write_text("".join(json.dumps(r, separators=(",", ":")) + chr(10) for r in lines))
    >>> list(_jsonl_result_ids(part))
    ['ab12', 'cd34']

    A channel line (``results.channels``) gives its members' ids, read from its
    membership. A line that does not start either way (another writer's key order)
    is parsed whole, and one that is not JSON raises ``ResultsDirectoryError`` as
    ``read_results`` does.
    """
    with open(file, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            leading = LEADING_FIELDS.match(line)
            if leading is not None and line.rstrip().endswith(b"}"):
                yield leading.group(2).decode("ascii")
                continue
            try:
                members = line_members(line)  # a channel line: its members' ids
                if members is not None:
                    yield from (result_id for _query, result_id in members)
                    continue
                yield str(json.loads(line)["result_id"])
            except (ValueError, KeyError, TypeError) as exc:
                raise ResultsDirectoryError(
                    f"{file.name}:{number} is not a JSON record: {exc}"
                ) from exc


def _committed_parts(root: Path) -> Iterator[Path]:
    for folder, marker in visible_markers(root):
        for part in marker["parts"]:
            yield folder / part["file"]


@contextlib.contextmanager
def _readable_parquet(file: Path) -> Iterator[None]:
    try:
        yield
    except (OSError, ValueError) as exc:  # pyarrow's errors subclass these
        raise ResultsDirectoryError(f"{file.name} is not readable Parquet: {exc}") from exc


def part_records(file: Path) -> Iterator[dict[str, Any]]:
    """The records of one committed part file (JSON Lines or Parquet, by its suffix), a
    channel line's members each as its own record (``results.channels``), in order."""
    for records in part_lines(file):
        yield from records


def part_lines(file: Path) -> Iterator[list[dict[str, Any]]]:
    """``part_records`` line by line: the records of one match together (a channel
    line's members; one record for a plain line or a Parquet row), so that a reader can
    keep them one tuple (CEL's channels, ``events.from_xscl.line_events``)."""
    if file.suffix == ".parquet":
        from xscl.results.parquet import parquet_records

        with _readable_parquet(file):
            for record in parquet_records(file):
                yield [record]
        return
    with open(file, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            try:
                records = line_records(line)  # a channel line: a record per member
            except (ValueError, KeyError, TypeError) as exc:
                raise ResultsDirectoryError(
                    f"{file.name}:{number} is not a JSON record: {exc}"
                ) from exc
            yield records


def compact(path: str | Path, output: str | Path) -> int:
    """Write the deduplicated result set of ``path`` to one JSONL file, atomically."""
    lines = [
        json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
        for record in read_results(path)
    ]
    target = Path(output)
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(target, "".join(lines).encode("utf-8"))
    return len(lines)
