"""The Starlette app: GraphQL at /graphql, health at /healthz and /readyz, and a lifespan
that opens one MongoDB client, ensures the indexes and starts the snapshot follower."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import socket
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Protocol

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.routing import BaseRoute, Route, WebSocketRoute

from suspended_runs.resolvers import LivePages, expire_forever
from suspended_runs.resolvers.announcements import Announcer
from suspended_runs.resolvers.context import WebhookRules
from suspended_runs.resolvers.webhook_owners import (
    OwnersSeen,
    recheck_key_owners,
    watch_owners_forever,
)
from suspended_runs.runtime import (
    AgentMap,
    AgentRuntime,
    Background,
    ClaimKeeper,
    ConfigurationError,
    LangGraphRuntime,
    MastraClient,
    MastraRuntime,
    PythonRuntime,
    Runtimes,
    load_agents,
)
from suspended_runs.runtime.langgraph_graphs import LangGraphGraphs, load_graphs
from suspended_runs.runtime.metrics import OperationLabels
from suspended_runs.runtime.webhooks.deliverer import WebhookDeliverer
from suspended_runs.schema import (
    Schema,
    build_schema,
)
from suspended_runs.server import graphiql, inbox, tracing
from suspended_runs.server.auth import Authenticator, load_api_keys, reload_api_keys_forever
from suspended_runs.server.cors import Cors
from suspended_runs.server.deadlines import RequestDeadline
from suspended_runs.server.etag import ConditionalGets
from suspended_runs.server.gates import AuthGate, BodyLimit, PrivateAnswers
from suspended_runs.server.graphql_view import GraphQLApp
from suspended_runs.server.health import healthz, readyz
from suspended_runs.server.logs import RequestLog
from suspended_runs.server.metrics import metrics_app
from suspended_runs.server.persisted_queries import PersistedQueries, load_manifest
from suspended_runs.server.settings import Settings
from suspended_runs.server.websocket import Connections
from suspended_runs.storage import Runtime, Storage
from suspended_runs.storage.snapshots.extraction import read_starters_from

log = logging.getLogger(__name__)


class DiskWatch(Protocol):
    def low_on_space(self) -> bool:
        """Whether the database's disk is (nearly) full: its failures are then STORAGE_FULL."""
        ...


_MAX_ACTOR = 200
_DRAIN_SECONDS = 30.0
_LET_GO_SECONDS = 2.0
"""How long a stop waits for the timed tasks to end once cancelled (the deliverer lets go
of its lease); a task caught in a call to a database that is gone may not end on cancel."""


def create_app(
    settings: Settings,
    *,
    embedded: DiskWatch | None = None,
    traces: TracerProvider | None = None,
) -> Starlette:
    """The app for `settings`. Raises ConfigurationError for a setting it cannot use.
    `embedded` watches the disk of the embedded MongoDB that `serve` started, if it did;
    `traces` receives its spans (else OTEL_EXPORTER_OTLP_ENDPOINT's exporter, if set)."""
    if settings.mongodb_uri is None:
        raise ConfigurationError("MONGODB_URI: create_app needs one (the CLI starts one)")
    agents = load_agents(settings.agents)
    _one_runtime_an_agent(settings, agents)
    graphs = load_graphs(
        settings.langgraph_graphs,
        settings.mongodb_uri,
        settings.langgraph_checkpoints(settings.review_starter_context_key),
        settings.langgraph_resume_threads,
    )
    authenticator = _authenticator(settings)
    _warn_of_deprecated(settings)
    manifest = _manifest(settings)
    # Trusted documents run no document of a caller's own: no IDE, no introspection.
    open_documents = not settings.production and not settings.persisted_queries_only
    ide = settings.graphiql and open_documents
    owned = traces is None and settings.otel_exporter_otlp_endpoint is not None
    traces = _traces(traces, owned=owned)
    tracer = tracing.instrument(traces) if traces is not None else None
    schema = build_schema(settings.limits, introspection=open_documents, tracer=tracer)
    app = Starlette(
        routes=_routes(settings, schema, authenticator, ",".join(sorted(agents)), ide=ide),
        middleware=_middleware(settings),
        lifespan=functools.partial(
            _lifespan, settings=settings, agents=agents, graphs=graphs, manifest=manifest
        ),
    )
    app.state.low_on_space = embedded.low_on_space if embedded else lambda: False
    app.state.graphs, app.state.authenticator = graphs, authenticator
    app.state.owned_traces = traces if owned else None
    return app


