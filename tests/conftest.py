"""Fixtures: one embedded MongoDB for the session, a fresh database and app per test."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import uuid
import venv
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph.checkpoint.mongodb import MongoDBSaver
from playwright.sync_api import Browser, sync_playwright
from pymongo import AsyncMongoClient
from pymongo.asynchronous.database import AsyncDatabase

from suspended_runs.server import EmbeddedMongoDB, Settings
from suspended_runs.server.auth import new_api_key
from suspended_runs.storage import SNAPSHOTS_COLLECTION, Document
from tests.builders import KEYS, LIST, SECRET_SETTING, bearer, post, token
from tests.helpers import (
    CHROMIUM,
    CHROMIUM_ARGS,
    CLIENTS_DIR,
    ROOT,
    Gql,
    Server,
    eventually,
    make_gql,
    run_away,
    running_app,
    suspended_doc,
)
from tests.mastra_peer import PEER_DB, MastraPeer, node_binary


@pytest.fixture(scope="session")
def mongo_uri(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with EmbeddedMongoDB(tmp_path_factory.mktemp("mongodb")) as server:
        yield server.uri


@pytest.fixture
async def db(mongo_uri: str) -> AsyncIterator[AsyncDatabase[Document]]:
    client: AsyncMongoClient[Document] = AsyncMongoClient(mongo_uri, tz_aware=True)
    name = f"t_{uuid.uuid4().hex[:12]}"
    try:
        yield client[name]
    finally:
        await client.drop_database(name)
        await client.close()


@pytest.fixture
def settings(mongo_uri: str, db: AsyncDatabase[Document]) -> Settings:
    # The test client says `Host: localhost`, which the default allow-list of a loopback
    # HOST serves: the tests run with the defaults a user gets.
    return Settings(mongodb_uri=mongo_uri, mongodb_db=db.name, sync_poll_interval=0.2)


@pytest.fixture
async def start_app() -> AsyncIterator[Callable[[Settings], Awaitable[httpx.AsyncClient]]]:
    """Starts the app in this process; it stops when the test ends."""
    async with contextlib.AsyncExitStack() as stack:

        async def start(settings: Settings) -> httpx.AsyncClient:
            return await stack.enter_async_context(running_app(settings))

        yield start


@pytest.fixture
async def client(
    settings: Settings, start_app: Callable[[Settings], Awaitable[httpx.AsyncClient]]
) -> httpx.AsyncClient:
    return await start_app(settings)


@pytest.fixture
def gql(client: httpx.AsyncClient) -> Gql:
    return make_gql(client)


@pytest.fixture
async def snapshots(db: AsyncDatabase[Document]) -> Any:
    return db[SNAPSHOTS_COLLECTION]


@pytest.fixture
def own_database(tmp_path: Path) -> Iterator[EmbeddedMongoDB]:
    """An embedded MongoDB that the test starts, kills and starts again itself: no `serve`
    supervises it (point a `Server` at it with MONGODB_URI)."""
    database = EmbeddedMongoDB(tmp_path / "database", cache_size="256M")
    database.start()
    yield database
    database.stop()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    """`suspended-runs serve` as a real process (not started yet), stopped after the test."""
    server = Server(tmp_path / "data")
    yield server
    if server.process is not None:
        server.stop()


@pytest.fixture(scope="session")
def peer_node() -> Path:
    """The Node.js of the Mastra peer (scripts/install-mastra-peer installs both)."""
    node = node_binary()
    if node is None:
        if os.environ.get("SKIP_MASTRA_PEER"):
            pytest.skip("SKIP_MASTRA_PEER is set")
        pytest.fail("the Mastra peer is not installed: run scripts/install-mastra-peer")
    return node


@pytest.fixture(scope="session")
def clients_node(peer_node: Path) -> Path:
    """The Node.js that runs tests/graphql_clients (scripts/install-graphql-clients)."""
    if not (CLIENTS_DIR / "node_modules" / "graphql-http").exists():
        pytest.fail("the GraphQL clients are not installed: run scripts/install-graphql-clients")
    return peer_node


@pytest.fixture(scope="session")
def peer(
    peer_node: Path, mongo_uri: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[MastraPeer]:
    """A real Mastra server for the session, writing to PEER_DB on the session's MongoDB."""
    log = tmp_path_factory.mktemp("peer") / "peer.log"
    peer = MastraPeer(peer_node, mongo_uri, PEER_DB, log)
    peer.start()
    yield peer
    peer.stop()


