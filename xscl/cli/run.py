"""``xscl run``: evaluate queries over a batch of documents (spec section 4, batch command).

The input file's order is the arrival order. The result set is written
atomically; malformed documents go to ``RESULTS.deadletter.jsonl``. Invalid
queries or usage errors print every error, write nothing and exit 2; an
``--output`` that cannot be written is said in one line before the run (exit 1).
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path
from typing import Any

from xscl.cli.common import (
    OUTPUT_ADVICE,
    cannot_read,
    load_queries,
    os_error_reason,
    parse_duration,
    print_errors,
    unwritable_file,
)
from xscl.errors import XsclSyntaxError

#: Engine name -> module exposing ``run_batch(queries, input_path, output_path, *,
#: allowed_lateness_micros)`` that returns a summary with ``results``,
#: ``documents`` and ``dead_letters`` counts.
ENGINES: dict[str, str] = {
    "reference": "xscl.reference",
    "local": "xscl.engine",
    "spark": "xscl.spark_plugin.batch",
}


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "run",
        help="evaluate queries over a JSONL file of documents",
        description=(
            "Evaluate every query of --queries over the documents of --input (JSON Lines "
            "envelopes {stream, docid, ts, xml}; file order = arrival order) and write the "
            "complete result set to --output (one JSON result record per line). Malformed "
            "documents go to OUTPUT's .deadletter.jsonl sibling and do not fail the run."
        ),
        epilog=(
            "engines: reference = the brute-force oracle (each query alone, straight from "
            "docs/language.md); local = the shared in-process engine (Stage 1 automaton + query "
            "templates); spark = the streaming job run once (availableNow) over a temporary "
            "spool, reusing an active SparkSession or starting a local one.\n"
            "example: xscl run --queries examples/thesis/queries.xscl "
            "--input examples/thesis/documents.jsonl --output /tmp/results.jsonl"
        ),
    )
    parser.add_argument(
        "--queries", required=True, metavar="FILE.xscl", help="the query file (docs/language.md)"
    )
    parser.add_argument(
        "--input", required=True, metavar="DOCS.jsonl", help="document envelopes, one per line"
    )
    parser.add_argument(
        "--output",
        required=True,
        metavar="RESULTS.jsonl",
        help="the result set, one JSON record per line (written atomically)",
    )
    parser.add_argument(
        "--engine",
        choices=sorted(ENGINES),
        default="local",
        help="which engine evaluates the queries (default %(default)s; see below)",
    )
    parser.add_argument(
        "--allowed-lateness",
        metavar="DURATION",
        help="documents older than (latest ts seen - DURATION) are dead-lettered as late "
        "(default: unbounded, the whole file counts)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    lateness: int | None = None
    if args.allowed_lateness is not None:
        try:
            lateness = parse_duration(args.allowed_lateness)
        except ValueError as exc:
            print(f"xscl run: --allowed-lateness: {exc}", file=sys.stderr)
            return 2
    if not Path(args.input).is_file():
        print(f"xscl run: no such input file: {args.input}", file=sys.stderr)
        return 2
    try:
        loaded = load_queries(args.queries)
    except (OSError, XsclSyntaxError) as exc:
        return cannot_read("run", args.queries, exc)
    if loaded.errors:
        print_errors(loaded.errors, source=args.queries)
        print(f"xscl run: {len(loaded.errors)} error(s); nothing was written", file=sys.stderr)
        return 2
    problem = unwritable_file(args.output)
    if problem is not None:
        print(f"xscl run: cannot write --output {args.output}: {problem}; {OUTPUT_ADVICE}",
              file=sys.stderr)  # fmt: skip
        return 1
    engine: Any = importlib.import_module(ENGINES[args.engine])
    started = time.perf_counter()
    try:
        summary = engine.run_batch(
            list(loaded.queries), args.input, args.output, allowed_lateness_micros=lateness
        )
    except OSError as exc:  # e.g. the disk filled up, or the folder changed meanwhile
        print(f"xscl run: I/O error: {os_error_reason(exc)} (--input {args.input}, "
              f"--output {args.output})", file=sys.stderr)  # fmt: skip
        return 1
    elapsed = time.perf_counter() - started
    print(
        f"xscl run ({args.engine}): {summary.documents} documents, {summary.results} results, "
        f"{summary.dead_letters} dead letters in {elapsed:.2f} s -> {args.output}",
        file=sys.stderr,
    )
    return 0
