"""The subscription API as a Starlette app (``create_app``); ``xscl api`` serves it.

Its contract with the job is the CLI's: subscribe and unsubscribe append events to
the job's registry (``service.subscriptions``, each with the client as ``owner``),
and results are read from the committed results folder (``results.cursor``) and the
feeds the job writes. The app keeps no state of its own beyond counters and rate
buckets, so it can be killed at any time: an acknowledged subscribe is an event file
written atomically before the answer.

Every refusal is a JSON body ``{"code", "message", "line", "column", "errors"}`` with
a code of ``xscl.errors`` and a 4xx status, and changes nothing.

Ids are per client (``service.namespaces``): a client's ``W1`` is ``<client>~W1`` in
the registry and the job, and the client sees and names it ``W1``; another client's
ids answer 404 as unknown ones do. An admin token works as the command line does:
its subscriptions take their ids as written, and it names every subscription by its
registry id (``alice~W1``), listed with its owner.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from xscl.errors import ApiRequestError, ResultCursorError, SubscriptionError, XsclError
from xscl.lang.ast import Query
from xscl.lang.durations import parse_duration
from xscl.lang.parser import parse_file
from xscl.lang.printer import format_query
from xscl.lang.unbounded import unbounded_joins
from xscl.results import history_pages
from xscl.results.cursor import query_window
from xscl.results.window import ResultsWindow
from xscl.service.api.limits import Limits, RateLimiter
from xscl.service.api.metrics import Metrics
from xscl.service.api.openapi import openapi_document
from xscl.service.api.page import page_routes
from xscl.service.api.tokens import Client, TokenStore
from xscl.service.namespaces import QUERY_ID, REGISTRY_ID, local_id, registry_id
from xscl.service.subscriptions import (
    Subscription,
    SubscriptionEvent,
    SubscriptionLog,
    publish_readers,
)

#: HTTP status of each code a request can be refused with.
_STATUS = {
    "XSCL-A001": 401,
    "XSCL-A002": 404,
    "XSCL-A003": 413,
    "XSCL-A004": 400,
    "XSCL-A005": 413,
    "XSCL-A006": 400,
    "XSCL-A007": 429,
    "XSCL-A008": 500,
    "XSCL-A009": 404,
    "XSCL-A010": 400,
    "XSCL-S010": 422,
    "XSCL-S011": 409,
    "XSCL-S012": 404,
    "XSCL-S013": 422,
    "XSCL-S014": 500,
    "XSCL-S017": 409,
}


def error_body(error: XsclError) -> dict[str, Any]:
    """What a refusal carries: the error's code and place, and the queries' errors."""
    nested = getattr(error, "errors", ())
    first = nested[0] if nested and error.line is None else error
    return {
        "code": error.code,
        "message": error.message,
        "line": first.line,
        "column": first.column,
        "errors": [
            {k: e.to_dict()[k] for k in ("code", "message", "qid", "line", "column")}
            for e in nested
        ],
    }


def _refuse(error: XsclError) -> JSONResponse:
    # a code without a status of its own: the environment failed (500) or the input (400)
    status = _STATUS.get(error.code, 500 if isinstance(error, OSError) else 400)
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse(error_body(error), status_code=status, headers=headers)


class _Api:
    """The endpoints of one job's API."""

    def __init__(
        self, home: Path, name: str, limits: Limits, metrics: Metrics, tokens: Path | None
    ) -> None:
        self.home = home
        self.name = name
        self.limits = limits
        self.metrics = metrics
        self.tokens = TokenStore(home, tokens)
        self.log = SubscriptionLog(home / "registry" / name)
        self.results_root = home / "results" / name
        self.rate = RateLimiter(limits.subscribe_rate, limits.subscribe_burst)
        #: one registry change at a time in this process: a subscribe checks the ids
        #: taken and then appends, and two requests must not both pass the check
        self.changing = threading.Lock()
        #: the results structures of each subscription invoked (results.window): its
        #: history's folder's, then the job's
        self.windows: dict[tuple[str, int | None, Path | None], list[ResultsWindow]] = {}

    # ------------------------------------------------------------- helpers
    def client(self, request: Request) -> Client:
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer":
            raise ApiRequestError.from_code("XSCL-A001")
        return self.tokens.lookup(token.strip())

    def owned(self, request: Request, client: Client) -> tuple[str, Subscription]:
        """The registry id and subscription named in the path, if the client may see it
        (else A002)."""
        qid = str(request.path_params["qid"])
        if not (REGISTRY_ID if client.admin else QUERY_ID).fullmatch(qid):
            raise ApiRequestError.from_code("XSCL-A002", f"{qid[:60]!r} is not a query id")
        rid = registry_id(_namespace(client), qid)
        subscribed = self.log.subscription(rid)
        if subscribed is None or not (client.admin or subscribed.owner == client.name):
            raise ApiRequestError.from_code("XSCL-A002", f"no subscription {qid!r}")
        return rid, subscribed

    def history_root(self, subscribed: Subscription) -> Path | None:
        """The folder of a subscription's history results (None: no history scan has
        committed any yet)."""
        folder = self.results_root / "history" / str(subscribed.event)
        return folder if folder.is_dir() else None

    async def body_text(self, request: Request) -> str:
        """The request's XSCL text: the body, or the ``text`` of a JSON body."""
        limit = self.limits.max_query_bytes
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise ApiRequestError.from_code(
                "XSCL-A003", f"the body has {declared} bytes, more than the limit {limit}"
            )
        data = bytearray()
        async for chunk in request.stream():
            data += chunk
            if len(data) > limit:
                raise ApiRequestError.from_code(
                    "XSCL-A003", f"the body has more than the limit of {limit} bytes"
                )
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ApiRequestError.from_code(
                "XSCL-A004", f"the body is not UTF-8 (byte {exc.start})"
            ) from exc
        if request.headers.get("content-type", "").split(";")[0].strip() == "application/json":
            try:
                body = json.loads(text)
            except ValueError as exc:
                raise ApiRequestError.from_code(
                    "XSCL-A004", f"the body is not valid JSON: {exc}"
                ) from exc
            if not isinstance(body, dict) or not isinstance(body.get("text"), str):
                raise ApiRequestError.from_code(
                    "XSCL-A004", 'a JSON body must be an object {"text": "<XSCL queries>"}'
                )
            text = body["text"]
        return text

    async def queries_text(self, request: Request) -> str:
        """The body's XSCL text, within the limit of queries per request."""
        text = await self.body_text(request)
        queries = parse_file(text, source="request").queries
        if len(queries) > self.limits.max_queries:
            raise ApiRequestError.from_code(
                "XSCL-A005",
                f"{len(queries)} queries, more than the limit of {self.limits.max_queries}",
            )
        return text

    def count(self, request: Request, status: int) -> None:
        route = request.scope.get("route")
        path = getattr(route, "path", "unmatched")
        self.metrics.add("xscl_api_requests_total", route=path, status=str(status))

    # ----------------------------------------------------------- endpoints
    async def subscribe(self, request: Request) -> Response:
        client = self.client(request)
        if not self.rate.allow(client.name):
            self.metrics.add("xscl_api_rate_limited_total")
            raise ApiRequestError.from_code("XSCL-A007")
        history = _history_param(request)
        text = await self.queries_text(request)

        def append() -> SubscriptionEvent:
            with self.changing:
                return self.log.subscribe(
                    text,
                    source=f"api:{client.name}",
                    owner=client.name,
                    namespace=_namespace(client),
                    history=history,
                )

        event = await run_in_threadpool(append)
        self.metrics.add("xscl_api_subscribed_queries_total", len(event.ids))
        body = {"ids": _shown(client, event.ids), "version": event.version}
        return JSONResponse({**body, "warnings": _warnings(client, event.queries())}, 201)

    async def check(self, request: Request) -> Response:
        """What ``subscribe`` would answer, changing nothing (a page checks as one types)."""
        client = self.client(request)
        text = await self.queries_text(request)
        good = await run_in_threadpool(
            lambda: self.log.check(text, source=f"api:{client.name}", namespace=_namespace(client))
        )
        ids = _shown(client, [query.qid for query in good])
        return JSONResponse({"ids": ids, "warnings": _warnings(client, good)})

    async def listing(self, request: Request) -> Response:
        client = self.client(request)

        def visible() -> list[dict[str, str]]:
            owners, current = self.log.owners(), self.log.current()
            namespace = _namespace(client)
            shown = [
                (qid, rid, owner)
                for rid, owner in owners.items()
                if (qid := local_id(namespace, rid)) is not None
                and (client.admin or owner == client.name)
                and rid in current
            ]
            return [
                {"id": qid, "owner": owner, "text": format_query(replace(current[rid], qid=qid))}
                for qid, rid, owner in sorted(shown)
            ]

        return JSONResponse({"subscriptions": await run_in_threadpool(visible)})

    async def unsubscribe(self, request: Request) -> Response:
        client = self.client(request)

        def remove() -> SubscriptionEvent:
            with self.changing:
                rid, _subscribed = self.owned(request, client)
                readers = self.readers(client, rid)
                if readers is not None:
                    raise SubscriptionError.from_code("XSCL-S017", readers)
                return self.log.unsubscribe([rid], owner=client.name)

        event = await run_in_threadpool(remove)
        for key in [k for k in self.windows if k[0] in event.ids]:  # on the event loop only
            del self.windows[key]
        self.metrics.add("xscl_api_unsubscribed_queries_total", len(event.ids))
        return JSONResponse({"ids": _shown(client, event.ids), "version": event.version})

    def readers(self, client: Client, rid: str) -> str | None:
        """Why removing ``rid`` would leave readers of the stream it PUBLISHes (None: it
        would not), naming only subscriptions the client may see."""
        current = self.log.current()
        if publish_readers(current, [rid]) is None:
            return None
        namespace = _namespace(client)
        visible = {
            qid: query
            for rid_, query in current.items()
            if (qid := local_id(namespace, rid_)) is not None
        }
        own = publish_readers(visible, [local_id(namespace, rid) or rid])
        return own or ("other subscriptions read the stream it PUBLISHes: it stays while they do")

    async def results(self, request: Request) -> Response:
        client = self.client(request)
        rid, subscribed = await run_in_threadpool(self.owned, request, client)
        limit = _int_param(request, "limit", 100, 1, self.limits.max_page)
        after = request.query_params.get("after")
        cursor = history_pages.decode(after, rid) if after else None
        history = self.history_root(subscribed)
        got = await run_in_threadpool(
            history_pages.page, self.results_root, history, rid, cursor, limit
        )
        self.metrics.add("xscl_api_results_served_total", len(got.records))
        records = _named(got.records, request)
        return JSONResponse({"results": records, "cursor": got.cursor.encode()})

    async def invoke(self, request: Request) -> Response:
        client = self.client(request)
        rid, subscribed = await run_in_threadpool(self.owned, request, client)
        now = int(time.time() * 1_000_000)
        window = query_window(subscribed.query)
        history = self.history_root(subscribed)
        key = (rid, window, history)
        structures = self.windows.get(key)
        if structures is None:
            roots = [self.results_root] if history is None else [history, self.results_root]
            made = [ResultsWindow(root, rid, window) for root in roots]
            structures = self.windows.setdefault(key, made)
        records = [
            record
            for structure in structures  # the history's results, then the job's
            for record in await run_in_threadpool(structure.invoke, now)
        ]
        self.metrics.add("xscl_api_results_served_total", len(records))
        return JSONResponse(
            {
                "results": _named(records, request),
                "now_us": now,
                "window_us": window,  # null: INF
            }
        )

    async def feed(self, request: Request) -> Response:
        client = self.client(request)
        rid, _subscribed = await run_in_threadpool(self.owned, request, client)
        path = self.results_root / "feeds" / f"{rid}.atom"
        if not path.is_file():
            qid = request.path_params["qid"]
            raise ApiRequestError.from_code("XSCL-A002", f"no feed for {qid!r} yet")
        return FileResponse(path, media_type="application/atom+xml")

    async def health(self, request: Request) -> Response:
        versions = self.log.versions()
        return JSONResponse(
            {
                "status": "ok",
                "job": self.name,
                "registry_version": versions[-1] if versions else 0,
                "results": self.results_root.is_dir(),
            }
        )

    async def metrics_text(self, request: Request) -> Response:
        return PlainTextResponse(
            self.metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8"
        )

    async def openapi(self, request: Request) -> Response:
        return JSONResponse(openapi_document())


