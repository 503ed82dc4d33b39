"""``xscl status``: the pair, the last commit and the lag of a job under a home."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from xscl.cli.job_args import DEFAULT_NAME, add_lease_arguments
from xscl.service.pair.lease import DEFAULT_LEASE_SECONDS


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "status",
        help="the job's primary, standbys, last committed batch, lag and results",
        description=(
            "Print what a job served with 'xscl serve' is doing, read from its home: the "
            "primary's pid, host and epoch and when its lease expires, each standby, the "
            "last committed micro-batch and the spool offset it read up to, the spool's "
            "head, the lag (head minus committed offset) and the results committed. "
            "Starts no Spark; works while the job runs or after it stopped."
        ),
        epilog="example:\n  xscl status --home xscl-data --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--home", default="xscl-data", help="the job's home (default %(default)s)")
    parser.add_argument("--name", default=DEFAULT_NAME, help="the job's name (default %(default)s)")
    parser.add_argument("--spool", help="the job's spool (default: HOME/spool)")
    parser.add_argument("--json", action="store_true", help="one JSON object")
    add_lease_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from xscl.errors import LeaseStoreError, ResultsDirectoryError
    from xscl.service.pair.lease import job_lease, pair_folder
    from xscl.service.pair.member import StandbyBoard
    from xscl.service.pair.status import job_status

    home = Path(args.home).resolve()
    if not home.is_dir():
        print(f"xscl status: --home {args.home} is not a directory", file=sys.stderr)
        return 2
    try:
        lease = job_lease(args.lease, home, args.name, DEFAULT_LEASE_SECONDS, args.lease_name,
                          args.lease_namespace)
        status = job_status(
            home,
            args.name,
            lease,
            Path(args.spool).resolve() if args.spool else home / "spool",
            StandbyBoard(pair_folder(home, args.name) / "standbys"),
        )
    except (LeaseStoreError, ResultsDirectoryError) as exc:
        print(f"xscl status: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(status.to_json(), sort_keys=True))
    else:
        print("\n".join(status.lines()))
    return 0
