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
import tempfile
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
from xscl.cli.spool import write_envelopes
from xscl.connectors.document import parse_ts
from xscl.errors import XsclError, XsclSyntaxError

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
        help="evaluate queries over a JSONL file of documents, or a spool's history",
        description=(
            "Evaluate every query of --queries over the documents of --input (JSON Lines "
            "envelopes {stream, docid, ts, xml}; file order = arrival order) and write the "
            "complete result set to --output (one JSON result record per line); or over a "
            "durable spool's documents (--spool, from --since on: a backfill). Malformed "
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
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--input", metavar="DOCS.jsonl", help="document envelopes, one per line")
    source.add_argument(
        "--spool",
        metavar="DIR",
        help="a durable spool's documents instead (its history; offset order = arrival order)",
    )
    parser.add_argument(
        "--since",
        metavar="TS",
        help="with --spool: only documents with ts at or after TS (RFC 3339)",
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
    since: int | None = None
    if args.since is not None:
        if args.spool is None:
            print("xscl run: --since needs --spool", file=sys.stderr)
            return 2
        try:
            since = parse_ts(args.since)
        except XsclError as exc:
            print(f"xscl run: --since: {exc}", file=sys.stderr)
            return 2
    if args.spool is not None:
        if not Path(args.spool).is_dir():
            print(f"xscl run: no such spool directory: {args.spool}", file=sys.stderr)
            return 2
    elif not Path(args.input).is_file():
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
    what = f"--spool {args.spool}" if args.spool is not None else f"--input {args.input}"
    try:
        with tempfile.TemporaryDirectory(prefix="xscl-run-") as scratch:
            documents = args.input
            if args.spool is not None:  # the spool's history as envelopes, in arrival order
                documents = str(Path(scratch) / "spool.jsonl")
                write_envelopes(Path(args.spool), Path(documents), since)
            summary = engine.run_batch(
                list(loaded.queries), documents, args.output, allowed_lateness_micros=lateness
            )
    except OSError as exc:  # the disk filled up meanwhile, or the spool is corrupt
        print(f"xscl run: I/O error: {os_error_reason(exc)} ({what}, "
              f"--output {args.output})", file=sys.stderr)  # fmt: skip
        return 1
    elapsed = time.perf_counter() - started
    print(
        f"xscl run ({args.engine}): {summary.documents} documents, {summary.results} results, "
        f"{summary.dead_letters} dead letters in {elapsed:.2f} s -> {args.output}",
        file=sys.stderr,
    )
    return 0
