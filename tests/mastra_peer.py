"""The Mastra peer of the interoperability tests, as a process (see tests/mastra_peer/)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import uuid
from pathlib import Path
from typing import Any

import httpx

from suspended_runs.server import Settings
from suspended_runs.server.embedded_mongodb import free_port
from tests.helpers import wait_until_serving

PEER_DIR = Path(__file__).parent / "mastra_peer"
PEER_DB = "mastra_interop"
"""The database the session's peer writes its snapshots to."""
_ARCH = {"x86_64": "x64", "aarch64": "arm64", "arm64": "arm64"}


def node_binary() -> Path | None:
    arch = _ARCH.get(platform.machine())
    node = PEER_DIR / ".node" / "node_modules" / f"node-linux-{arch}" / "bin" / "node"
    installed = node.exists() and (PEER_DIR / "node_modules" / "@mastra" / "core").exists()
    return node if installed else None


class MastraPeer:
    """`node peer.mjs` on a free port, against a MongoDB; its tool executions are counted."""

    def __init__(self, node: Path, mongo_uri: str, db_name: str, log: Path) -> None:
        self.node = node
        self.mongo_uri = mongo_uri
        self.db_name = db_name
        self.log = log
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        env = {
            **os.environ,
            "MONGODB_URI": self.mongo_uri,
            "MONGODB_DB": self.db_name,
            "PORT": str(self.port),
        }
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [str(self.node), "peer.mjs"], cwd=PEER_DIR, env=env, stdout=out, stderr=out
            )
        process = self.process
        wait_until_serving(
            f"{self.url}/api/agents",
            alive=lambda: process.poll() is None,
            log=self.log.read_text,
            ready=lambda response: True,  # any answer: it is listening
        )

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(15)
            self.process = None

    def kill(self) -> None:
        """SIGKILL: the peer dies mid-work, as a crashed server does."""
        if self.process is not None:
            self.process.kill()
            self.process.wait(15)
            self.process = None

    def executions(self, marker: str) -> list[tuple[str, Any]]:
        """The tools the peer executed whose input mentions `marker`."""
        found = []
        for line in self.log.read_text(errors="replace").splitlines():
            if line.startswith("EXECUTED ") and marker in line:
                _, tool, payload = line.split(" ", 2)
                found.append((tool, json.loads(payload)))
        return found

    def traceparents(self) -> list[tuple[str, str]]:
        """(path, traceparent) of each request that carried a W3C trace context."""
        return [
            (parts[1], parts[2])
            for line in self.log.read_text(errors="replace").splitlines()
            if line.startswith("TRACEPARENT ") and len(parts := line.split(" ")) == 3
        ]

    async def start_run(
        self,
        agent: str,
        calls: list[dict[str, Any]],
        thread: str | None = None,
        resource: str = "u-1",
    ) -> str:
        """A run of `agent` that makes these tool calls in one step; its run id."""
        body = {
            "messages": [{"role": "user", "content": "CALL " + json.dumps(calls)}],
            "memory": {"thread": thread or f"th-{uuid.uuid4().hex[:8]}", "resource": resource},
        }
        async with httpx.AsyncClient(timeout=60) as client:
            response = await client.post(f"{self.url}/api/agents/{agent}/stream", json=body)
        response.raise_for_status()
        for line in response.text.splitlines():
            if line.startswith("data: {"):
                run_id: str = json.loads(line[6:])["runId"]
                return run_id
        raise AssertionError(response.text)

    async def suspended_runs(self, agent: str) -> dict[str, Any]:
        async with httpx.AsyncClient(timeout=60) as client:
            response = await client.get(f"{self.url}/api/agents/{agent}/suspended-runs")
        response.raise_for_status()
        listing: dict[str, Any] = response.json()
        return listing

    async def decide(self, agent: str, route: str, body: dict[str, Any]) -> str:
        async with httpx.AsyncClient(timeout=60) as client:
            response = await client.post(f"{self.url}/api/agents/{agent}/{route}", json=body)
        response.raise_for_status()
        return response.text


def delete(path: str) -> dict[str, Any]:
    """A call of the peer's `deleteFile`, which needs approval."""
    return {"toolName": "deleteFile", "input": {"path": path}}


def slow_delete(path: str, seconds: float) -> dict[str, Any]:
    """A call of the peer's `slowDelete`: it needs approval and takes `seconds` to run."""
    return {"toolName": "slowDelete", "input": {"path": path, "seconds": seconds}}


def settings_for(mongo_uri: str, peer: MastraPeer, **changes: Any) -> Settings:
    """Settings of an app that lists the peer's runs and sends decisions to it."""
    values: dict[str, Any] = {"mastra_timeout_seconds": 30, **changes}
    return Settings(mongodb_uri=mongo_uri, mongodb_db=PEER_DB, mastra_url=peer.url, **values)


def init_store(node: Path, mongo_uri: str, db_name: str) -> str:
    """What @mastra/mongodb's start does to `db_name` (its store's init()); its warnings."""
    env = {**os.environ, "MONGODB_URI": mongo_uri, "MONGODB_DB": db_name}
    done = subprocess.run(
        [str(node), "init_store.mjs"],
        cwd=PEER_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stderr
