"""/healthz and /readyz (server/health.py)."""

from __future__ import annotations

import pytest

from suspended_runs.server import Settings
from suspended_runs.storage import Storage
from tests.helpers import running_app


async def test_healthz_and_readyz(client) -> None:
    assert (await client.get("/healthz")).json() == {"status": "ok"}
    ready = await client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json() == {"status": "ready", "sync": "change_stream"}


def _database_down(monkeypatch: pytest.MonkeyPatch) -> None:
    async def down(self: Storage) -> bool:
        raise ConnectionError("no route")

    monkeypatch.setattr(Storage, "ping", down)


async def test_readyz_is_503_when_the_database_does_not_answer(client, monkeypatch) -> None:
    _database_down(monkeypatch)
    response = await client.get("/readyz")
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "reason": "database"}


class _FullDisk:
    def low_on_space(self) -> bool:
        return True


async def test_readyz_names_a_full_disk(settings: Settings, monkeypatch) -> None:
    async with running_app(settings, embedded=_FullDisk()) as client:
        _database_down(monkeypatch)
        response = await client.get("/readyz")
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "reason": "storage_full"}
