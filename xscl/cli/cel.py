"""``xscl cel check|explain FILE`` and ``xscl cel run``: CEL event queries (docs/cel.md);
``xscl cel subscribe|unsubscribe`` are ``cli.cel_subscribe``.

``check`` parses and validates a CEL file (exit 0 when every query is valid,
else 2); ``explain`` prints the merged automaton of its valid queries (and
their errors, exit 2 if any). ``run`` is the batch contract of ``xscl run`` for events,
except that a bad query never affects the others (docs/cel.md 7): every rejected
query's error is printed, the valid queries run and their results are written,
and the exit code is 2 (``EXIT_REJECTED``, the code of ``check`` for the same
file). A file without a valid query, or a usage error, writes nothing (exit 2);
an ``--output`` that cannot be written is said in one line before the run (exit 1).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from xscl.cli import cel_subscribe
from xscl.cli.common import (
    EXIT_REJECTED,
    by_position,
    cannot_read,
    os_error_reason,
    parse_duration,
    print_errors,
    unwritable_file,
    unwritable_folder,
)
from xscl.errors import SparkBatchError, XsclError, XsclSyntaxError
from xscl.events.batch import run_batch
from xscl.events.engine import Engine, EngineConfig
from xscl.events.explain import explain
from xscl.lang.cel.parser import parse_file
from xscl.lang.cel.validation import Program, validate
from xscl.lang.source import read_source

_OUTPUT_ADVICE = "give --output a file path in a directory you can write to"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "cel",
        help="check and run CEL event queries (FILTER / NEXT / FOLD)",
        description="CEL, the Cayuga Event Language: patterns over relational events "
        "(docs/cel.md).",
    )
    commands = parser.add_subparsers(dest="cel_command", metavar="COMMAND", required=True)
    check = commands.add_parser(
        "check",
        help="validate a CEL query file",
        description=(
            "Parse and validate every query of FILE. Every error is printed with its "
            "code, query id, line, column, a caret excerpt and what was expected. "
            "Exit 0 if all queries are valid, 2 otherwise."
        ),
        epilog="example: xscl cel check examples/cel/stocks.cel",
    )
    check.add_argument("file", help="the .cel query file")
    check.add_argument("--json", action="store_true", help="print errors and queries as JSON")
    check.set_defaults(func=run_check)
    explain = commands.add_parser(
        "explain",
        help="show the merged automaton of a CEL query file",
        description=(
            "Compile the valid queries of FILE into the engine and print its states and "
            "edges (thesis 4.3 notation: e.a is the event's attribute, S3.a the stored "
            "instance's), with how many queries share each state."
        ),
        epilog="example: xscl cel explain examples/cel/stocks.cel",
    )
    explain.add_argument("file", help="the .cel query file")
    explain.add_argument(
        "--no-merging", action="store_true", help="one automaton per query (no prefix merging)"
    )
    explain.set_defaults(func=run_explain)
    batch = commands.add_parser(
        "run",
        help="evaluate CEL queries over a JSONL file of events",
        description=(
            "Evaluate every query of --queries over the events of --input (JSON Lines "
            "envelopes {stream, start, end, attrs}) and write every result to --output "
            "(JSON Lines records {query, stream, start, end, attrs, id}). Bad lines go to "
            "OUTPUT's .deadletter.jsonl sibling and do not fail the run. A query with an error "
            "is printed with its code and does not stop the others: the valid queries' "
            "results are written and the exit code is 2."
        ),
        epilog=(
            "engines: reference = the brute-force oracle (each query alone, straight from "
            "docs/cel.md); local = the in-process engine (merged Cayuga automata with the "
            "AN, AI and FR indices); spark = the CEL streaming query of `xscl serve "
            "--cel-queries` run once (partitioned groups on the executors).\n"
            "example: xscl cel run --queries examples/cel/stocks.cel "
            "--input examples/cel/stocks.jsonl --output /tmp/cel-results.jsonl"
        ),
    )
    batch.add_argument("--queries", required=True, metavar="FILE.cel")
    batch.add_argument("--input", required=True, metavar="EVENTS.jsonl")
    batch.add_argument("--output", required=True, metavar="RESULTS.jsonl")
    batch.add_argument("--engine", choices=["local", "reference", "spark"], default="local")
    batch.add_argument(
        "--reorder-slack",
        metavar="DURATION",
        help="file order is the arrival order; events ending more than DURATION before "
        "the latest end seen are dead-lettered as late (default: the whole file counts)",
    )
    batch.set_defaults(func=run_events)
    publish = commands.add_parser(
        "publish",
        help="add a JSONL file of events to a running job's CEL input",
        description=(
            "Add FILE (JSON Lines envelopes {stream, start, end, attrs}) as the next file of "
            "HOME/cel-events/NAME, which `xscl serve --cel-queries` reads in order. The file "
            "is copied durably and counts only once complete; bad lines become the job's "
            "dead letters."
        ),
        epilog="example: xscl cel publish examples/cel/stocks.jsonl --home xscl-data",
    )
    publish.add_argument("file", help="the .jsonl events file")
    publish.add_argument("--home", required=True, help="the job's home directory")
    publish.add_argument("--name", default="xscl", help="the job's name (default %(default)s)")
    publish.set_defaults(func=run_publish)
    cel_subscribe.register(commands)


def _load(path: str) -> tuple[Program, list[XsclError]]:
    text = read_source(path, code="CEL-P012")
    parsed = parse_file(text, source=path)
    program, errors = validate(parsed, text=text, source=path)
    return program, list(by_position([*parsed.errors, *errors]))


def run_check(args: argparse.Namespace) -> int:
    try:
        program, errors = _load(args.file)
    except (OSError, XsclSyntaxError) as exc:
        return cannot_read("cel check", args.file, exc, as_json=args.json)
    print_errors(errors, source=args.file, as_json=args.json)
    if args.json:
        for query in program.queries:
            print(json.dumps({"query": query.qid, "valid": True}))
    else:
        total = len(program.queries) + len(errors)
        print(f"{len(program.queries)} valid, {len(errors)} invalid ({total} checked)")
    return 0 if not errors else 2


def run_explain(args: argparse.Namespace) -> int:
    try:
        program, errors = _load(args.file)
    except (OSError, XsclSyntaxError) as exc:
        return cannot_read("cel explain", args.file, exc)
    print_errors(errors, source=args.file)
    engine = Engine(EngineConfig.without("merging") if args.no_merging else None)
    engine.subscribe(program)
    for line in explain(engine):
        print(line)
    return 0 if not errors else 2


def run_publish(args: argparse.Namespace) -> int:
    from xscl.events.event_folder import add_events, events_folder

    folder = events_folder(Path(args.home), args.name)
    try:
        added = add_events(folder, args.file)
    except (OSError, UnicodeDecodeError) as exc:
        if isinstance(exc, OSError) and exc.filename is not None and Path(
            str(exc.filename)
        ) != Path(args.file):  # the events folder under the home, not the input file
            why = unwritable_folder(folder) or os_error_reason(exc)
            print(
                f"xscl cel publish: cannot add {args.file} to the job's events {folder} "
                f"under --home {args.home}: {why}; give --home the job's home, a "
                "folder you can write to",
                file=sys.stderr,
            )
            return 1
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        print(f"xscl cel publish: cannot add {args.file}: {reason}", file=sys.stderr)
        return 1
    print(
        f"xscl cel publish: {added.events} events ({added.bad} bad lines) -> {folder} #{added.seq}",
        file=sys.stderr,
    )
    return 0


def run_events(args: argparse.Namespace) -> int:
    slack: int | None = None
    if args.reorder_slack is not None:
        try:
            slack = parse_duration(args.reorder_slack)
        except ValueError as exc:
            print(f"xscl cel run: --reorder-slack: {exc}", file=sys.stderr)
            return 2
    if not Path(args.input).is_file():
        print(f"xscl cel run: no such input file: {args.input}", file=sys.stderr)
        return 2
    try:
        program, errors = _load(args.queries)
    except (OSError, XsclSyntaxError) as exc:
        return cannot_read("cel run", args.queries, exc)
    if errors:
        print_errors(errors, source=args.queries)
        if not program.queries:
            print(f"xscl cel run: {len(errors)} error(s) and no valid query; nothing was written",
                  file=sys.stderr)  # fmt: skip
            return 2
    problem = unwritable_file(args.output)
    if problem is not None:
        print(f"xscl cel run: cannot write --output {args.output}: {problem}; {_OUTPUT_ADVICE}",
              file=sys.stderr)  # fmt: skip
        return 1
    started = time.perf_counter()
    try:
        summary = run_batch(
            program,
            args.input,
            args.output,
            evaluator=args.engine,
            slack=slack,
            queries_text=read_source(args.queries, code="CEL-P012"),
        )
    except SparkBatchError as exc:
        print(f"xscl cel run: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"xscl cel run: I/O error: {os_error_reason(exc)} (--input {args.input}, "
              f"--output {args.output})", file=sys.stderr)  # fmt: skip
        return 1
    elapsed = time.perf_counter() - started
    print(
        f"xscl cel run ({args.engine}): {summary.events} events ({summary.ignored} of unread "
        f"streams ignored), {summary.results} results, {summary.dead_letters} dead letters "
        f"({summary.late} late) in {elapsed:.2f} s -> {args.output}",
        file=sys.stderr,
    )
    if errors:
        print(f"xscl cel run: {len(errors)} error(s) above: those queries were rejected, the "
              f"results are the other {len(program.queries)}'s (exit {EXIT_REJECTED})",
              file=sys.stderr)  # fmt: skip
        return EXIT_REJECTED
    return 0
