"""``xscl explain FILE``: normal form, shared variables and query templates of a file."""

from __future__ import annotations

import argparse
import sys

from xscl.cli.common import load_queries, print_errors
from xscl.lang.explain import explain


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "explain",
        help="show how the engine sees a query file",
        description=(
            "Print, for every valid query of FILE, its value-join normal form (blocks, "
            "pattern variables with their canonical definitions, equalities, windows); "
            "then the variables shared between queries (computed and stored once); then "
            "the query templates (graph minors of the join graphs), each with its "
            "conjunctive query in Datalog and SQL and the queries it evaluates."
        ),
        epilog="example: xscl explain examples/thesis/queries.xscl",
    )
    parser.add_argument("file", help="the .xscl query file")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        loaded = load_queries(args.file)
    except OSError as exc:
        print(f"xscl explain: cannot read {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print_errors(loaded.errors, source=args.file)
    print(explain(list(loaded.queries)))
    try:
        from xscl.templates import explain_templates
    except ImportError:
        pass
    else:
        print(explain_templates(list(loaded.queries)))
    return 0 if not loaded.errors else 2
