"""Test helpers: the Mastra fixture documents, and a GraphQL client over HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
from asgi_lifespan import LifespanManager
from bson import json_util

from server import Settings, create_app
from server.embedded_mongodb import free_port
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


def make_gql(client: httpx.AsyncClient, headers: dict[str, str] | None = None) -> Gql:
    async def run(query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        response = await client.post(
            "/graphql", json={"query": query, "variables": variables}, headers=headers
        )
        assert response.status_code in (200, 400), response.text
        body: dict[str, Any] = response.json()
        return body

    return run


def as_mastra(run: dict[str, Any]) -> dict[str, Any]:
    """Our run in the shape of Mastra's `AgentRun` JSON, which leaves absent fields out."""
    calls = [
        {k: v for k, v in call.items() if v is not None}
        for call in (
            {
                k: c[k]
                for k in ("toolCallId", "toolName", "args", "requiresApproval", "suspendPayload")
            }
            for c in run["toolCalls"]
        )
    ]
    shaped = {
        "runId": run["runId"],
        "status": run["status"].lower(),
        "threadId": run["threadId"],
        "resourceId": run["resourceId"],
        "suspendedAt": run["suspendedAt"],
        "toolCalls": calls,
    }
    return {k: v for k, v in shaped.items() if v is not None}


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


class Server:
    """`suspended-runs serve` as a process, on its own embedded MongoDB under `data_dir`."""

    def __init__(self, data_dir: Path) -> None:
        self.log = data_dir.parent / "serve.log"
        self.port = free_port()
        self.env = {"DATA_DIR": str(data_dir), "PORT": str(self.port), "MONGODB_URI": ""}
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if k != "MONGODB_URI"}
        env.update({k: v for k, v in self.env.items() if v})
        with self.log.open("a") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "server.cli", "serve"],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.log.read_text()
            try:
                if httpx.get(f"{self.url}/readyz").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise AssertionError("the server did not become ready")

    def stop(self) -> int:
        assert self.process is not None
        self.process.send_signal(signal.SIGINT)
        code = self.process.wait(30)
        self.process = None
        return code

    def query(self, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        response = httpx.post(
            f"{self.url}/graphql", json={"query": query, "variables": variables}, timeout=30
        )
        response.raise_for_status()
        body: dict[str, Any] = response.json()
        return body
