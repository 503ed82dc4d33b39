"""``xscl explain FILE``: normal form, shared variables and query templates of a file;
``xscl explain --sharing``: the sharing groups of a file's or a job's queries
(``explain_sharing``)."""

from __future__ import annotations

import argparse
import sys

from xscl.cli.common import cannot_read, load_queries, print_errors
from xscl.cli.job_args import DEFAULT_NAME
from xscl.engine.placement_report import placement_report
from xscl.errors import XsclSyntaxError
from xscl.lang.explain import explain

#: Groups listed by ``--sharing`` unless ``--top`` says otherwise.
DEFAULT_TOP = 5


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "explain",
        help="show how the engine sees a query file, or how a job's queries share state",
        description=(
            "Print, for every valid query of FILE, its value-join normal form (blocks, "
            "pattern variables with their canonical definitions, equalities, windows); "
            "then the variables shared between queries (computed and stored once); then "
            "the query templates (graph minors of the join graphs), each with its "
            "conjunctive query in Datalog and SQL and the queries it evaluates; then where "
            "'xscl serve' evaluates each query (partitioned by a value or by time, or in "
            "its one chain group, and why). "
            "With --sharing, print the sharing groups instead: queries are in one group "
            "when they share a template, a Stage-1 definition or a PUBLISHed stream, "
            "directly or through others (connected components). Of FILE in this process, "
            "or of the live queries of a job's registry (--home, --name) on Spark, from "
            "its compiled table (compiling what is not compiled yet, as 'xscl serve' does)."
        ),
        epilog=(
            "examples:\n"
            "  xscl explain examples/thesis/queries.xscl\n"
            "  xscl explain --sharing examples/thesis/queries.xscl\n"
            "  xscl explain --sharing --home xscl-data --top 10"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("file", nargs="?", help="the .xscl query file")
    sharing = parser.add_argument_group("sharing groups")
    sharing.add_argument(
        "--sharing",
        action="store_true",
        help="print the sharing groups of FILE (in process) or of a job (--home, on Spark)",
    )
    sharing.add_argument(
        "--home", help="with --sharing: the home of the job whose registry to read (no FILE)"
    )
    sharing.add_argument(
        "--name", default=DEFAULT_NAME, help="with --home: the job's name (default %(default)s)"
    )
    sharing.add_argument(
        "--master", help="with --home: Spark master (default: local[2], or $XSCL_SPARK_MASTER)"
    )
    sharing.add_argument(
        "--top",
        type=int,
        default=DEFAULT_TOP,
        metavar="N",
        help="with --sharing: list the N largest groups (default %(default)s)",
    )
    sharing.add_argument("--json", action="store_true", help="with --sharing: one JSON object")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.sharing:
        from xscl.cli.explain_sharing import run_sharing

        return run_sharing(args)
    if args.file is None or args.home is not None:
        print("xscl explain: give a query FILE (--home goes with --sharing)", file=sys.stderr)
        return 2
    try:
        loaded = load_queries(args.file)
    except (OSError, XsclSyntaxError) as exc:
        return cannot_read("explain", args.file, exc)
    print_errors(loaded.errors, source=args.file)
    print(explain(list(loaded.queries)))
    try:
        from xscl.templates import explain_templates
    except ImportError:
        pass
    else:
        print(explain_templates(list(loaded.queries)))
    print()
    print(placement_report(list(loaded.queries)))
    return 0 if not loaded.errors else 2
