"""`suspended-runs check`: what a deployment needs, read from its settings and its database,
a line each, so an operator sees what is wrong before a user does.

Each finding is `ok`, `warn` (works, but not as production should) or `fail` (will not
work, or not safely); the command exits 1 when anything fails. It writes nothing to the database.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from pymongo import AsyncMongoClient
from pymongo.errors import OperationFailure, PyMongoError

from suspended_runs.runtime import ConfigurationError
from suspended_runs.server.settings import Settings
from suspended_runs.storage import FOLLOWER_STATE_COLLECTION, RUNS_COLLECTION, SNAPSHOTS_COLLECTION

Level = Literal["ok", "warn", "fail"]
Client = AsyncMongoClient[dict[str, Any]]
_WAIT_MS = 5000
_ANYONE = "auth: none (every caller an anonymous admin): set API_KEYS_FILE or a JWT key"
_PLAIN = "database: the connection is not encrypted (tls=true, or mongodb+srv://)"
_POLLED = "sync: no change streams (a standalone MongoDB): writes are polled; run a replica set"


@dataclass(frozen=True, slots=True)
class Finding:
    level: Level
    what: str

    def __str__(self) -> str:
        return f"{self.level:<5} {self.what}"


def run_check(settings: Settings) -> list[Finding]:
    found = settings_findings(settings)
    if all(f.level != "fail" for f in found):
        found += asyncio.run(database_findings(settings))
    return found


def settings_findings(settings: Settings) -> list[Finding]:
    """What the settings alone say (they were read and validated already)."""
    from suspended_runs.server.app import create_app

    logging.disable(logging.WARNING)  # what a start would warn of, the findings say
    try:  # agents, graphs, keys, policies, hosts: as a start checks them
        create_app(settings).state.graphs.close()
    except ConfigurationError as exc:
        return [Finding("fail", f"settings: {exc}")]
    finally:
        logging.disable(logging.NOTSET)
    found = [Finding("ok", f"settings: read and usable ({settings.env})")]
    if settings.api_keys_file is None and settings.jwt_config is None:
        refused = settings.production and not settings.allow_anonymous
        found.append(Finding("fail" if refused else "warn", _ANYONE))
    else:
        found.append(Finding("ok", "auth: API keys or JWT configured"))
    uri = (settings.mongodb_uri or "").lower()
    encrypted = uri.startswith("mongodb+srv://") or "tls=true" in uri or "ssl=true" in uri
    if settings.production and not encrypted and not _loopback(uri):
        found.append(Finding("warn", _PLAIN))
    return found


async def database_findings(settings: Settings) -> list[Finding]:
    """What the database says: reachable, change streams, collections, the follower."""
    assert settings.mongodb_uri is not None
    client: Client = AsyncMongoClient(
        settings.mongodb_uri, serverSelectionTimeoutMS=_WAIT_MS, tz_aware=True
    )
    try:
        hello = await client.admin.command("hello")
    except PyMongoError as exc:
        await client.close()
        why = f"database: no MongoDB answered at MONGODB_URI ({type(exc).__name__})"
        return [Finding("fail", f"{why}: check it, or unset it to use the embedded one")]
    try:
        return [
            Finding("ok", "database: answers"),
            await _streams(client, settings, hello),
            *await _collections(client, settings),
            await _follower(client, settings),
        ]
    finally:
        await client.close()


async def _streams(client: Client, settings: Settings, hello: dict[str, Any]) -> Finding:
    try:
        async with await client[settings.mongodb_db][SNAPSHOTS_COLLECTION].watch(
            max_await_time_ms=1
        ):
            pass
    except OperationFailure:
        return Finding("warn", _POLLED)
    kind = f"replica set {hello['setName']}" if hello.get("setName") else "change streams"
    return Finding("ok", f"sync: {kind}: writes are followed as they come")


async def _collections(client: Client, settings: Settings) -> list[Finding]:
    db = client[settings.mongodb_db]
    names = set(await db.list_collection_names())
    where = f"MONGODB_DB={settings.mongodb_db}"
    found = [
        Finding("ok", f"snapshots: {SNAPSHOTS_COLLECTION} in {where}")
        if SNAPSHOTS_COLLECTION in names
        else Finding("warn", f"snapshots: none in {where}: is it Mastra's dbName?")
    ]
    if RUNS_COLLECTION in names:
        indexes = len(await db[RUNS_COLLECTION].index_information())
        found.append(Finding("ok", f"run index: there, with {indexes} indexes"))
    else:
        found.append(Finding("warn", "run index: not built yet (a first start builds it)"))
    checkpoints = settings.langgraph_checkpoints(None)
    if checkpoints is not None:
        writes = client[checkpoints.database][checkpoints.writes]
        keys = [spec.get("key") for spec in (await writes.index_information()).values()]
        indexed = [("channel", 1), ("checkpoint_ns", 1)] in keys
        creates = settings.creates_langgraph_index(settings.production)
        name = f"LangGraph: {checkpoints.database}.{checkpoints.writes}"
        if indexed:
            found.append(Finding("ok", f"{name}: indexed"))
        elif creates:
            found.append(Finding("warn", f"{name}: not indexed yet (a start builds it)"))
        else:
            found.append(
                Finding("fail", f"{name}: not indexed: run suspended-runs langgraph-index")
            )
    return found


async def _follower(client: Client, settings: Settings) -> Finding:
    state = client[settings.mongodb_db][FOLLOWER_STATE_COLLECTION]
    lease: dict[str, Any] = await state.find_one({"_id": "snapshot-follower"}) or {}
    expires = lease.get("expiresAt")
    if not isinstance(expires, datetime) or expires <= datetime.now(UTC):
        return Finding("warn", "follower: no instance follows now (is one serving?)")
    if not lease.get("healthy", True):
        return Finding("fail", f"follower: {lease.get('holder')} follows but failed (see its log)")
    behind = lease.get("behindSeconds")
    lag = f"{behind:.1f} s behind" if isinstance(behind, int | float) else "lag not known yet"
    return Finding("ok", f"follower: {lease.get('holder')} follows ({lease.get('mode')}), {lag}")


def _loopback(uri: str) -> bool:
    return any(host in uri for host in ("127.0.0.1", "localhost", "[::1]"))
