"""The subscription page (``GET /``): static HTML, CSS and JavaScript from ``static/``
that call the API with the token the user gives. It lists the client's subscriptions,
checks a new one as it is typed (``POST /check``: the error at its line and column),
subscribes and removes, and shows a subscription's results in its window and its feed.

The files are served with a Content-Security-Policy that allows only this origin's
scripts (no inline script), and the page sets server text with ``textContent`` only.
"""

from __future__ import annotations

from importlib import resources

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

_FILES = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/page.js": ("page.js", "text/javascript; charset=utf-8"),
    "/page.css": ("page.css", "text/css; charset=utf-8"),
}
_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache",
}


def _body(name: str) -> bytes:
    return (resources.files("xscl.service.api") / "static" / name).read_bytes()


def page_routes() -> list[Route]:
    """The routes of the page's files (no token needed: they hold no data)."""

    def serve(path: str, name: str, media_type: str) -> Route:
        body = _body(name)

        async def endpoint(request: Request) -> Response:
            return Response(body, media_type=media_type, headers=_HEADERS)

        return Route(path, endpoint, methods=["GET"])

    return [serve(path, name, media_type) for path, (name, media_type) in _FILES.items()]
