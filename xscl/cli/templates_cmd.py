"""``xscl templates enumerate``: count the templates of thesis Table 6.3 from the real pipeline."""

from __future__ import annotations

import argparse
import sys

from xscl.templates.enumeration import enumerate_templates, schema_queries
from xscl.templates.plan import template_plan


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "templates",
        help="query templates (thesis 6.4): enumerate those a schema can produce",
        description="Tools around query templates (graph minors of join graphs, thesis 6.4).",
    )
    commands = parser.add_subparsers(dest="templates_command", metavar="SUBCOMMAND")
    enum = commands.add_parser(
        "enumerate",
        help="count the templates of two blocks joined by K value joins (thesis Table 6.3)",
        description=(
            "Generate every two-block query over the schema with K value joins between leaf "
            "variables (up to the schema's symmetry), reduce each join graph to its graph "
            "minor, and count the distinct canonical templates. flat = root with leaves "
            "(two levels); complex = three levels, branching 4. The count is printed alone "
            "on the last line."
        ),
        epilog="example: xscl templates enumerate --schema flat --value-joins 3 --show",
    )
    enum.add_argument("--schema", choices=("flat", "complex"), required=True)
    enum.add_argument("--value-joins", type=int, required=True, metavar="K")
    enum.add_argument("--show", action="store_true", help="draw each template (and its Datalog)")
    enum.add_argument("--datalog", action="store_true", help="with --show, print each CQ_T too")
    enum.set_defaults(func=run)
    parser.set_defaults(func=_usage(parser))


def _usage(parser: argparse.ArgumentParser) -> object:
    def show(_args: argparse.Namespace) -> int:
        parser.print_help(sys.stderr)
        return 2

    return show


def run(args: argparse.Namespace) -> int:
    if not 1 <= args.value_joins <= 6:
        print("xscl templates enumerate: --value-joins must be between 1 and 6", file=sys.stderr)
        return 2
    templates = enumerate_templates(args.schema, args.value_joins)
    if args.show:
        queries = sum(1 for _ in schema_queries(args.schema, args.value_joins))
        print(
            f"{queries} queries over the {args.schema} schema with {args.value_joins} value "
            f"join(s) reduce to {len(templates)} template(s):"
        )
        for number, template in enumerate(templates, start=1):
            print(f"T{number}: {template.describe()}")
            if args.datalog:
                print("   " + template_plan(template).to_datalog().replace("\n", "\n   "))
    print(len(templates))
    return 0
