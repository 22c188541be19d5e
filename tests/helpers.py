"""Test helpers: the Mastra fixture documents, and a GraphQL client over HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from asgi_lifespan import LifespanManager
from bson import json_util
from opentelemetry.sdk.trace import TracerProvider

from suspended_runs.server import EmbeddedMongoDB, Settings, create_app
from suspended_runs.server.app import DiskWatch
from suspended_runs.server.embedded_mongodb import free_port
from suspended_runs.server.http_protocol import uvicorn_options
from suspended_runs.storage import Document

ROOT = Path(__file__).parent.parent
"""The repository: what tests read of it (the schema, scripts, docs) is found from here."""
FIXTURES = Path(__file__).parent / "fixtures" / "mastra"

Gql = Callable[..., Awaitable[dict[str, Any]]]

RUN_FIELDS = """
  runId agentId runtime status output error outcomeUnknown decidedAt decidedBy
  toolCalls { toolCallId toolName args requiresApproval suspendPayload
              decision { action decidedBy reason resumeData } }
"""
RESULT = f"""
  __typename
  ... on RunDecided {{ toolCallId run {{ {RUN_FIELDS} }} }}
  ... on Problem {{ message }}
  ... on RunNotSuspended {{ status }}
  ... on WrongSuspensionKind {{ requiresApproval }}
  ... on AlreadyDecided {{ decision {{ action }} }}
  ... on ExecutorUnavailable {{ agentId }}
  ... on OutcomeUnknown {{ message run {{ {RUN_FIELDS} }} }}
"""
"""What the tests select of a decision's result union."""
_OPERATOR_PROBLEMS = "__typename ... on Problem { message } ... on WrongRunStatus { status }"
RELEASE_RESULT = f"{_OPERATOR_PROBLEMS} ... on RunReleased {{ run {{ {RUN_FIELDS} }} }}"
CANCEL_RESULT = f"""{_OPERATOR_PROBLEMS} ... on RunCancelled {{ run {{ {RUN_FIELDS} }} }}
  ... on OutcomeUnknown {{ message run {{ {RUN_FIELDS} }} }}"""


def _mutation(field: str, input_type: str, selection: str = RESULT) -> str:
    return f"mutation($input: {input_type}!) {{ {field}(input: $input) {{ {selection} }} }}"


START = _mutation(
    "startRun",
    "StartRunInput",
    f"__typename ... on RunStarted {{ run {{ {RUN_FIELDS} }} }} ... on Problem {{ message }}",
)
APPROVE = _mutation("approveToolCall", "ApproveToolCallInput")
RELEASE = _mutation("releaseRun", "ReleaseRunInput", RELEASE_RESULT)
CANCEL = _mutation("cancelRun", "CancelRunInput", CANCEL_RESULT)
DECLINE = _mutation("declineToolCall", "DeclineToolCallInput")
RESUME = _mutation("resumeRun", "ResumeRunInput")


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


async def act(gql: Gql, mutation: str, **input_: Any) -> dict[str, Any]:
    """Run a mutation with `input_` as its input; its result (no GraphQL errors allowed)."""
    body = await gql(mutation, {"input": input_})
    assert "errors" not in body, body
    result: dict[str, Any] = next(iter(body["data"].values()))
    return result


async def start_run(
    gql: Gql, agent: str, prompt: str = "go /tmp/a.txt", **extra: Any
) -> dict[str, Any]:
    """Start a Python agent's run; the run where it came to rest."""
    result = await act(gql, START, agentId=agent, prompt=prompt, **extra)
    assert result["__typename"] == "RunStarted", result
    run: dict[str, Any] = result["run"]
    return run


async def run_of(gql: Gql, run_id: str) -> Any:
    """The run as `agentRun` shows it (None for no such run)."""
    query = f"query($id: ID!) {{ agentRun(runId: $id) {{ {RUN_FIELDS} }} }}"
    return (await gql(query, {"id": run_id}))["data"]["agentRun"]


async def status_of(gql: Gql, run_id: str) -> str | None:
    run = await run_of(gql, run_id)
    return run["status"] if run else None


async def has_status(gql: Gql, run_id: str, status: str = "SUSPENDED") -> bool:
    return await status_of(gql, run_id) == status


async def listed(gql: Gql, run_id: str) -> bool:
    """Whether `suspendedRuns` lists the run."""
    body = await gql("{ suspendedRuns(perPage: 500) { runs { runId } } }")
    return run_id in {r["runId"] for r in body["data"]["suspendedRuns"]["runs"]}


