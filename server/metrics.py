"""`GET /metrics`: the Prometheus exposition of runtime/metrics.py.

Served on the API's port behind the API's credentials: what it tells (how many runs of
every tenant are in each state) is for a viewer, or above, whose scope is all runs (an
open server serves it to anyone, as it serves everything).
"""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import request_response
from starlette.types import ASGIApp

from suspended_runs.resolvers import Principal, Role
from suspended_runs.runtime.metrics import REGISTRY, refresh
from suspended_runs.server.auth import Authenticator
from suspended_runs.server.gates import AuthGate, graphql_error


def metrics_app(authenticator: Authenticator) -> ASGIApp:
    """The endpoint, behind the same authentication as the API."""
    return AuthGate(request_response(metrics), authenticator, ide=False)


async def metrics(request: Request) -> Response:
    principal: Principal = request.state.principal
    if not principal.may(Role.VIEWER) or not principal.scope.unrestricted:
        return graphql_error(403, "FORBIDDEN", "metrics need a viewer whose scope is all runs")
    await refresh(request.app.state.storage)
    return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)
