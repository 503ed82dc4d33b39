"""``run_batch`` of the local engine: the batch contract of spec section 4.

Envelopes are read with ``xscl.connectors.document`` (file order = arrival
order); malformed envelopes, Stage 1 rejects and late documents go to
``RESULTS.deadletter.jsonl``; the result set is written sorted by (query,
result_id). Both files are written to a temporary file in the same folder and
renamed, dead letters first, so a complete-looking output is complete.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from xscl.connectors.dead_letters import DeadLetter
from xscl.connectors.document import read_numbered_envelope_file
from xscl.connectors.durable import write_lines_atomically
from xscl.engine.local import LocalEngine
from xscl.lang.ast import Query


@dataclass(frozen=True)
class BatchSummary:
    """What a batch run did (``--engine local`` and ``--engine spark``)."""

    documents: int
    duplicates: int
    late: int
    dead_letters: int
    results: int
    published_documents: int
    templates: int
    output_path: Path
    deadletter_path: Path
    #: Spark micro-batches the run took (0 for the in-process engine)
    micro_batches: int = 0


def deadletter_path_for(output_path: Path) -> Path:
    """``RESULTS.jsonl`` -> ``RESULTS.deadletter.jsonl``."""
    name = output_path.name
    stem = name[: -len(".jsonl")] if name.endswith(".jsonl") else name
    return output_path.with_name(f"{stem}.deadletter.jsonl")


def run_batch(
    queries: Sequence[Query],
    input_path: str | os.PathLike[str],
    output_path: str | os.PathLike[str],
    *,
    allowed_lateness_micros: int | None = None,
    view_cache: bool = True,
) -> BatchSummary:
    """Evaluate ``queries`` over the envelope file; write results and dead letters."""
    engine = LocalEngine(
        queries, allowed_lateness_micros=allowed_lateness_micros, view_cache=view_cache
    )
    output = Path(output_path)
    dead_path = deadletter_path_for(output)
    dead: list[str] = []
    results = []
    for line, item in read_numbered_envelope_file(Path(input_path)):  # file lines
        if isinstance(item, DeadLetter):
            dead.append(item.to_json())
            continue
        before = len(engine.stats.rejections)
        results.extend(engine.process_one(item.stream, item.docid, item.ts_micros, item.xml))
        for rejected in engine.stats.rejections[before:]:
            source, reason, code = str(Path(input_path)), rejected.reason, rejected.code
            letter = DeadLetter(source, line, rejected.stream, rejected.docid, reason, code)
            dead.append(letter.to_json())
    results.sort(key=lambda r: (r.query, r.result_id))
    write_lines_atomically(dead_path, dead)
    write_lines_atomically(output, (r.to_json_line() for r in results))
    return BatchSummary(
        documents=engine.stats.documents,
        duplicates=engine.stats.duplicates,
        late=engine.stats.late,
        dead_letters=len(dead),
        results=len(results),
        published_documents=engine.stats.published,
        templates=engine.template_count,
        output_path=output,
        deadletter_path=dead_path,
    )
