"""The approval inbox: a page at `/` (and at `/runs/<runId>`, opened on that run) and its
files under `/static/`, plain HTML, CSS and JavaScript modules from `server/static/`, with
nothing to build and nothing from another origin.

The page holds no data and needs no credentials: it asks the public GraphQL API at
`/graphql`, with the API key or token its user enters, for everything it shows. It is
served in every mode (GraphiQL is the development tool; this is the product). Every answer
here carries a Content-Security-Policy that allows scripts, styles and requests only from
this origin, and no inline script or style, so a run's data shown on the page can never
run as code.
"""

from __future__ import annotations

from pathlib import Path

from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

STATIC = Path(__file__).parent / "static"

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "font-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)
HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    # Asked again each time (304 while unchanged): a new version of the page is seen at once.
    "Cache-Control": "no-cache",
}


def routes() -> list[BaseRoute]:
    """`/` (the page), `/runs/<runId>` (the page on one run, where webhooks link) and
    `/static/...` (its files), for create_app's routes."""
    return [
        Route("/", page, methods=["GET", "HEAD"]),
        Route("/runs/{run_id}", page, methods=["GET", "HEAD"]),
        Mount("/static", app=PageHeaders(StaticFiles(directory=STATIC)), name="static"),
    ]


async def page(request: Request) -> Response:
    return FileResponse(STATIC / "index.html", media_type="text/html", headers=HEADERS)


class PageHeaders:
    """Adds HEADERS to every answer of the app it wraps."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in HEADERS.items():
                    headers[name] = value
            await send(message)

        await self.app(scope, receive, with_headers)
