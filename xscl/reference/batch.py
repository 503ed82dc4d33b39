"""The reference evaluator's batch run (spec/XSCL.md section 4): envelopes in, results out.

``run_batch`` reads the document envelopes (file order = arrival order), writes
the dead letters to ``<output stem>.deadletter.jsonl`` next to the output, then
every result, one JSON line each, sorted by (query, result_id). Both files are
written atomically (a temporary file in the same folder, flushed and fsynced,
then renamed over the target), so a crash never leaves a partial file under the
final name. The dead-letter file is written first, so a complete results file
implies a complete dead-letter file. It is written even when empty, so a stale
file from an earlier run never survives.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from xscl.errors import InvalidQueriesError
from xscl.lang.ast import Query, QueryFile
from xscl.lang.parser import parse_file
from xscl.lang.validation import validate_all
from xscl.reference.documents import EnvelopeStats, read_envelopes
from xscl.reference.evaluate import evaluate
from xscl.reference.xmltree import DEFAULT_MAX_BYTES, DEFAULT_MAX_DEPTH
from xscl.reference.xpathfn import EvalStats


@dataclass(frozen=True)
class RunSummary:
    """What one batch run did (counts, files, wall time)."""

    queries: int
    lines: int
    documents: int
    duplicates: int
    dead_letters: int
    late: int
    results: int
    published_documents: int
    function_errors: int
    seconds: float
    output_path: Path
    deadletter_path: Path
    results_per_query: dict[str, int] = field(default_factory=dict)


def deadletter_path_for(output_path: Path) -> Path:
    """``RESULTS.jsonl`` -> ``RESULTS.deadletter.jsonl`` (any other name: append the suffix)."""
    name = output_path.name
    stem = name[: -len(".jsonl")] if name.endswith(".jsonl") else name
    return output_path.with_name(f"{stem}.deadletter.jsonl")


def write_lines_atomically(path: Path, lines: Iterable[str]) -> None:
    """Write text lines (newline-terminated, UTF-8) to ``path`` via a temp file and rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp_name = str(path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp"))
    # created 0666 less the umask, as a file the user makes (mkstemp would give 0600)
    fd = os.open(tmp_name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            for line in lines:
                handle.write(line)
                handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        if os.path.exists(tmp_name):
            os.unlink(tmp_name)
        raise


def load_queries(queries: str | QueryFile | Sequence[Query]) -> list[Query]:
    """Queries from XSCL text (shared parser + validation, batch mode: no catalog) or ASTs.

    Raises ``InvalidQueriesError`` (``XSCL-V011``) with every error when any query of
    the text is invalid.
    """
    if isinstance(queries, str):
        result = parse_file(queries)
        valid, validation_errors = validate_all(result.queries, text=queries)
        errors = [*result.errors, *validation_errors]
        if errors:
            raise InvalidQueriesError.from_code(
                "XSCL-V011", f"{len(errors)} invalid quer(ies)", errors=errors
            )
        return list(valid)
    if isinstance(queries, QueryFile):
        return list(queries.queries)
    return list(queries)


def run_batch(
    queries_text_or_queries: str | QueryFile | Sequence[Query],
    input_path: str | os.PathLike[str],
    output_path: str | os.PathLike[str],
    *,
    allowed_lateness_micros: int | None = None,
    max_xml_bytes: int = DEFAULT_MAX_BYTES,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> RunSummary:
    """Evaluate every query over the envelope file and write results and dead letters.

    Query parse/validation errors propagate (raised before anything is written).
    """
    started = time.perf_counter()
    queries = load_queries(queries_text_or_queries)
    output = Path(output_path)
    dead_path = deadletter_path_for(output)
    envelope_stats = EnvelopeStats()
    with open(input_path, "rb") as handle:
        documents, dead_letters = read_envelopes(
            (line.rstrip(b"\r\n") for line in handle),
            allowed_lateness_micros=allowed_lateness_micros,
            max_bytes=max_xml_bytes,
            max_depth=max_depth,
            stats=envelope_stats,
        )
    eval_stats = EvalStats()
    results = evaluate(queries, documents, stats=eval_stats)
    source = str(Path(input_path))
    write_lines_atomically(dead_path, (replace(d, source=source).to_json() for d in dead_letters))
    write_lines_atomically(output, (record.to_json_line() for record in results))
    per_query: dict[str, int] = {query.qid: 0 for query in queries}
    for record in results:
        per_query[record.query] = per_query.get(record.query, 0) + 1
    return RunSummary(
        queries=len(queries),
        lines=envelope_stats.lines,
        documents=envelope_stats.accepted,
        duplicates=envelope_stats.duplicates,
        dead_letters=envelope_stats.dead_letters,
        late=envelope_stats.late,
        results=len(results),
        published_documents=eval_stats.published_documents,
        function_errors=eval_stats.function_errors,
        seconds=time.perf_counter() - started,
        output_path=output,
        deadletter_path=dead_path,
        results_per_query=per_query,
    )
