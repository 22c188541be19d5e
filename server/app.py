"""The Starlette app: GraphQL at /graphql, health at /healthz and /readyz, and a lifespan
that opens one MongoDB client, ensures the indexes and starts the snapshot follower."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import socket
import time
import uuid
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from typing import Any, Protocol

from cross_web import HTTPException
from graphql import GraphQLError, OperationDefinitionNode
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.routing import Route
from strawberry.asgi import GraphQL
from strawberry.http import GraphQLHTTPResponse
from strawberry.types import ExecutionResult

from suspended_runs.resolvers import Context, Principal, RequestBudget, expire_forever
from suspended_runs.runtime import (
    AgentMap,
    Background,
    ClaimKeeper,
    ConfigurationError,
    MastraClient,
    MastraRuntime,
    PythonRuntime,
    Runtimes,
    load_agents,
)
from suspended_runs.runtime.metrics import REQUEST_SECONDS, OperationLabels
from suspended_runs.schema import (
    FULL,
    RETRY_AFTER_SECONDS,
    UNAVAILABLE,
    Schema,
    build_schema,
    classify,
)
from suspended_runs.server import inbox
from suspended_runs.server.auth import API_KEY_HEADER, Authenticator, load_api_keys
from suspended_runs.server.etag import ConditionalGets
from suspended_runs.server.gates import AuthGate, BodyLimit, PrivateAnswers
from suspended_runs.server.health import healthz, readyz
from suspended_runs.server.json_body import decode_json_object
from suspended_runs.server.logs import REQUEST_ID_HEADER, RequestLog, current_request_id
from suspended_runs.server.metrics import metrics_app
from suspended_runs.server.settings import Settings
from suspended_runs.storage import Runtime, Storage, database_fault, storage_full

log = logging.getLogger(__name__)


class DiskWatch(Protocol):
    def low_on_space(self) -> bool:
        """Whether the database's disk is (nearly) full: its failures are then STORAGE_FULL."""
        ...


_MAX_ACTOR = 200
_DRAIN_SECONDS = 30.0


class GraphQLApp(GraphQL[Context, None]):
    def __init__(
        self, *args: Any, actor_header: str, operations: OperationLabels, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.actor_header, self.operations = actor_header, operations

    async def get_context(self, request: Any, response: Any) -> Context:
        request.state.sub_response = response  # for process_result's status
        principal: Principal = request.state.principal
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
        )

    def decode_json(self, data: str | bytes) -> object:
        """A request body (or GET `variables`) is a JSON object no deeper than
        `MAX_JSON_DEPTH`; anything else is a bad request (400), which Strawberry would
        otherwise answer with a 500 (non-UTF-8 bytes, a bare number, deep nesting)."""
        return decode_json_object(data)

    async def parse_http_body(self, request: Any) -> Any:
        """Strawberry checks the types of `query`, `variables` and `extensions`, not
        `operationName`: a list or an object there would reach execution."""
        data = await super().parse_http_body(request)
        for item in data if isinstance(data, list) else [data]:
            if not isinstance(item.operation_name, str | None):
                raise HTTPException(400, "operationName must be a string or null")
        return data

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
            request_id = current_request_id()
            low_on_space: Callable[[], bool] = request.app.state.low_on_space

            def full(exc: BaseException | None) -> bool:
                return storage_full(exc) or (database_fault(exc) and low_on_space())

            result.errors = [
                classify(error, request_id=request_id, full=full) for error in result.errors
            ]
            codes = {(error.extensions or {}).get("code") for error in result.errors}
            sub_response = getattr(request.state, "sub_response", None)
            retry = codes & {UNAVAILABLE, FULL}
            if retry and request.method == "GET" and sub_response is not None:
                # A GET is a read a client may repeat: the HTTP status says so (a POST of
                # application/json keeps 200 with the error, as GraphQL over HTTP has it).
                sub_response.status_code = 503
                sub_response.headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return await super().process_result(request, result)

    def _named(self, query: str | None) -> str | None:
        """The name of a document's one operation (what a client that sends no
        operationName runs), for the request metrics; None for an anonymous one or a
        document that fails."""
        schema = self.schema
        assert isinstance(schema, Schema)
        try:
            document = schema.query_cache.document(query or "", schema.max_tokens)
        except GraphQLError:
            return None
        operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
        return operations[0].name.value if len(operations) == 1 and operations[0].name else None


def create_app(settings: Settings, *, embedded: DiskWatch | None = None) -> Starlette:
    """The app for `settings`. Raises ConfigurationError for a setting it cannot use.
    `embedded` watches the disk of the embedded MongoDB that `serve` started, if it did."""
    if settings.mongodb_uri is None:
        raise ConfigurationError(
            "MONGODB_URI: create_app needs one (the CLI starts an embedded one)"
        )
    agents = load_agents(settings.agents)
    authenticator = _authenticator(settings)
    _warn_of_deprecated(settings)
    ide = settings.graphiql and not settings.production
    schema = build_schema(settings.limits, introspection=not settings.production)
    graphql = _graphql_app(settings, schema, ide=ide)
    app = Starlette(
        routes=[
            Route(
                "/graphql",
                PrivateAnswers(
                    AuthGate(
                        ConditionalGets(graphql, schema, deployment=",".join(sorted(agents))),
                        authenticator,
                        ide=ide,
                    )
                ),
                methods=["GET", "POST"],
            ),
            Route("/healthz", healthz, methods=["GET"]),
            Route("/readyz", readyz, methods=["GET"]),
            Route("/metrics", metrics_app(authenticator), methods=["GET"]),
            *inbox.routes(),
        ],
        middleware=_middleware(settings),
        lifespan=functools.partial(_lifespan, settings=settings, agents=agents),
    )
    app.state.low_on_space = embedded.low_on_space if embedded else lambda: False
    return app


