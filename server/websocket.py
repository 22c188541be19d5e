"""GraphQL over WebSocket (graphql-transport-ws): who a connection is, and how it ends.

A browser cannot set headers on a WebSocket, so credentials come in `connection_init`:
`{"authorization": "Bearer <token>"}` or `{"apiKey": "<key>"}`, refused with 4403. The
handshake's `Origin` is checked by Strawberry against CORS_ORIGINS (its own origin always
passes) before anything else. A connection lives no longer than its credentials: a token's
`exp` closes it with 4401 when it passes, a key revoked (or re-scoped) in API_KEYS_FILE
at the next reload. Every operation gets a context of its own (a fresh budget), its first
answer the request's deadline on its database work (server/deadlines.py), and its errors
are masked as over HTTP. A message is read as a request body is (server/json_body.py):
one this server refuses (a lone surrogate, say) closes the connection with 4400 and why.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncGenerator, Mapping
from typing import Any

from graphql import GraphQLError
from starlette.websockets import WebSocket, WebSocketState
from strawberry.asgi import ASGIWebSocketAdapter
from strawberry.exceptions import ConnectionRejectionError
from strawberry.http.exceptions import NonJsonMessageReceived
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import (
    BaseGraphQLTransportWSHandler,
    Operation,
)
from strawberry.types.execution import ExecutionResult, PreExecutionError
from strawberry.utils.aio import aclosing

from suspended_runs.resolvers import Context, Principal, RequestBudget
from suspended_runs.server.auth import API_KEY_HEADER, Authenticator
from suspended_runs.server.deadlines import first_answer
from suspended_runs.server.errors import RequestRefused, Unauthenticated
from suspended_runs.server.json_body import RefusedJSON
from suspended_runs.server.masking import classified
from suspended_runs.server.persisted_queries import PersistedQueries

log = logging.getLogger(__name__)

UNAUTHORIZED = 4401
"""graphql-transport-ws: the credentials ended (expired, revoked); connect again."""
BAD_MESSAGE = 4400
"""graphql-transport-ws: a message the server cannot take."""


class Connection:
    """One WebSocket connection: its credentials once `connection_init` gave them, and
    the timer that ends it when they expire. Strawberry writes `connection_params`."""

    def __init__(self, websocket: WebSocket) -> None:
        self.websocket = websocket
        self.connection_params: dict[str, object] = {}
        self.principal: Principal | None = None
        self.credentials: dict[str, str] = {}
        self._expiry: asyncio.TimerHandle | None = None
        self._closing: asyncio.Task[None] | None = None

    async def authenticate(self, authenticator: Authenticator) -> None:
        """Who `connection_init` says this is; ConnectionRejectionError (4403) if nobody."""
        try:
            credentials = _credentials(self.connection_params)
            principal = await authenticator.authenticate(credentials)
        except Unauthenticated as exc:
            log.warning("refused a WebSocket connection", extra={"reason": str(exc)})
            raise ConnectionRejectionError() from None
        self.principal, self.credentials = principal, credentials
        await self.websocket.app.state.owners_seen.presented(principal)
        if principal.expires_at is not None:
            delay = max(0.0, principal.expires_at - time.time())
            self._expiry = asyncio.get_running_loop().call_later(
                delay, self.close, UNAUTHORIZED, "the token has expired"
            )

    def operation_context(self) -> Context:
        """A context for one operation: the connection's caller, a budget of its own."""
        assert self.principal is not None, "operations run only after connection_ack"
        state = self.websocket.app.state
        return Context(
            storage=state.storage,
            runtimes=state.runtimes,
            principal=self.principal,
            actor=self.principal.subject,
            policy=state.policy,
            budget=RequestBudget(state.limits),
            live=state.live,
            webhooks=state.webhook_rules,
            people=state.authenticator.people,
        )

    @property
    def by_api_key(self) -> bool:
        return API_KEY_HEADER in self.credentials

    def close(self, code: int, reason: str) -> None:
        if self._closing is None and self.websocket.application_state is WebSocketState.CONNECTED:
            log.info("closed a WebSocket connection", extra={"reason": reason})
            self._closing = asyncio.create_task(self.websocket.close(code, reason))

    def ended(self) -> None:
        if self._expiry is not None:
            self._expiry.cancel()


