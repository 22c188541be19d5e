"""The GraphQL endpoint: Strawberry's ASGI view, speaking GraphQL over HTTP as its current
draft and the clients this server meets (Apollo's, graphql-request, GraphiQL) send it.

Beyond Strawberry's view: the answer's media type follows `Accept` (server/media_types.py),
with the status codes of `application/graphql-response+json`; a request refused before
it is executed is answered as GraphQL JSON (`errors` with `extensions.code`), never as
plain text; persisted queries (server/persisted_queries.py); batches of operations, run
one after another when one is a mutation; errors classified as the client may read them
(schema/errors.py); each operation timed by its name (runtime/metrics.py).
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from cross_web import HTTPException
from graphql import GraphQLError, OperationDefinitionNode, OperationType, get_operation_ast
from pymongo.errors import PyMongoError
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL
from strawberry.http import GraphQLHTTPResponse, GraphQLRequestData
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL
from strawberry.types import ExecutionResult

from suspended_runs.resolvers import Context, Principal, RequestBudget
from suspended_runs.runtime.metrics import REQUEST_SECONDS, OperationLabels
from suspended_runs.schema import FULL, RETRY_AFTER_SECONDS, UNAVAILABLE, Schema
from suspended_runs.server import graphiql
from suspended_runs.server.errors import RequestRefused
from suspended_runs.server.gates import graphql_error
from suspended_runs.server.json_body import RefusedJSON, decode_json_request
from suspended_runs.server.masking import classified
from suspended_runs.server.media_types import GRAPHQL_RESPONSE_JSON, JSON, negotiate
from suspended_runs.server.memory import RequestGarbage
from suspended_runs.server.persisted_queries import NOT_FOUND, PersistedQueries, not_found
from suspended_runs.server.websocket import Connection, MessageReader, SubscriptionHandler

_MAX_ACTOR = 200
_CODES = {400: "BAD_REQUEST", 404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED", 406: "NOT_ACCEPTABLE"}


class GraphQLApp(GraphQL[Any, None]):
    """Over HTTP (a `Context` per request) and over WebSocket, graphql-transport-ws only
    (a `Connection` per connection, server/websocket.py; the legacy `graphql-ws` is off)."""

    graphql_transport_ws_handler_class = SubscriptionHandler
    websocket_adapter_class = MessageReader

    def __init__(
        self,
        *args: Any,
        actor_header: str,
        operations: OperationLabels,
        max_batch: int,
        **kwargs: Any,
    ) -> None:
        kwargs["subscription_protocols"] = (GRAPHQL_TRANSPORT_WS_PROTOCOL,)
        super().__init__(*args, **kwargs)
        self.actor_header, self.operations, self.max_batch = actor_header, operations, max_batch
        self.garbage = RequestGarbage()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        request = Request(scope=scope, receive=receive)
        media = negotiate(request.headers.get("accept"))
        request.state.media_type = media or JSON
        request.state.batch = False
        try:
            if media is None and not self.should_render_graphql_ide(
                self.request_adapter_class(request)
            ):
                raise HTTPException(406, f"this endpoint answers {GRAPHQL_RESPONSE_JSON} or {JSON}")
            response = await self.run(request)
        except HTTPException as exc:
            response = _refusal(exc, request.state.media_type)
        if response.headers.get("content-type", "").startswith(JSON):
            response.headers["content-type"] = f"{request.state.media_type}; charset=utf-8"
        await response(scope, receive, send)

    async def get_context(self, request: Any, response: Any) -> Context | Connection:
        if isinstance(request, WebSocket):
            return Connection(request)  # who it is comes with connection_init
        request.state.sub_response = response  # for process_result's status
        principal: Principal = request.state.principal
        await request.app.state.owners_seen.presented(principal)
        actor = principal.subject
        if not principal.authenticated:
            # An open server: the caller may name themselves, as a name no key or token
            # subject (`key:`, `jwt:`) can be mistaken for.
            named = (request.headers.get(self.actor_header) or "").strip()[:_MAX_ACTOR]
            actor = f"anonymous:{named}" if named else "anonymous"
        return Context(
            storage=request.app.state.storage,
            runtimes=request.app.state.runtimes,
            principal=principal,
            policy=request.app.state.policy,
            budget=RequestBudget(request.app.state.limits),
            actor=actor or "anonymous",
            live=request.app.state.live,
            webhooks=request.app.state.webhook_rules,
            people=request.app.state.authenticator.people,
        )

    async def on_ws_connect(self, context: Connection) -> None:
        """`connection_init`: the caller's credentials (4403 when refused)."""
        await context.authenticate(context.websocket.app.state.authenticator)
        context.websocket.app.state.connections.add(context)

    def should_render_graphql_ide(self, request: Any) -> bool:
        """A GET that names a persisted query runs it, whatever it accepts."""
        return "extensions" not in request.query_params and super().should_render_graphql_ide(
            request
        )

    async def render_graphql_ide(self, request: Request) -> Response:
        return graphiql.page()

    def decode_json(self, data: str | bytes) -> object:
        """A request body (or GET `variables`) is a JSON object, or an array of them (a
        batch), no deeper than `MAX_JSON_DEPTH`; anything else is a bad request (400),
        which Strawberry would otherwise answer with a 500 (non-UTF-8 bytes, a bare
        number, deep nesting). Its size counts towards the next full collection
        (server/memory.py)."""
        self.garbage.received(len(data))
        return decode_json_request(data)

    def parse_json(self, data: str | bytes) -> Any:
        """As Strawberry's, but JSON refused for what it holds says why (Strawberry calls
        every refusal unparsable)."""
        try:
            return self.decode_json(data)
        except RefusedJSON as exc:
            raise HTTPException(400, exc.msg) from None
        except json.JSONDecodeError:
            raise HTTPException(400, "Unable to parse request body as JSON") from None

    async def parse_http_body(self, request: Any) -> Any:
        """Strawberry checks the types of `query`, `variables` and `extensions` of a single
        operation, not `operationName`, nor any of them in a batch: a list or an object
        there would reach execution."""
        data = await super().parse_http_body(request)
        for item in data if isinstance(data, list) else [data]:
            if not isinstance(item.operation_name, str | None):
                raise HTTPException(400, "operationName must be a string or null")
            if not isinstance(item.query, str | None):
                raise HTTPException(400, "query must be a string")
            for name, value in (("variables", item.variables), ("extensions", item.extensions)):
                if not isinstance(value, dict | None):
                    raise HTTPException(400, f"{name} must be an object or null")
        return data

    def _validate_batch_request(self, request_data: list[Any], protocol: Any) -> None:
        if not request_data:
            raise HTTPException(400, "a batch holds at least one operation")
        if len(request_data) > self.max_batch:
            raise RequestRefused(
                400,
                "BATCH_TOO_LARGE",
                f"a batch holds at most {self.max_batch} operations (MAX_BATCH_OPERATIONS); "
                "none was executed",
            )

    async def execute_operation(  # type: ignore[override]
        self, request: Request, request_adapter: Any, request_data: Any, **kwargs: Any
    ) -> Any:
        """Persisted queries resolved first, for every operation of a batch (so that a
        refused one refuses the batch before any ran); a batch holding a mutation runs in
        order, one after the other; documents registered once they ran."""
        items = request_data if isinstance(request_data, list) else [request_data]
        request.state.batch = isinstance(request_data, list)
        persisted: PersistedQueries = request.app.state.persisted_queries
        scope = request.state.principal.scope
        try:
            resolved = [
                await persisted.resolve(item.query, item.extensions, scope) for item in items
            ]
        except PyMongoError as exc:
            raise RequestRefused(
                503, UNAVAILABLE, "the database is unavailable; try again"
            ) from exc
        for item, found in zip(items, resolved, strict=True):
            item.query = found.query
        mutations = self._check_operation_types(request, items)

        async def one(item: GraphQLRequestData, register: str | None) -> ExecutionResult:
            if item.query is None and _names_a_hash(item):
                return ExecutionResult(data=None, errors=[not_found()])
            result: ExecutionResult = await self.execute_single(
                request=request, request_adapter=request_adapter, request_data=item, **kwargs
            )
            if register is not None and item.query is not None and _executed(result):
                await persisted.register(register, item.query, scope)
            return result

        jobs = [one(item, found.register) for item, found in zip(items, resolved, strict=True)]
        if not isinstance(request_data, list):
            return await jobs[0]
        if any(mutations):
            return [await job for job in jobs]
        return await asyncio.gather(*jobs)

    async def execute_single(self, *args: Any, **kwargs: Any) -> Any:
        """One operation, timed by its name (runtime/metrics.py)."""
        started, result = time.perf_counter(), None
        try:
            result = await super().execute_single(*args, **kwargs)
            return result
        finally:
            data, context = kwargs.get("request_data"), kwargs.get("context")
            query = getattr(data, "query", None)
            name = getattr(data, "operation_name", None) or self._named(query)
            role = getattr(getattr(context, "principal", None), "role", None)
            executed = isinstance(result, ExecutionResult) and not result.errors
            label = self.operations.label(name, executed=executed and role is not None)
            REQUEST_SECONDS.labels(operation=label).observe(time.perf_counter() - started)

    async def process_result(self, request: Any, result: ExecutionResult) -> GraphQLHTTPResponse:
        if result.errors:
            result.errors = classified(request.app.state, result.errors)
        answer = await super().process_result(request, result)
        status = _status(request, result)
        if status == 400:
            answer.pop("data", None)  # not executed: no `data` entry
        sub_response = getattr(request.state, "sub_response", None)
        if status is not None and sub_response is not None and not request.state.batch:
            sub_response.status_code = status
            if status == 503:
                sub_response.headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return answer

    def _check_operation_types(self, request: Request, items: list[Any]) -> list[bool]:
        """Which operations are mutations; RequestRefused for one HTTP may not carry."""
        kinds = [self._operation_type(item) for item in items]
        if OperationType.SUBSCRIPTION in kinds:
            raise RequestRefused(
                400,
                "BAD_REQUEST",
                "a subscription is served over WebSocket (graphql-transport-ws) at this path",
            )
        mutations = [kind is OperationType.MUTATION for kind in kinds]
        if request.method == "GET" and any(mutations):
            # GraphQL over HTTP: a mutation by GET is 405, and nothing runs.
            raise RequestRefused(405, "METHOD_NOT_ALLOWED", "a mutation is sent by POST")
        return mutations

    def _operation_type(self, item: GraphQLRequestData) -> OperationType | None:
        """The type of the operation `item` selects (None for a document that fails: its
        execution says why)."""
        operation = self._operation(item.query, item.operation_name)
        return None if operation is None else operation.operation

    def _named(self, query: str | None) -> str | None:
        """The name of a document's one operation (what a client that sends no
        operationName runs), for the request metrics; None for an anonymous one or a
        document that fails."""
        operation = self._operation(query, None)
        return operation.name.value if operation is not None and operation.name else None

    def _operation(
        self, query: str | None, operation_name: str | None
    ) -> OperationDefinitionNode | None:
        document = self._document(query)
        return None if document is None else get_operation_ast(document, operation_name)

    def _document(self, query: str | None) -> Any:
        schema = self.schema
        assert isinstance(schema, Schema)
        try:
            return schema.query_cache.document(query or "", schema.max_tokens)
        except GraphQLError:
            return None