def _graphql_app(settings: Settings, schema: Schema, *, ide: bool) -> GraphQLApp:
    return GraphQLApp(
        schema,
        graphql_ide="graphiql" if ide else None,
        allow_queries_via_get=True,  # mutations over GET are refused by Strawberry
        actor_header=settings.actor_header,
        operations=OperationLabels(settings.metrics_max_operations),
    )


def _warn_of_deprecated(settings: Settings) -> None:
    if settings.query_cache_size is not None:
        log.warning(
            "QUERY_CACHE_SIZE is deprecated: set QUERY_CACHE_BYTES, the bytes the query "
            "caches may hold (QUERY_CACHE_SIZE still bounds their entries as well)"
        )


def _authenticator(settings: Settings) -> Authenticator:
    """Who may call. Without API keys or JWT everyone is an anonymous admin: refused in
    production unless ALLOW_ANONYMOUS says so, and a warning everywhere."""
    api_keys = load_api_keys(settings.api_keys_file) if settings.api_keys_file else None
    authenticator = Authenticator(api_keys, settings.jwt_config)
    if authenticator.enabled:
        return authenticator
    if settings.production and not settings.allow_anonymous:
        raise ConfigurationError(
            "ENV=production needs authentication: set API_KEYS_FILE, JWT_SECRET, "
            "JWT_PUBLIC_KEY or JWT_JWKS_URL, or ALLOW_ANONYMOUS=true to let every caller be "
            "an anonymous admin"
        )
    log.warning(
        "no API keys and no JWT configured: every caller is an anonymous admin "
        "(set API_KEYS_FILE, JWT_SECRET, JWT_PUBLIC_KEY or JWT_JWKS_URL)"
    )
    return authenticator


def _middleware(settings: Settings) -> list[Middleware]:
    hosts = settings.allowed_host_list
    if hosts is None:  # ALLOWED_HOSTS unset, serving on an address other than loopback
        if settings.production:
            raise ConfigurationError(
                f"ALLOWED_HOSTS: required in production when HOST ({settings.host}) is not a "
                "loopback address: the Host names this server answers to, comma-separated"
            )
        log.warning("ALLOWED_HOSTS is unset: any Host header is served (development only)")
        hosts = ["*"]
    middleware = [
        Middleware(RequestLog),
        Middleware(TrustedHostMiddleware, allowed_hosts=hosts, www_redirect=False),
        Middleware(BodyLimit, max_bytes=settings.max_request_bytes),
    ]
    if settings.cors_origin_list:
        allowed_headers = ["authorization", "content-type", API_KEY_HEADER, settings.actor_header]
        allowed_headers.append("if-none-match")  # conditional polls (server/etag.py)
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=settings.cors_origin_list,
                allow_methods=["GET", "POST"],
                allow_headers=[*allowed_headers, REQUEST_ID_HEADER],
                expose_headers=[REQUEST_ID_HEADER, "ETag"],
                max_age=600,
            )
        )
    return middleware


@contextlib.asynccontextmanager
async def _lifespan(app: Starlette, *, settings: Settings, agents: AgentMap) -> AsyncIterator[None]:
    """One MongoDB client, its indexes, the runtimes, and the snapshot follower."""
    instance = _instance_id(settings)
    storage = _open_storage(settings, instance)
    await storage.ensure_indexes()
    claims = ClaimKeeper(storage.runs, instance, settings.claim_lease)
    mastra_client = MastraClient(settings.mastra_servers)
    background = Background()
    runtimes = Runtimes(
        claims,
        {
            Runtime.PYTHON: PythonRuntime(agents, storage, claims, background),
            Runtime.MASTRA: MastraRuntime(mastra_client, storage, claims),
        },
        background,
    )
    follower_task = asyncio.create_task(storage.follower.run(), name="snapshot-follower")
    follower_task.add_done_callback(_report_follower_end)
    app.state.storage, app.state.runtimes, app.state.follower_task = (
        storage,
        runtimes,
        follower_task,
    )
    app.state.policy = policy = settings.decision_policy
    app.state.limits = settings.request_limits
    expiry = None
    if policy.timeout is not None or policy.agent_timeouts:
        expiry = asyncio.create_task(expire_forever(storage, runtimes, policy), name="expiry")
    try:
        yield
    finally:
        if expiry is not None:
            expiry.cancel()
        await runtimes.drain(_DRAIN_SECONDS)
        await mastra_client.close()
        follower_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await follower_task
        await storage.close()


def _open_storage(settings: Settings, instance: str) -> Storage:
    assert settings.mongodb_uri is not None
    return Storage.open(
        settings.mongodb_uri,
        settings.mongodb_db,
        retention=settings.retention,
        follow_mode=settings.sync_mode,
        poll_interval=settings.sync_poll_interval,
        poll_overlap=timedelta(seconds=settings.sync_poll_overlap_seconds),
        instance=instance,
        follower_lease=timedelta(seconds=settings.follower_lease_seconds),
    )


def _instance_id(settings: Settings) -> str:
    return settings.instance_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _report_follower_end(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("the snapshot follower stopped", exc_info=task.exception())
