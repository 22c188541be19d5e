"""The Starlette app (server/app.py): GraphiQL, the request log, hosts, settings."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator

import httpx
import pytest
from asgi_lifespan import LifespanManager

from suspended_runs.runtime import ConfigurationError
from suspended_runs.server import Settings, create_app
from suspended_runs.server.json_body import depth
from suspended_runs.server.settings import load_settings
from tests.helpers import running_app, wait_ready


@contextlib.asynccontextmanager
async def serving(settings: Settings, base_url: str) -> AsyncIterator[httpx.AsyncClient]:
    """The app, as `running_app` serves it, for a client whose requests go to `base_url`."""
    async with LifespanManager(create_app(settings)) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url=base_url) as client:
            await wait_ready(client)
            yield client


async def test_graphiql_page_is_served_and_can_be_turned_off(settings: Settings) -> None:
    html = {"accept": "text/html"}
    async with running_app(settings) as client:
        page = await client.get("/graphql", headers=html)
        assert page.status_code == 200 and "graphiql" in page.text.lower()
    async with running_app(settings.model_copy(update={"graphiql": False})) as client:
        assert (await client.get("/graphql", headers=html)).status_code == 404


async def test_every_request_gets_one_log_line(client, caplog) -> None:
    with caplog.at_level(logging.INFO, logger="suspended_runs.server.requests"):
        await client.post("/graphql", json={"query": "{ suspendedRuns { hasMore } }"})
    [line] = [r for r in caplog.records if r.name == "suspended_runs.server.requests"]
    assert (line.method, line.path, line.status) == ("POST", "/graphql", 200)
    assert line.durationMs >= 0


async def test_bodies_that_are_not_a_json_object_are_400_not_500(client) -> None:
    # Both were 500s from Strawberry before the view checked the body (found by the fuzz test).
    for body in (b"\x80\x81", b"0", b"[1]", b'"text"'):
        response = await client.post(
            "/graphql", content=body, headers={"content-type": "application/json"}
        )
        assert response.status_code == 400, body


@pytest.mark.parametrize("name", [["Q"], {"Q": 1}, 1, True])
async def test_an_operation_name_that_is_not_a_string_is_400_not_500(client, name) -> None:
    for request in (
        client.post(
            "/graphql", json={"query": "query Q { viewer { role } }", "operationName": name}
        ),
        client.get(
            "/graphql",
            params={"query": "query Q { viewer { role } }", "operationName": json.dumps(name)},
        ),
    ):
        response = await request
        assert response.status_code in (200, 400), response.text
        assert "errors" in response.text or response.status_code == 400


@pytest.mark.parametrize("variables", [[1], "x", 1, True, [{"a": 1}]])
async def test_variables_of_any_json_type_are_400_not_500(client, variables) -> None:
    query = "query($id: ID!) { agentRun(runId: $id) { runId } }"
    posted = await client.post("/graphql", json={"query": query, "variables": variables})
    got = await client.get("/graphql", params={"query": query, "variables": json.dumps(variables)})
    assert (posted.status_code, got.status_code) == (400, 400), (posted.text, got.text)


async def test_a_body_nested_deeper_than_the_limit_is_400_before_it_is_parsed(client) -> None:
    deep = "[" * 5000 + "]" * 5000
    for body in (
        deep,
        f'{{"query": "{{ viewer {{ role }} }}", "variables": {{"x": {deep}}}}}',
        '{"query": "{ viewer { role } }", "extensions": ' + '{"a":' * 5000 + "1" + "}" * 5001,
    ):
        response = await client.post(
            "/graphql", content=body, headers={"content-type": "application/json"}
        )
        assert response.status_code == 400, response.text[:200]
    variables = json.dumps({"x": json.loads("[" * 900 + "]" * 900)})
    got = await client.get(
        "/graphql", params={"query": "{ viewer { role } }", "variables": variables}
    )
    assert got.status_code == 400
    # Brackets inside strings are text, not depth.
    quoted = {"query": "{ viewer { role } }", "variables": {"x": "[" * 5000}}
    assert (await client.post("/graphql", json=quoted)).status_code == 200
    assert (await client.get("/healthz")).status_code == 200


def test_the_depth_of_json_is_counted_outside_its_strings() -> None:
    assert depth('{"a": [1, {"b": "]]]{{{"}], "c": "\\"[["}') == 3
    assert depth("[]") == 1 and depth('"[[["') == 0 and depth("1") == 0


async def test_a_name_from_the_actor_header_cannot_pass_for_a_key(client) -> None:
    viewer = "{ viewer { subject authenticated } }"
    for named, subject in (("key:admin", "anonymous:key:admin"), ("", "anonymous")):
        response = await client.post("/graphql", json={"query": viewer}, headers={"x-actor": named})
        assert response.json()["data"]["viewer"] == {"subject": subject, "authenticated": False}


async def test_query_cache_size_is_still_read_with_a_deprecation_line(settings, caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="suspended_runs.server.app"):
        async with running_app(settings.model_copy(update={"query_cache_size": 3})) as client:
            assert (await client.get("/healthz")).status_code == 200
            assert client  # the app serves with it
    assert any("QUERY_CACHE_SIZE is deprecated" in r.getMessage() for r in caplog.records)


async def test_on_loopback_only_loopback_host_names_are_served_by_default(settings) -> None:
    loopback = settings.model_copy(update={"allowed_hosts": ""})  # HOST is 127.0.0.1
    async with serving(loopback, "http://127.0.0.1:8000") as client:
        for host in ("127.0.0.1:8000", "localhost", "LOCALHOST:1234", "[::1]:8000"):
            assert (await client.get("/healthz", headers={"host": host})).status_code == 200
        for host in ("test", "evil.example", "localhost.evil.example:8000", "127.0.0.2"):
            rebound = await client.post(
                "/graphql", json={"query": "{ agents { id } }"}, headers={"host": host}
            )
            assert rebound.status_code == 400, host
            assert "agents" not in rebound.text


async def test_allowed_hosts_lists_the_host_names_served(settings) -> None:
    listed = settings.model_copy(update={"allowed_hosts": "api.example.com, *.runs.example"})
    async with serving(listed, "https://api.example.com") as client:
        for host, status in [
            ("api.example.com:443", 200),
            ("eu.runs.example", 200),
            ("localhost", 400),
            ("example.com", 400),
        ]:
            assert (await client.get("/healthz", headers={"host": host})).status_code == status


async def test_another_host_without_allowed_hosts_is_refused_in_production(
    settings, caplog
) -> None:
    exposed = settings.model_copy(
        update={"host": "0.0.0.0", "allowed_hosts": "", "allow_anonymous": True}
    )
    with pytest.raises(ConfigurationError, match=r"^ALLOWED_HOSTS: .*0\.0\.0\.0"):
        create_app(exposed.model_copy(update={"env": "production"}))
    with caplog.at_level(logging.WARNING, logger="suspended_runs.server.app"):
        async with serving(exposed, "http://anything.example") as client:
            assert (await client.get("/healthz")).status_code == 200
    assert "ALLOWED_HOSTS is unset: any Host header is served" in caplog.text


@pytest.mark.parametrize("value", ["a*b.example", "*example.com", "api.example.com:8000"])
def test_a_malformed_allowed_host_is_a_configuration_error(value, monkeypatch) -> None:
    monkeypatch.setenv("ALLOWED_HOSTS", value)
    with pytest.raises(ConfigurationError, match=r"^ALLOWED_HOSTS: "):
        load_settings()
