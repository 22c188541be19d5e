"""ASGI gates in front of the GraphQL endpoint: authentication, a request body limit, and
what GET answers tell caches.

Their refusals answer in GraphQL's shape (`{"errors": [{"message", "extensions":
{"code"}}]}`), so a client reads every refusal the same way, and none says more than the
reason.
"""

from __future__ import annotations

import logging

from starlette.datastructures import Headers, MutableHeaders, QueryParams
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from suspended_runs.resolvers import Principal
from suspended_runs.server.auth import Authenticator
from suspended_runs.server.errors import Unauthenticated
from suspended_runs.server.media_types import GRAPHQL_RESPONSE_JSON, JSON, negotiate

log = logging.getLogger(__name__)

NOBODY = Principal(subject="anonymous", role=None, authenticated=False)


def graphql_error(
    status: int, code: str, message: str, *, media_type: str | None = JSON
) -> JSONResponse:
    """A refusal as GraphQL JSON in `media_type` (`application/graphql-response+json`
    has no `data` entry for a request that was not executed)."""
    body: dict[str, object] = {"errors": [{"message": message, "extensions": {"code": code}}]}
    if media_type != GRAPHQL_RESPONSE_JSON:
        body = {"data": None, **body}
    return JSONResponse(
        body,
        status_code=status,
        headers={"WWW-Authenticate": "Bearer"} if status == 401 else None,
        media_type=f"{media_type or JSON}; charset=utf-8",
    )


class AuthGate:
    """Finds who is asking (request.state.principal), or answers 401."""

    def __init__(self, app: ASGIApp, authenticator: Authenticator, *, ide: bool) -> None:
        self.app = app
        self.authenticator = authenticator
        self.ide = ide

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = Headers(scope=scope)
        if self.ide and _asks_for_the_ide(scope, headers):
            # The GraphiQL page holds no data: served to anyone, as a caller who may do nothing.
            scope.setdefault("state", {})["principal"] = NOBODY
            await self.app(scope, receive, send)
            return
        try:
            principal = await self.authenticator.authenticate(headers)
        except Unauthenticated as exc:
            log.warning("refused a request", extra={"reason": str(exc)})
            refusal = graphql_error(
                401, "UNAUTHENTICATED", str(exc), media_type=negotiate(headers.get("accept"))
            )
            await refusal(scope, receive, send)
            return
        scope.setdefault("state", {})["principal"] = principal
        await self.app(scope, receive, send)


class PrivateAnswers:
    """Marks every answer to a GET (or HEAD) as one for this caller only: no shared cache
    may keep it (`Cache-Control: private, no-cache`), and it varies with the credentials
    and with `Accept` (JSON or the GraphiQL page)."""

    VARY = ("Authorization", "X-API-Key", "Accept")

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return

        async def marking_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers["Cache-Control"] = "private, no-cache"
                for name in self.VARY:
                    headers.add_vary_header(name)
            await send(message)

        await self.app(scope, receive, marking_send)


def _asks_for_the_ide(scope: Scope, headers: Headers) -> bool:
    """Whether Strawberry will answer with the GraphiQL page, never run an operation: a GET
    with no `query` parameter, read from the parsed parameters as Strawberry reads them
    (`%71uery=` is `query=`), that accepts HTML."""
    params = QueryParams(scope.get("query_string", b""))
    return (
        scope["method"] == "GET"
        and "query" not in params
        and "extensions" not in params  # a persisted query, run by its hash
        and "text/html" in headers.get("accept", "")
    )


class BodyLimit:
    """Refuses a request body over `max_bytes` with 413, declared (Content-Length) or
    streamed (chunked). The body is read here, up to the limit, before the app runs; the
    app then receives it whole, so it never reads a body cut short."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(scope, receive, send)
            return
        try:
            body = await self._read(receive)
        except _TooLarge:
            await self._refuse(scope, receive, send)
            return
        if body is None:
            return  # the client went away before its body ended: nobody to answer
        unread = True

        async def replay() -> Message:
            nonlocal unread
            if unread:
                unread = False
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _read(self, receive: Receive) -> bytes | None:
        """The whole body; None when the client disconnected first."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                raise _TooLarge
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        message = f"the request body is over {self.max_bytes} bytes"
        media_type = negotiate(Headers(scope=scope).get("accept"))
        await graphql_error(413, "PAYLOAD_TOO_LARGE", message, media_type=media_type)(
            scope, receive, send
        )


class _TooLarge(Exception):
    """The body went over the limit while it was read."""
