"""/healthz and /readyz (server/health.py)."""

from __future__ import annotations

import httpx
from asgi_lifespan import LifespanManager

from suspended_runs.server import Settings, create_app
from tests.helpers import wait_ready


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


class _FullDisk:
    def low_on_space(self) -> bool:
        return True


async def test_readyz_names_a_full_disk(settings: Settings, monkeypatch) -> None:
    from suspended_runs.storage import Storage

    app = create_app(settings, embedded=_FullDisk())
    async with LifespanManager(app) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            await wait_ready(client)

            async def down(self: Storage) -> bool:
                raise ConnectionError("no route")

            monkeypatch.setattr(Storage, "ping", down)
            response = await client.get("/readyz")
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "reason": "storage_full"}