def wait_until_serving(
    url: str,
    *,
    alive: Callable[[], bool],
    log: Callable[[], str] = lambda: "",
    ready: Callable[[httpx.Response], bool] = lambda response: response.status_code == 200,
    within: float = 60.0,
) -> None:
    """Poll `url` until `ready` says so; fail at once when the server is no longer alive."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        assert alive(), log()[-3000:]
        try:
            if ready(httpx.get(url, timeout=2)):
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"{url} did not become ready within {within:g}s: {log()[-3000:]}")


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
async def running_app(
    settings: Settings, *, embedded: DiskWatch | None = None, traces: TracerProvider | None = None
) -> AsyncIterator[httpx.AsyncClient]:
    """The app, lifespan and all, in this process; an HTTP client to it once it is ready.
    `embedded` stands for the disk watch of an embedded MongoDB, `traces` for the tracer
    provider (create_app's)."""
    app = create_app(settings, embedded=embedded, traces=traces)
    async with LifespanManager(app) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            await wait_ready(client)
            yield client


@contextlib.contextmanager
def stopped(database: EmbeddedMongoDB) -> Iterator[None]:
    """`database` hung, as a frozen disk or a partition leaves it: its process stopped
    (SIGSTOP), its connections open; always continued (SIGCONT) after."""
    assert database.process is not None
    pid = database.process.pid
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


STATE_FILE = "embedded-mongodb.json"
"""What an embedded MongoDB started by `serve` writes into DATA_DIR (its pid, its port)."""


def embedded_pid(data: Path) -> int:
    """The pid of the embedded MongoDB that `serve` runs on `data`."""
    return int(json.loads((data / STATE_FILE).read_text())["pid"])


class Server:
    """`suspended-runs serve` as a process, on its own embedded MongoDB under `data_dir`
    unless `env` names another (MONGODB_URI) or adds settings."""

    def __init__(self, data_dir: Path, env: dict[str, str] | None = None) -> None:
        self.log = data_dir.parent / "serve.log"
        self.port = free_port()
        self.env = {"DATA_DIR": str(data_dir), "PORT": str(self.port), "MONGODB_URI": ""}
        self.env.update(env or {})
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if k != "MONGODB_URI"}
        env.update({k: v for k, v in self.env.items() if v})
        with self.log.open("a") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "suspended_runs.server.cli", "serve"],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        process = self.process
        wait_until_serving(
            f"{self.url}/readyz", alive=lambda: process.poll() is None, log=self.log.read_text
        )

    def stop(self) -> int:
        return self.signal(signal.SIGINT)

    def signal(self, sig: int) -> int:
        """Send `sig` (SIGTERM, SIGHUP, SIGKILL, ...); the exit status (-9 for SIGKILL). A
        process still there 30 s later is killed, so no test leaves a server behind."""
        assert self.process is not None
        process, self.process = self.process, None
        process.send_signal(sig)
        try:
            return process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise

    def query(self, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        response = httpx.post(
            f"{self.url}/graphql", json={"query": query, "variables": variables}, timeout=30
        )
        response.raise_for_status()
        body: dict[str, Any] = response.json()
        return body


class ThreadedServer:
    """The app served by uvicorn in a thread of this process, on a free port: for clients
    that need a real socket (a browser, generated requests), with the app's state at hand."""

    def __init__(self, settings: Settings) -> None:
        config = uvicorn.Config(
            create_app(settings), host="127.0.0.1", port=free_port(), **uvicorn_options(settings)
        )
        self.server = uvicorn.Server(config)
        self.url = f"http://127.0.0.1:{config.port}"
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        wait_until_serving(f"{self.url}/readyz", alive=self.thread.is_alive, within=30)
        return self.url

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(30)


CLIENTS_DIR = ROOT / "tests" / "graphql_clients"
"""GraphQL clients and suites this project did not write (scripts/install-graphql-clients)."""


def node_client(node: Path, script: str, *args: str, cwd: Path = CLIENTS_DIR) -> Any:
    """Runs `script` of CLIENTS_DIR with `node`; what it printed last, as JSON."""
    done = subprocess.run(
        [str(node), str(CLIENTS_DIR / script), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


CHROMIUM = "/usr/bin/chromium"
"""Debian's chromium (scripts/test installs it), which Playwright drives in page tests."""
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


AGENT_RUNS = """query($agent: ID) { suspendedRuns(filter: {agentId: $agent}) { total runs {
  runId agentId runtime status threadId resourceId createdAt suspendedAt problems
  continuable notContinuableReason startedBy
  toolCalls { toolCallId toolName args requiresApproval suspendPayload } } } }"""
"""An agent's suspended runs, with what a run of any runtime shows."""


async def agent_runs(
    gql: Gql, agent: str, count: int = 1, within: float = 5.0
) -> list[dict[str, Any]]:
    """The suspended runs of `agent` once `count` are listed."""
    found: list[dict[str, Any]] = []

    async def check() -> bool:
        nonlocal found
        body = await gql(AGENT_RUNS, {"agent": agent})
        assert "errors" not in body, body
        found = body["data"]["suspendedRuns"]["runs"]
        return bool(len(found) == count)

    await eventually(check, within=within)
    return found


COMMAND = [sys.executable, "-m", "suspended_runs.server.cli"]


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The command, on a free port unless `env` names one: a `scripts/serve` on 8000 in
    another terminal changes no test."""
    return subprocess.run(
        [*COMMAND, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PORT": str(free_port()), **(env or {})},
        check=False,
    )


UNREACHABLE = "mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=500"
"""A MONGODB_URI where no MongoDB answers, and says so at once."""


def run_away(*args: str | Path, stderr: bool = False) -> str:
    """Run a command away from this checkout, whose folders would otherwise be importable;
    its output (with `stderr`, its errors' too)."""
    result = subprocess.run(
        [str(a) for a in args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=Path(args[0]).parent,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout + (result.stderr if stderr else "")