def _one_runtime_an_agent(settings: Settings, agents: AgentMap) -> None:
    """An agent id names the runs of one runtime: LangGraph's default agent is neither a
    Python agent nor a Mastra one (a decision would reach the wrong runtime's agent)."""
    if settings.langgraph_db is None:
        return
    ours = [("LANGGRAPH_DEFAULT_AGENT", settings.langgraph_default_agent)]
    ours += [("LANGGRAPH_GRAPHS", agent) for agent in settings.langgraph_graphs]
    for name, agent in ours:
        for setting, ids in (("AGENTS", agents), ("MASTRA_AGENT_URLS", settings.mastra_agent_urls)):
            if agent in ids:
                raise ConfigurationError(
                    f"{name}: {agent!r} is also an agent of {setting}: one agent id, one runtime"
                )


def _routes(
    settings: Settings, schema: Schema, authenticator: Authenticator, deployment: str, *, ide: bool
) -> list[BaseRoute]:
    view = _graphql_app(settings, schema, ide=ide)
    over_http = ConditionalGets(view, schema, deployment=deployment)
    return [
        Route(
            "/graphql",
            PrivateAnswers(AuthGate(over_http, authenticator, ide=ide)),
            methods=["GET", "POST"],
        ),
        WebSocketRoute("/graphql", view),  # authenticated in connection_init
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/metrics", metrics_app(authenticator), methods=["GET"]),
        *inbox.routes(),
        *(graphiql.routes() if ide else []),
    ]


def _traces(given: TracerProvider | None, *, owned: bool) -> TracerProvider | None:
    """The tracer provider: the one given, or, with OTEL_EXPORTER_OTLP_ENDPOINT (`owned`),
    a new one for this process, exporting by OTLP."""
    if not owned:
        return given
    provider = tracing.new_provider()
    trace.set_tracer_provider(provider)
    return provider


def _graphql_app(settings: Settings, schema: Schema, *, ide: bool) -> GraphQLApp:
    return GraphQLApp(
        schema,
        graphql_ide="graphiql" if ide else None,
        allow_queries_via_get=True,  # mutations over GET are refused by Strawberry
        actor_header=settings.actor_header,
        operations=OperationLabels(settings.metrics_max_operations),
        max_batch=settings.max_batch_operations,
        allowed_origins=settings.cors_origin_list,
    )


def _manifest(settings: Settings) -> dict[str, str]:
    """The trusted documents of PERSISTED_QUERIES_FILE (hash -> document)."""
    if settings.persisted_queries_file is None:
        if settings.persisted_queries_only:
            raise ConfigurationError(
                "PERSISTED_QUERIES_ONLY=true needs PERSISTED_QUERIES_FILE, the manifest of "
                "the operations to run (persisted-query-manifest.json)"
            )
        return {}
    return load_manifest(settings.persisted_queries_file)


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
    # Always: with no CORS_ORIGINS, a preflight is refused (403), not a 405.
    extra_headers = [settings.actor_header, *settings.cors_header_list]
    middleware.append(
        Middleware(Cors, origins=settings.cors_origin_list, extra_headers=extra_headers)
    )
    middleware.append(Middleware(RequestDeadline, seconds=settings.database_deadline_seconds))
    return middleware


@contextlib.asynccontextmanager
async def _lifespan(
    app: Starlette,
    *,
    settings: Settings,
    agents: AgentMap,
    graphs: LangGraphGraphs,
    manifest: dict[str, str],
) -> AsyncIterator[None]:
    """One MongoDB client, its indexes, the runtimes, and the snapshot follower."""
    instance = _instance_id(settings)
    storage = await _indexed_storage(settings, instance)
    mastra_client = MastraClient(settings.mastra_servers)
    runtimes = _runtimes(settings, storage, instance, (agents, graphs), mastra_client)
    follower_task = asyncio.create_task(storage.follower.run(), name="snapshot-follower")
    follower_task.add_done_callback(_report_follower_end)
    app.state.storage, app.state.runtimes = storage, runtimes
    app.state.follower_task = follower_task
    _request_state(app, settings, storage, manifest)
    tasks = _timed_tasks(
        app, settings, WebhookDeliverer(storage, settings.delivery_rules, instance)
    )
    try:
        yield
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.wait(tasks, timeout=_LET_GO_SECONDS)
        await app.state.live.close()
        if app.state.owned_traces is not None:
            app.state.owned_traces.shutdown()  # the last spans exported
        await runtimes.drain(_DRAIN_SECONDS)
        await mastra_client.close()
        graphs.close()
        follower_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await follower_task
        await storage.close()


async def _indexed_storage(settings: Settings, instance: str) -> Storage:
    """Storage with its indexes (LangGraph's writes' too, where the start may build it)."""
    storage = _open_storage(settings, instance)
    await storage.ensure_indexes()
    if storage.langgraph is not None and settings.creates_langgraph_index(settings.production):
        await storage.langgraph.ensure_index()
    return storage