def _status(request: Any, result: ExecutionResult) -> int | None:
    """The status an answer says besides 200: 400 in `application/graphql-response+json`
    for a request refused before execution (a document that does not parse or validate,
    variables that do not coerce); 503 for an outage, to a GET (a read a client may
    repeat) or to a client that reads statuses (a POST of `application/json` keeps 200
    with the error, as GraphQL over HTTP has it)."""
    codes = _codes(result)
    statuses = request.state.media_type == GRAPHQL_RESPONSE_JSON
    if statuses and not _executed(result) and NOT_FOUND not in codes:
        return 400
    if codes & {UNAVAILABLE, FULL} and (statuses or request.method == "GET"):
        return 503
    return None


def _executed(result: ExecutionResult) -> bool:
    """Whether execution started: data, or an error raised at a field (with a path)."""
    return result.data is not None or any(e.path is not None for e in result.errors or [])


def _codes(result: ExecutionResult) -> set[object]:
    return {(error.extensions or {}).get("code") for error in result.errors or []}


def _names_a_hash(item: GraphQLRequestData) -> bool:
    return isinstance((item.extensions or {}).get("persistedQuery"), dict)


def _refusal(exc: HTTPException, media_type: str) -> Response:
    code = (
        exc.code if isinstance(exc, RequestRefused) else _CODES.get(exc.status_code, "BAD_REQUEST")
    )
    response = graphql_error(exc.status_code, code, exc.reason, media_type=media_type)
    if exc.status_code == 503:
        response.headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
    if exc.status_code == 405:
        response.headers["Allow"] = "POST"
    return response
