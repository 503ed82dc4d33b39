"""Which rows of a committed part belong to which query, read once per part and process.

A cursor reader (``results.cursor.page``) wants one query's records; a committed part
holds the records of many queries (a join group's batch), and the parts never change
once committed (``results.commit``). So each part is indexed the first time a process
reads it: per query, its rows and, for JSON Lines, the byte offset of each row's line.
Later pages of any query read only that query's lines. Without it every page of every
subscription parsed every record committed before its cursor (the subscription API's
results endpoint: docs/benchmarks.md, "The subscription API under load").

The index of a JSON Lines part reads each line's query id from the line's start, as the
job writes it (``results.read.LEADING_FIELDS``), a channel line's queries from its
membership (``results.channels``: a row per member, in the members' order), and parses
a line that starts otherwise. A Parquet part's index reads its ``query`` column.

Where it runs: wherever results are read by cursor (the API process, users' code); the
indexes of the ``MAX_PARTS`` parts read last are kept per process. Nothing is pickled.

>>> import tempfile, pathlib
>>> part = pathlib.Path(tempfile.mkdtemp()) / "part-0.jsonl"
>>> _ = part.write_text('{"query":"A","result_id":"1a"}\\n{"query":"B","result_id":"2b"}\\n'
...                     '{"result_id":"3c","query":"A"}\\n')
>>> [(row, record["result_id"]) for row, record in query_rows(part, "A")]
[(0, '1a'), (2, '3c')]
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from xscl.errors import ResultsDirectoryError
from xscl.results.channels import line_members, line_records
from xscl.results.read import LEADING_FIELDS, part_records

#: How many parts' indexes a process keeps (least recently read dropped first).
MAX_PARTS = 4096

#: per query: its rows, their lines' byte offsets (-1 for a Parquet part's rows) and
#: the row's member of a channel line (-1: a plain line's record)
PartIndex = dict[str, list[tuple[int, int, int]]]

_INDEXES: OrderedDict[tuple[str, int, int], PartIndex] = OrderedDict()


def query_rows(file: Path, qid: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(row, record)`` of each of ``qid``'s records in committed part ``file``."""
    rows = part_index(file).get(qid, [])
    if not rows:
        return
    if file.suffix == ".parquet":
        wanted = {row for row, _offset, _member in rows}
        for row, record in enumerate(part_records(file)):
            if row in wanted:
                yield row, record
        return
    with open(file, "rb") as handle:
        for row, offset, member in rows:
            handle.seek(offset)
            line = handle.readline()
            try:
                yield row, line_records(line)[max(member, 0)]
            except (ValueError, KeyError, TypeError, IndexError) as exc:
                raise ResultsDirectoryError(
                    f"{file.name} row {row} is not a JSON record: {exc}"
                ) from exc


def part_index(file: Path) -> PartIndex:
    """The index of committed part ``file`` (built on its first read in this process)."""
    stat = file.stat()
    key = (str(file), stat.st_size, stat.st_mtime_ns)
    index = _INDEXES.get(key)
    if index is None:
        index = _parquet_index(file) if file.suffix == ".parquet" else _jsonl_index(file)
        _INDEXES[key] = index
        if len(_INDEXES) > MAX_PARTS:
            _INDEXES.popitem(last=False)
    else:
        _INDEXES.move_to_end(key)
    return index


def _jsonl_index(file: Path) -> PartIndex:
    index: PartIndex = {}
    offset = 0
    with open(file, "rb") as handle:
        row = 0
        for number, line in enumerate(handle, start=1):
            found = LEADING_FIELDS.match(line)
            if found is not None and b"\\" not in found.group(1):
                index.setdefault(found.group(1).decode("utf-8"), []).append((row, offset, -1))
                row += 1
                offset += len(line)
                continue
            try:
                members = line_members(line)
                if members is None:
                    members = [(str(json.loads(line).get("query")), "")]
                    positions = [-1]
                else:
                    positions = list(range(len(members)))
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                raise ResultsDirectoryError(
                    f"{file.name}:{number} is not a JSON record: {exc}"
                ) from exc
            for (qid, _result_id), member in zip(members, positions, strict=True):
                index.setdefault(qid, []).append((row, offset, member))
                row += 1
            offset += len(line)
    return index


def _parquet_index(file: Path) -> PartIndex:
    from xscl.results.parquet import parquet_column

    index: PartIndex = {}
    try:
        queries = parquet_column(file, "query")
    except (OSError, ValueError, KeyError) as exc:  # pyarrow's errors subclass these
        raise ResultsDirectoryError(f"{file.name} is not readable Parquet: {exc}") from exc
    for row, qid in enumerate(queries):
        index.setdefault(qid, []).append((row, -1, -1))
    return index
