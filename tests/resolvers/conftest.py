"""Review policies' apps: API keys for a cast of people, and a client per person."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from suspended_runs.server import Settings
from suspended_runs.server.auth import new_api_key
from tests.helpers import Gql, make_gql, running_app

PEOPLE = ["starter", "alice", "bob", "carol", "mallory"] + [f"p{i}" for i in range(20)]


@pytest.fixture
def keys(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """API keys: `starter` an admin, the others approvers; p0..p19 in the group ops."""
    entries, keys = [], {}
    for name in PEOPLE:
        key, digest = new_api_key()
        keys[name] = key
        role = "admin" if name == "starter" else "approver"
        groups = ["ops"] if name.startswith("p") else []
        entries.append(
            {"name": name, "sha256": digest, "role": role, "scope": "all", "groups": groups}
        )
    path = tmp_path / "keys.json"
    path.write_text(json.dumps(entries))
    return path, keys


@pytest.fixture
def reviewed(settings: Settings, keys: tuple[Path, dict[str, str]]) -> Callable[..., Any]:
    """An app with these review policies; a client per person, by name."""

    @asynccontextmanager
    async def app(*policies: dict[str, Any], **extra: Any) -> AsyncIterator[dict[str, Gql]]:
        rules = settings.model_copy(
            update={"api_keys_file": keys[0], "review_policies": json.dumps(policies), **extra}
        )
        async with running_app(rules) as client:
            who = people(client, keys[1])
            who["anyone"] = lambda headers: make_gql(client, headers)  # type: ignore[assignment,return-value]
            yield who

    return app


def people(client: httpx.AsyncClient, keys: dict[str, str]) -> dict[str, Gql]:
    return {name: make_gql(client, {"x-api-key": key}) for name, key in keys.items()}
