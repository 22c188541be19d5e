"""CORS (server/cors.py): preflights answered 204 or 403, Apollo's headers allowed by
default, CORS_ALLOW_HEADERS for more, and the answers a browser may read."""

from __future__ import annotations

from suspended_runs.server import Settings

DASH = "https://dash.example"


def _preflight(origin: str, headers: str = "content-type", method: str = "POST") -> dict[str, str]:
    return {
        "origin": origin,
        "access-control-request-method": method,
        "access-control-request-headers": headers,
    }


async def test_a_preflight_from_an_allowed_origin_is_204_with_what_it_may_send(
    settings: Settings, start_app
) -> None:
    client = await start_app(settings.model_copy(update={"cors_origins": DASH}))
    apollo = "content-type,apollographql-client-name,apollographql-client-version"
    answer = await client.options("/graphql", headers=_preflight(DASH, apollo))
    assert answer.status_code == 204
    assert answer.headers["access-control-allow-origin"] == DASH
    assert set(answer.headers["access-control-allow-methods"].split(", ")) == {"GET", "POST"}
    allowed = answer.headers["access-control-allow-headers"].split(", ")
    assert {"apollographql-client-name", "apollographql-client-version", "x-api-key"} <= set(
        allowed
    )
    request = await client.post(
        "/graphql", json={"query": "{ __typename }"}, headers={"origin": DASH}
    )
    assert request.headers["access-control-allow-origin"] == DASH
    assert "Origin" in request.headers["vary"]


async def test_other_origins_methods_and_headers_are_refused_403(
    settings: Settings, start_app
) -> None:
    client = await start_app(settings.model_copy(update={"cors_origins": DASH}))
    for headers in (
        _preflight("https://evil.example"),
        _preflight(DASH, method="DELETE"),
        _preflight(DASH, headers="x-custom"),
    ):
        answer = await client.options("/graphql", headers=headers)
        assert answer.status_code == 403, headers
        assert "access-control-allow-origin" not in answer.headers
    read = await client.post(
        "/graphql", json={"query": "{ __typename }"}, headers={"origin": "https://evil.example"}
    )
    assert "access-control-allow-origin" not in read.headers


async def test_without_cors_origins_every_preflight_is_403_not_405(client) -> None:
    for path in ("/graphql", "/", "/healthz"):
        answer = await client.options(path, headers=_preflight(DASH))
        assert answer.status_code == 403, path


async def test_cors_allow_headers_adds_request_headers(settings: Settings, start_app) -> None:
    update = {"cors_origins": DASH, "cors_allow_headers": "X-Custom, X-Tenant"}
    client = await start_app(settings.model_copy(update=update))
    answer = await client.options("/graphql", headers=_preflight(DASH, "x-custom,x-tenant"))
    assert answer.status_code == 204
    assert {"x-custom", "x-tenant"} <= set(
        answer.headers["access-control-allow-headers"].split(", ")
    )