def _namespace(client: Client) -> str:
    """Where the client's ids live: its own namespace, or the registry's for an admin."""
    return "" if client.admin else client.name


def _warnings(client: Client, queries: Iterable[Query]) -> list[str]:
    """The unbounded joins of subscribed ``queries`` (``lang.unbounded``), as the client
    names them."""
    return [
        line
        for query in queries
        for line in unbounded_joins(query, _shown(client, [query.qid])[0])
    ]


def _shown(client: Client, rids: Iterable[str]) -> list[str]:
    """Registry ids as the client names them."""
    return [local_id(_namespace(client), rid) or rid for rid in rids]


def _named(records: Iterable[dict[str, Any]], request: Request) -> list[dict[str, Any]]:
    """Result records with their ``query`` as the request named it."""
    qid = str(request.path_params["qid"])
    return [{**record, "query": qid} for record in records]


def _int_param(request: Request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    if not raw.isdigit() or not low <= int(raw) <= high:
        raise ApiRequestError.from_code(
            "XSCL-A006", f"{name} must be an integer from {low} to {high}, not {raw[:20]!r}"
        )
    return int(raw)


def _history_param(request: Request) -> int | None:
    """``?history=D`` (a duration: ``7d``, ``12h``, ``0``): how far back the queries'
    history reaches (``service.history``); None: the default."""
    raw = request.query_params.get("history")
    if raw is None:
        return None
    try:
        return parse_duration(raw)
    except ValueError as exc:
        raise ApiRequestError.from_code("XSCL-A006", f"history: {exc}"[:200]) from exc


_Endpoint = Callable[[Request], Awaitable[Response]]


def _guarded(api: _Api, endpoint: _Endpoint) -> _Endpoint:
    """The endpoint with its refusals as coded JSON and every answer counted."""

    async def guarded(request: Request) -> Response:
        try:
            response = await endpoint(request)
        except (ApiRequestError, ResultCursorError, SubscriptionError) as exc:
            response = _refuse(exc)
        except XsclError as exc:  # a query the parser refuses outright, a bad registry
            response = _refuse(exc)
        api.count(request, response.status_code)
        return response

    return guarded


def create_app(
    home: str | Path,
    name: str = "xscl",
    *,
    limits: Limits | None = None,
    metrics: Metrics | None = None,
    tokens: str | Path | None = None,
) -> Starlette:
    """The API of job ``name`` under ``home`` (its registry and results folder);
    ``tokens``: the clients' file when not ``HOME/api/tokens.json``."""
    tokens_file = Path(tokens) if tokens is not None else None
    api = _Api(Path(home), name, limits or Limits(), metrics or Metrics(), tokens_file)
    routes = [
        Route("/subscriptions", _guarded(api, api.subscribe), methods=["POST"]),
        Route("/subscriptions", _guarded(api, api.listing), methods=["GET"]),
        Route("/subscriptions/{qid}", _guarded(api, api.unsubscribe), methods=["DELETE"]),
        Route("/subscriptions/{qid}/results", _guarded(api, api.results), methods=["GET"]),
        Route("/subscriptions/{qid}/invoke", _guarded(api, api.invoke), methods=["GET"]),
        Route("/subscriptions/{qid}/feed.atom", _guarded(api, api.feed), methods=["GET"]),
        Route("/check", _guarded(api, api.check), methods=["POST"]),
        Route("/health", _guarded(api, api.health), methods=["GET"]),
        Route("/metrics", _guarded(api, api.metrics_text), methods=["GET"]),
        Route("/openapi.json", _guarded(api, api.openapi), methods=["GET"]),
        *page_routes(),
    ]

    async def unknown(request: Request, exc: Exception) -> Response:
        status = getattr(exc, "status_code", 404)
        error = ApiRequestError.from_code(
            "XSCL-A009", f"no endpoint {request.method} {request.url.path[:100]}"
        )
        response = JSONResponse(error_body(error), status_code=status)
        api.count(request, status)
        return response

    app = Starlette(routes=routes, exception_handlers={404: unknown, 405: unknown})
    app.state.api = api
    return app
