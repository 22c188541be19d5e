"""CORS: which other origins' pages may call this server from a browser.

Starlette's middleware answers a refused preflight with 400 and, with no origins set,
is absent, so a preflight meets the router's 405; a browser reads either as a failure it
cannot explain. Here a preflight (`OPTIONS` with `Origin` and
`Access-Control-Request-Method`) is answered by this middleware alone: 204 with what is
allowed when the origin, the method and every requested header are, 403 otherwise (and
always 403 when `CORS_ORIGINS` is unset). An actual request from an allowed origin gets
`Access-Control-Allow-Origin` on its answer; from another origin it is served without
one, so the browser withholds the answer from the page.
"""

from __future__ import annotations

from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from suspended_runs.server.auth import API_KEY_HEADER
from suspended_runs.server.logs import REQUEST_ID_HEADER

METHODS = ("GET", "POST")
DEFAULT_HEADERS = (
    "accept",
    "authorization",
    "content-type",
    "if-none-match",  # conditional polls (server/etag.py)
    API_KEY_HEADER.lower(),
    REQUEST_ID_HEADER.lower(),
    # Apollo Client's own, sent by default when a client name is configured.
    "apollographql-client-name",
    "apollographql-client-version",
    "apollo-require-preflight",
)
EXPOSED_HEADERS = ("ETag", REQUEST_ID_HEADER, "Retry-After")
MAX_AGE_SECONDS = 600


class Cors:
    """`origins` may call from a browser, sending `DEFAULT_HEADERS` and `extra_headers`."""

    def __init__(self, app: ASGIApp, origins: list[str], extra_headers: list[str]) -> None:
        self.app = app
        self.origins = frozenset(origins)
        self.any_origin = "*" in self.origins
        self.headers = frozenset(h.lower() for h in (*DEFAULT_HEADERS, *extra_headers))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        origin = headers.get("origin")
        if scope["method"] == "OPTIONS" and origin and "access-control-request-method" in headers:
            await self._preflight(origin, headers)(scope, receive, send)
            return
        if origin is None or not self._allowed(origin):
            await self.app(scope, receive, send)
            return

        async def allowing_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                answer = MutableHeaders(scope=message)
                answer["Access-Control-Allow-Origin"] = origin
                answer["Access-Control-Expose-Headers"] = ", ".join(EXPOSED_HEADERS)
                answer.add_vary_header("Origin")
            await send(message)

        await self.app(scope, receive, allowing_send)

    def _preflight(self, origin: str, headers: Headers) -> Response:
        method = headers["access-control-request-method"].strip().upper()
        asked = {
            name.strip().lower()
            for name in headers.get("access-control-request-headers", "").split(",")
            if name.strip()
        }
        if not self._allowed(origin):
            return _refused("this origin may not call this server (CORS_ORIGINS)")
        if method not in METHODS:
            return _refused(f"CORS allows {', '.join(METHODS)}")
        if not asked <= self.headers:
            unknown = ", ".join(sorted(asked - self.headers))
            return _refused(f"CORS does not allow the headers {unknown} (CORS_ALLOW_HEADERS)")
        return Response(
            status_code=204,
            headers={
                "Access-Control-Allow-Origin": origin,
                "Access-Control-Allow-Methods": ", ".join(METHODS),
                "Access-Control-Allow-Headers": ", ".join(sorted(self.headers)),
                "Access-Control-Max-Age": str(MAX_AGE_SECONDS),
                "Vary": "Origin",
            },
        )

    def _allowed(self, origin: str) -> bool:
        return self.any_origin or origin in self.origins


def _refused(reason: str) -> Response:
    return PlainTextResponse(reason, status_code=403, headers={"Vary": "Origin"})
