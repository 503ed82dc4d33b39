"""The reference evaluator: XSCL by brute force, each query on its own (spec/XSCL.md section 3).

It is the test oracle of every engine and the "Sequential" baseline of the
benchmarks, so it favours obvious correctness over speed. It shares no code with
the engines except the AST (``xscl.lang.ast``) and the parser; its errors use the
public codes of ``xscl.errors`` and its dead letters the one public record
(``xscl.connectors.dead_letters``), so one fault gets one code and one line from
every engine and from the reference.

Public API:

* ``evaluate(queries, documents) -> list[ResultRecord]``: all results, PUBLISH
  streams fed back, sorted by (query, result_id).
* ``evaluate_query(query, documents) -> list[ResultRecord]``.
* ``read_envelopes(lines) -> (documents, dead_letters)``.
* ``run_batch(queries, input_path, output_path, *, allowed_lateness_micros=None)
  -> RunSummary``.
"""

from xscl.reference.batch import (
    RunSummary,
    deadletter_path_for,
    load_queries,
    run_batch,
)
from xscl.reference.documents import (
    Document,
    EnvelopeStats,
    make_document,
    read_envelopes,
)
from xscl.reference.evaluate import evaluate, evaluate_query
from xscl.reference.results import DocRef, ResultRecord, result_id
from xscl.reference.timestamps import format_ts, parse_ts
from xscl.reference.xmltree import normalize_value
from xscl.reference.xpathfn import EvalStats

__all__ = [
    "DocRef",
    "Document",
    "EnvelopeStats",
    "EvalStats",
    "ResultRecord",
    "RunSummary",
    "deadletter_path_for",
    "evaluate",
    "evaluate_query",
    "format_ts",
    "load_queries",
    "make_document",
    "normalize_value",
    "parse_ts",
    "read_envelopes",
    "result_id",
    "run_batch",
]
