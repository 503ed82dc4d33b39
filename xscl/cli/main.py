"""Entry point of the ``xscl`` console script.

Each command is a module of this package exposing ``register(subparsers)``;
the module adds its own sub-parser and sets ``func`` to a ``run(args) -> int``.
Commands whose optional parts are missing are skipped (so ``--help`` always works).
An ``XsclError`` a command does not handle itself is printed as one line: exit 1
when it is an ``OSError`` (the environment), else 2 (the input).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from xscl import __version__
from xscl.errors import XsclError

#: Command modules, in the order ``--help`` lists them.
COMMAND_MODULES: tuple[str, ...] = (
    "xscl.cli.check",
    "xscl.cli.explain",
    "xscl.cli.run",
    "xscl.cli.poll",
    "xscl.cli.serve",
    "xscl.cli.subscribe",
    "xscl.cli.api",
    "xscl.cli.spool",
    "xscl.cli.status",
    "xscl.cli.templates_cmd",
    "xscl.cli.cel",
)

DESCRIPTION = """\
xscl evaluates many continuous XSCL join queries over XML and RSS/Atom streams.

Typical session:
  xscl check queries.xscl                 validate a query file (exit 0 or 2)
  xscl explain queries.xscl               normal form, shared variables, templates
  xscl explain --sharing --home H         the groups of a job's queries that share state
  xscl run --queries Q.xscl --input docs.jsonl --output results.jsonl
                                          evaluate a batch of documents
  xscl poll --spool spool/ feeds/         ingest RSS/Atom feeds into the durable spool
  xscl spool ls|cat spool/                what the spool holds, per stream and time range
  xscl serve --queries Q.xscl --home H    run them continuously (Spark), results under H
  xscl subscribe MORE.xscl --home H       add queries to the running job (unsubscribe ID)
  xscl api --home H                       the subscription HTTP API beside the job
  xscl status --home H                    its primary, standbys, last batch, lag, results
  xscl cel check|run ...                  CEL event queries over relational events (docs/cel.md)

The language is specified in docs/language.md; run 'xscl COMMAND --help' for details.
"""


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every available command registered."""
    parser = argparse.ArgumentParser(
        prog="xscl",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"xscl {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name is not None and exc.name.startswith("xscl"):
                continue  # the command's package is not part of this build
            raise
        module.register(subparsers)
    _remember_parsers(parser)
    return parser


def _remember_parsers(parser: argparse.ArgumentParser) -> None:
    """Each (sub-)command's parser is the default ``command_parser`` of what it parses:
    the innermost one's default wins, so a usage error names the command's own usage."""
    parser.set_defaults(command_parser=parser)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _remember_parsers(sub)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``xscl`` command line; returns the process exit code."""
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # said by the command's parser: its usage, not the top-level one
        args.command_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        code: int = args.func(args)
    except XsclError as exc:  # not foreseen by the command: still one line, no traceback
        print(f"xscl {args.command}: {exc}", file=sys.stderr)
        return 1 if isinstance(exc, OSError) else 2
    return code


if __name__ == "__main__":
    sys.exit(main())
