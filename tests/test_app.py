"""The Starlette app (server/app.py): health, readiness, GraphiQL, the request log."""

from __future__ import annotations

import logging

from suspended_runs.server import Settings
from tests.helpers import running_app


async def test_healthz_and_readyz(client) -> None:
    assert (await client.get("/healthz")).json() == {"status": "ok"}
    ready = await client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json() == {"status": "ready", "sync": "change_stream"}


async def test_readyz_is_503_when_the_database_does_not_answer(client, monkeypatch) -> None:
    from suspended_runs.storage import Storage

    async def down(self: Storage) -> bool:
        raise ConnectionError("no route")

    monkeypatch.setattr(Storage, "ping", down)
    response = await client.get("/readyz")
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "reason": "database"}


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
