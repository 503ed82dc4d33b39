"""``xscl check FILE``: parse and validate a query file (exit 0 when all are valid, else 2)."""

from __future__ import annotations

import argparse
import json
import sys

from xscl.cli.common import cannot_read, load_queries, print_errors
from xscl.errors import XsclSyntaxError
from xscl.lang.unbounded import unbounded_joins


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "check",
        help="validate an XSCL query file",
        description=(
            "Parse and validate every query of FILE (syntax, unbound or doubly bound "
            "variables, PUBLISH cycles, unknown streams when --stream is given). "
            "Every error is printed with the query id, line, column and what was "
            "expected; valid queries are listed. Exit 0 if all queries are valid, 2 otherwise."
        ),
        epilog="example: xscl check examples/thesis/queries.xscl",
    )
    parser.add_argument("file", help="the .xscl query file")
    parser.add_argument(
        "--stream",
        action="append",
        metavar="NAME",
        help="a known input stream (repeatable); when given, other stream names are errors",
    )
    parser.add_argument(
        "--json", action="store_true", help="print errors and queries as JSON lines"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        loaded = load_queries(args.file, streams=args.stream)
    except (OSError, XsclSyntaxError) as exc:
        return cannot_read("check", args.file, exc, as_json=args.json)
    print_errors(loaded.errors, source=args.file, as_json=args.json)
    for query in loaded.queries:
        warnings = unbounded_joins(query)
        if args.json:
            print(json.dumps({"query": query.qid, "valid": True, "warnings": warnings}))
        for line in [] if args.json else warnings:
            print(f"xscl check: warning: {line}", file=sys.stderr)
    if not args.json:
        total = len(loaded.queries) + len(loaded.errors)
        print(f"{len(loaded.queries)} valid, {len(loaded.errors)} invalid ({total} checked)")
    return 0 if not loaded.errors else 2