class Connections:
    """The open connections of this process, checked again when the API keys change."""

    def __init__(self) -> None:
        self._open: set[Connection] = set()

    def add(self, connection: Connection) -> None:
        self._open.add(connection)

    def remove(self, connection: Connection) -> None:
        self._open.discard(connection)
        connection.ended()

    def __len__(self) -> int:
        return len(self._open)

    async def recheck(self, authenticator: Authenticator) -> None:
        """Close each connection whose API key is revoked, or whose role or scope changed
        (its subscriptions were evaluated for the old ones)."""
        for connection in list(self._open):
            if not connection.by_api_key:
                continue
            try:
                now = await authenticator.authenticate(connection.credentials)
            except Unauthenticated:
                connection.close(UNAUTHORIZED, "the API key was revoked")
                continue
            if now != connection.principal:
                connection.close(UNAUTHORIZED, "the API key's role or scope changed")


def _credentials(params: Mapping[str, object]) -> dict[str, str]:
    """`connection_init`'s payload as the headers an HTTP request would send."""
    authorization, api_key = params.get("authorization"), params.get("apiKey")
    if authorization is not None and not isinstance(authorization, str):
        raise Unauthenticated("connection_init: authorization must be a string")
    if api_key is not None and not isinstance(api_key, str):
        raise Unauthenticated("connection_init: apiKey must be a string")
    credentials = {"authorization": authorization} if authorization else {}
    return {**credentials, **({API_KEY_HEADER: api_key} if api_key else {})}


class MessageReader(ASGIWebSocketAdapter):
    """Strawberry's reader of a connection's messages, which calls every message the view
    refuses invalid JSON: one refused for what it holds closes the connection saying why."""

    async def iter_json(
        self, *, ignore_parsing_errors: bool = False
    ) -> AsyncGenerator[object, None]:
        messages = super().iter_json(ignore_parsing_errors=ignore_parsing_errors)
        try:
            async for message in messages:
                yield message
        except NonJsonMessageReceived as exc:
            if not isinstance(exc.__cause__, RefusedJSON):
                raise
            log.info("closed a WebSocket connection", extra={"reason": exc.__cause__.msg})
            await self.close(BAD_MESSAGE, exc.__cause__.msg)


class SubscriptionHandler(BaseGraphQLTransportWSHandler[Any, None]):
    """Strawberry's graphql-transport-ws handler, with an operation context per operation,
    errors masked, and messages of the wrong shape closing the connection (4400)."""

    async def handle_message(self, message: Any) -> None:
        if not _well_formed(message):
            await self.handle_invalid_message("the message is not of the protocol's shape")
            return
        await super().handle_message(message)

    async def shutdown(self) -> None:
        await super().shutdown()
        connection: Connection = self.context
        connections: Connections = connection.websocket.app.state.connections
        connections.remove(connection)

    async def run_operation(self, operation: Operation[Any, None]) -> None:
        connection: Connection = self.context
        if not await self._trusted(operation):
            return
        try:
            results = await self.schema.stream(
                operation.query,
                variable_values=operation.variables,
                context_value=connection.operation_context(),
                operation_name=operation.operation_name,
            )
            seconds: float = connection.websocket.app.state.database_deadline
            answers = first_answer(results, seconds)
            async with aclosing(results), aclosing(answers):
                first = True
                async for result in answers:
                    if not isinstance(result, ExecutionResult):
                        await self._reject_incremental_delivery(operation)
                        return
                    if result.errors:
                        result.errors = classified(connection.websocket.app.state, result.errors)
                    if first and isinstance(result, PreExecutionError):
                        await operation.send_initial_errors(result.errors or [])
                        return
                    first = False
                    await operation.send_next(result)
            await operation.send_operation_message({"id": operation.id, "type": "complete"})
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("a WebSocket operation failed")
            await operation.send_operation_message({"id": operation.id, "type": "complete"})

    async def _trusted(self, operation: Operation[Any, None]) -> bool:
        """With PERSISTED_QUERIES_ONLY, whether the document is a trusted one (else its
        refusal is sent): a connection runs no document of a caller's own either."""
        connection: Connection = self.context
        persisted: PersistedQueries = connection.websocket.app.state.persisted_queries
        assert connection.principal is not None, "operations run only after connection_ack"
        try:
            await persisted.resolve(operation.query, None, connection.principal.scope)
        except RequestRefused as exc:
            error = GraphQLError(exc.reason, extensions={"code": exc.code})
            await operation.send_initial_errors([error])
            return False
        return True


def _well_formed(message: Any) -> bool:
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        return False
    if message["type"] != "subscribe":
        return True
    payload = message.get("payload")
    return (
        isinstance(message.get("id"), str)
        and isinstance(payload, dict)
        and isinstance(payload.get("query"), str)
        and isinstance(payload.get("variables"), dict | None)
        and isinstance(payload.get("operationName"), str | None)
    )
