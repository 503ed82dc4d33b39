"""``xscl api``: the subscription API of a job, and its clients' tokens.

``xscl api --home H`` serves ``service.api.app.create_app`` on uvicorn (loopback by
default); ``xscl api token create NAME [--admin]`` prints a new client token once and
keeps only its hash (``HOME/api/tokens.json``, mode 0600).

Exit codes: 0 done (the server stopped cleanly); 2 a bad option or client name, or a
name that already has a token; 1 the home cannot be written, or the API's packages
are not installed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from xscl.cli.job_args import DEFAULT_NAME

_EPILOG = """\
Start the job, then the API beside it, then subscribe ($TOKEN: what 'token create' printed):
  $ xscl serve --queries examples/rss/queries.xscl --home xscl-data &
  $ xscl api token create alice --home xscl-data
  $ xscl api --home xscl-data --port 8037 &
  $ curl -H "Authorization: Bearer $TOKEN" --data-binary @more.xscl \\
         http://127.0.0.1:8037/subscriptions
The OpenAPI document is served at /openapi.json (docs/openapi.json).
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from xscl.service.api.limits import Limits

    defaults = Limits()
    api = subparsers.add_parser(
        "api",
        help="serve the subscription HTTP API of a job (and manage its client tokens)",
        description=(
            "Serve a job's subscription API: subscribe and unsubscribe queries, page "
            "their results by cursor, invoke them, read their feeds. It reads and writes "
            "only the job's registry and results under --home, so it runs beside "
            "'xscl serve' (started before or after it). Every request needs a client "
            "token ('xscl api token create NAME')."
        ),
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    api.add_argument("--home", default="xscl-data", help="the job's home (default %(default)s)")
    api.add_argument("--name", default=DEFAULT_NAME, help="the job's name (default %(default)s)")
    api.add_argument("--host", default="127.0.0.1", help="address to listen on (%(default)s)")
    api.add_argument("--port", type=int, default=8037, help="port (default %(default)s)")
    api.add_argument(
        "--tokens",
        metavar="FILE",
        help="the clients' token hashes (default HOME/api/tokens.json; e.g. a mounted Secret)",
    )
    api.add_argument(
        "--max-query-bytes",
        type=int,
        default=defaults.max_query_bytes,
        help="largest subscribe body in bytes (default %(default)s)",
    )
    api.add_argument(
        "--max-queries",
        type=int,
        default=defaults.max_queries,
        help="most queries in one subscribe request (default %(default)s)",
    )
    api.add_argument(
        "--subscribe-rate",
        type=float,
        default=defaults.subscribe_rate,
        help="subscribe requests per second and client (default %(default)s)",
    )
    api.add_argument(
        "--subscribe-burst",
        type=int,
        default=defaults.subscribe_burst,
        help="subscribe requests a client may make at once (default %(default)s)",
    )
    api.set_defaults(func=run_api)
    commands = api.add_subparsers(dest="api_command", metavar="token")
    token = commands.add_parser("token", help="manage client tokens")
    token_commands = token.add_subparsers(dest="token_command", metavar="create", required=True)
    create = token_commands.add_parser(
        "create",
        help="create a client's token: printed once, only its hash is kept",
        description=(
            "Create a token for client NAME and print it once; only its SHA-256 is kept "
            "(HOME/api/tokens.json, mode 0600). The client sees and changes only its own "
            "subscriptions; --admin sees and changes all."
        ),
    )
    create.add_argument("client", metavar="NAME")
    create.add_argument("--admin", action="store_true", help="the client sees every subscription")
    create.add_argument("--home", default=argparse.SUPPRESS, help="the job's home")
    create.add_argument(
        "--tokens",
        metavar="FILE",
        default=argparse.SUPPRESS,
        help="the tokens file to add to (default HOME/api/tokens.json)",
    )
    create.set_defaults(func=run_token_create)


def run_token_create(args: argparse.Namespace) -> int:
    from xscl.errors import ApiRequestError
    from xscl.service.api.tokens import TokenStore

    store = TokenStore(args.home, args.tokens)
    try:
        token = store.create(args.client, admin=args.admin)
    except ApiRequestError as exc:
        print(f"xscl api token create: {exc}", file=sys.stderr)
        return 1 if exc.code == "XSCL-A008" else 2
    except OSError as exc:
        from xscl.cli.common import os_error_reason, unwritable_folder

        reason = unwritable_folder(store.path.parent) or os_error_reason(exc)
        print(
            f"xscl api token create: cannot write the tokens file {store.path}: {reason}; "
            "give --home (or --tokens) a place you can write to",
            file=sys.stderr,
        )
        return 1
    print(token)
    role = "admin" if args.admin else "client"
    print(f"(token of {role} {args.client!r}; shown only this once)", file=sys.stderr)
    return 0


def run_api(args: argparse.Namespace) -> int:
    home = Path(args.home)
    if not home.is_dir():
        print(
            f"xscl api: --home {home} is not a directory: pass the --home of the job "
            "('xscl serve --home HOME')",
            file=sys.stderr,
        )
        return 2
    if not 0 < args.port < 65536 or min(args.max_query_bytes, args.max_queries) < 1:
        print("xscl api: --port, --max-query-bytes and --max-queries must be positive")
        return 2
    try:
        import uvicorn

        from xscl.service.api.app import create_app
    except ModuleNotFoundError as exc:
        print(f"xscl api: {exc.name} is not installed: pip install 'xscl[api]'", file=sys.stderr)
        return 1
    from xscl.service.api.limits import Limits

    limits = Limits(
        max_query_bytes=args.max_query_bytes,
        max_queries=args.max_queries,
        subscribe_rate=args.subscribe_rate,
        subscribe_burst=args.subscribe_burst,
    )
    app = create_app(home, args.name, limits=limits, tokens=args.tokens)
    uvicorn.run(app, host=args.host, port=args.port, log_level="info")
    return 0
