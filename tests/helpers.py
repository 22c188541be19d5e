"""Test helpers: the Mastra fixture documents, and a GraphQL client over HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
from asgi_lifespan import LifespanManager
from bson import json_util

from server import Settings, create_app
from storage import Document

FIXTURES = Path(__file__).parent / "fixtures" / "mastra"

Gql = Callable[..., Awaitable[dict[str, Any]]]


def load_snapshots(name: str = "snapshots.extjson") -> list[Document]:
    docs: list[Document] = json_util.loads((FIXTURES / name).read_text())
    return docs


def load_json(name: str) -> Any:
    return json_util.loads((FIXTURES / name).read_text())


def suspended_doc(run_id: str, agent_id: str = "approver", **overrides: Any) -> Document:
    """A copy of a real Mastra approval snapshot, under a new run id."""
    doc = copy.deepcopy(load_snapshots()[0])
    doc.pop("_id", None)
    doc["run_id"] = run_id
    doc["snapshot"]["runId"] = run_id
    doc["snapshot"]["context"]["executionWorkflow"]["suspendPayload"]["__agentId"] = agent_id
    doc.update(overrides)
    return doc


def make_gql(client: httpx.AsyncClient) -> Gql:
    async def run(query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        response = await client.post("/graphql", json={"query": query, "variables": variables})
        assert response.status_code in (200, 400), response.text
        body: dict[str, Any] = response.json()
        return body

    return run


async def wait_ready(client: httpx.AsyncClient, within: float = 20.0) -> None:
    async with asyncio.timeout(within):
        while (await client.get("/readyz")).status_code != 200:
            await asyncio.sleep(0.05)


async def eventually(check: Callable[[], Awaitable[bool]], within: float) -> float:
    """Seconds until `check` holds; fails the test if it does not hold `within` seconds."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    async with asyncio.timeout(within):
        while not await check():
            await asyncio.sleep(0.02)
    return loop.time() - started


@contextlib.asynccontextmanager
async def running_app(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    """The app, lifespan and all, in this process; an HTTP client to it once it is ready."""
    async with LifespanManager(create_app(settings)) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            await wait_ready(client)
            yield client