@pytest.fixture
def own_peer(peer_node: Path, mongo_uri: str, tmp_path: Path) -> Iterator[MastraPeer]:
    """A Mastra server of the test's own, to stop or kill; stopped after the test."""
    own = MastraPeer(peer_node, mongo_uri, PEER_DB, tmp_path / "own-peer.log")
    own.start()
    yield own
    own.stop()


@pytest.fixture
async def tenants(snapshots, settings: Settings, start_app, tmp_path: Path) -> dict[str, Any]:
    """Runs of the same agents for tenant-a (3) and tenant-b (2), and keys for each."""
    docs = [suspended_doc(f"a-{i}", resourceId="tenant-a") for i in range(3)]
    docs += [suspended_doc(f"b-{i}", resourceId="tenant-b") for i in range(2)]
    await snapshots.insert_many(docs)
    keys: dict[str, str] = {}
    entries = []
    for entry in KEYS:
        key, digest = new_api_key()
        keys[entry["name"]] = key
        entries.append({**entry, "sha256": digest})
    key_file = tmp_path / "keys.json"
    key_file.write_text(json.dumps(entries))
    client = await start_app(
        settings.model_copy(
            update={
                "api_keys_file": key_file,
                "jwt_secret": SECRET_SETTING,
                "jwt_audience": "runs-api",
            }
        )
    )
    admin = bearer(token(role="admin", aud="runs-api", suspended_runs_scope="all"))

    async def all_listed() -> bool:
        body = (await post(client, LIST, admin)).json()
        return bool(body["data"]["suspendedRuns"]["total"] == 5)

    await eventually(all_listed, within=2)
    return {"client": client, "keys": keys, "admin": admin}


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Chromium, driven by Playwright, for a module's page tests."""
    if not Path(CHROMIUM).exists() or shutil.which("chromium") is None:
        if os.environ.get("SKIP_BROWSER_TESTS"):
            pytest.skip("SKIP_BROWSER_TESTS is set and chromium is not installed")
        pytest.fail("chromium is not installed: apt-get install chromium (scripts/test does)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
async def langgraph_db(mongo_uri: str, db: AsyncDatabase[Document]) -> AsyncIterator[str]:
    """The name of the test's LangGraph database (a saver's), dropped after the test."""
    name = f"{db.name}_lg"
    yield name
    client: AsyncMongoClient[Document] = AsyncMongoClient(mongo_uri)
    await client.drop_database(name)
    await client.close()


@pytest.fixture
def checkpointer(mongo_uri: str, langgraph_db: str) -> Iterator[MongoDBSaver]:
    """A real `MongoDBSaver` on the test's LangGraph database (its client closed after)."""
    with MongoDBSaver.from_conn_string(mongo_uri, db_name=langgraph_db) as saver:
        yield saver


_NOT_SOURCE = shutil.ignore_patterns(
    ".venv",
    ".git",
    ".data",
    "node_modules",
    ".node",
    "*.egg-info",
    "build",
    "__pycache__",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".hypothesis",
    ".typecheck",
)


@pytest.fixture(scope="session")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of this project's source, away from this checkout's folders."""
    source = tmp_path_factory.mktemp("packaging") / "project"
    shutil.copytree(ROOT, source, ignore=_NOT_SOURCE)
    return source


@pytest.fixture(scope="session")
def fresh_venv(source: Path) -> Path:
    """A new venv holding PyPI's `schema` and a regular install of the project, with its
    dependencies, resolved and installed once by the pip the venv came with."""
    where = source.parent
    env = where / "venv"
    venv.create(env, with_pip=True)
    python = env / "bin" / "python"
    # Built apart and verbose, so the build backend's own warnings are kept for a test.
    build = run_away(python, "-m", "pip", "wheel", "-v", "--no-deps", "-w", where / "dist", source)
    (where / "build.log").write_text(build)
    [wheel] = (where / "dist").glob("suspended_runs-*.whl")
    run_away(python, "-m", "pip", "install", "--quiet", wheel, "schema")
    return env