def _runtimes(
    settings: Settings,
    storage: Storage,
    instance: str,
    agents: tuple[AgentMap, LangGraphGraphs],
    mastra_client: MastraClient,
) -> Runtimes:
    """Every runtime of this process, with the claim keeper and background they share."""
    claims = ClaimKeeper(storage.runs, instance, settings.claim_lease)
    background = Background()
    python, graphs = agents
    by_kind: dict[Runtime, AgentRuntime] = {
        Runtime.PYTHON: PythonRuntime(python, storage, claims, background),
        Runtime.MASTRA: MastraRuntime(mastra_client, storage, claims),
        Runtime.LANGGRAPH: LangGraphRuntime(graphs, storage, claims),
    }
    return Runtimes(claims, by_kind, background)


def _request_state(
    app: Starlette, settings: Settings, storage: Storage, manifest: dict[str, str]
) -> None:
    """What requests read of the app besides storage and runtimes."""
    app.state.persisted_queries = PersistedQueries(
        storage.persisted_queries,
        only=settings.persisted_queries_only,
        manifest=manifest,
        per_minute=settings.persisted_queries_per_minute,
    )
    app.state.policy, app.state.limits = settings.decision_policy, settings.request_limits
    app.state.webhook_rules = WebhookRules(
        settings.outbound_rules, timedelta(seconds=settings.webhook_rotation_seconds)
    )
    app.state.live = LivePages(storage, max_per_caller=settings.max_subscriptions_per_caller)
    app.state.owners_seen = OwnersSeen(storage)
    app.state.connections = Connections()
    app.state.database_deadline = settings.database_deadline_seconds  # for WebSocket operations


def _timed_tasks(
    app: Starlette, settings: Settings, deliverer: WebhookDeliverer
) -> list[asyncio.Task[None]]:
    """What runs beside the requests: webhooks' deliveries and sweeps, expiry, and the
    reload of API keys."""
    storage, runtimes, policy = app.state.storage, app.state.runtimes, app.state.policy
    expiring = timedelta(seconds=settings.webhook_expiring_seconds)
    # Swept by the instance that delivers: the one that holds that lease.
    announcer = Announcer(storage, policy, expiring, lambda: deliverer.holding)
    tasks = [
        asyncio.create_task(deliverer.run(), name="webhook-deliverer"),
        asyncio.create_task(announcer.forever(), name="announcements"),
    ]
    if policy.timeout is not None or policy.agent_timeouts:
        tasks.append(asyncio.create_task(expire_forever(storage, runtimes, policy), name="expiry"))
    if settings.api_keys_file is not None and settings.api_keys_reload_seconds > 0:
        tasks.append(asyncio.create_task(_reload_keys(app, settings), name="api-key-reload"))
    authenticator: Authenticator = app.state.authenticator
    if authenticator.enabled:  # on an open server, everyone may own every webhook
        idle = timedelta(days=settings.webhook_owner_token_days)
        owners = watch_owners_forever(storage, authenticator.key_principal, idle)
        tasks.append(asyncio.create_task(owners, name="webhook-owners"))
    return tasks


async def _reload_keys(app: Starlette, settings: Settings) -> None:
    assert settings.api_keys_file is not None
    authenticator: Authenticator = app.state.authenticator

    async def recheck() -> None:
        await app.state.connections.recheck(authenticator)
        await recheck_key_owners(app.state.storage, authenticator.key_principal)

    await reload_api_keys_forever(
        authenticator, settings.api_keys_file, settings.api_keys_reload_seconds, recheck
    )


def _open_storage(settings: Settings, instance: str) -> Storage:
    assert settings.mongodb_uri is not None
    read_starters_from(settings.review_starter_context_key)
    return Storage.open(
        settings.mongodb_uri,
        settings.mongodb_db,
        retention=settings.retention,
        follow_mode=settings.sync_mode,
        poll_interval=settings.sync_poll_interval,
        poll_overlap=timedelta(seconds=settings.sync_poll_overlap_seconds),
        instance=instance,
        follower_lease=timedelta(seconds=settings.follower_lease_seconds),
        persisted_queries_max=settings.persisted_queries_max,
        persisted_queries_per_scope=settings.persisted_queries_per_scope,
        langgraph=settings.langgraph_checkpoints(settings.review_starter_context_key),
    )


def _instance_id(settings: Settings) -> str:
    return settings.instance_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _report_follower_end(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("the snapshot follower stopped", exc_info=task.exception())
