"""The `suspended-runs` command: serve, check, reconcile, export-schema, new-api-key."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from suspended_runs.runtime import ConfigurationError
from suspended_runs.server.arguments import parser
from suspended_runs.server.errors import EmbeddedMongoDBError
from suspended_runs.server.settings import Settings, load_settings

if TYPE_CHECKING:
    from suspended_runs.server.supervisor import EmbeddedSupervisor

log = logging.getLogger(__name__)

_DATABASE_WAIT = 10.0
"""Seconds a starting server waits for its MongoDB to answer."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run a command; a setting it cannot use ends it with one line naming it, status 2,
    and an embedded MongoDB that cannot be kept running with one line, status 1."""
    args = parser().parse_args(argv)
    if os.getcwd() not in sys.path:  # AGENTS and LANGGRAPH_GRAPHS modules here import, as
        sys.path.append(os.getcwd())  # uvicorn's do; installed packages come first
    try:
        if args.env_file is not None:
            _read_env_file(args.env_file)
        return _run(args)
    except ConfigurationError as exc:
        print(f"suspended-runs: {exc}", file=sys.stderr)
        return 2
    except EmbeddedMongoDBError as exc:
        print(f"suspended-runs: {exc}", file=sys.stderr)
        return 1


def _run(args: argparse.Namespace) -> int:
    if args.command == "new-api-key":
        return _new_api_key(args)
    if args.command == "export-schema":
        return _export_schema(args.output)
    if args.command == "check":
        return _check()
    overrides = {}
    if args.command == "serve":
        overrides = {k: v for k, v in (("host", args.host), ("port", args.port)) if v is not None}
    settings = load_settings(**overrides)
    from suspended_runs.server.logs import configure_logging

    configure_logging(settings.log_level)
    if args.command == "serve":
        return _serve(settings)
    if args.command == "langgraph-index":
        return _langgraph_index(settings)
    return _reconcile(settings)


def _read_env_file(path: Path) -> None:
    from dotenv import dotenv_values  # pydantic-settings' own dependency

    if not path.is_file():
        raise ConfigurationError(f"--env-file: {path} is not a file")
    os.environ.update({k: v for k, v in dotenv_values(path).items() if v is not None})


@dataclass(slots=True)
class _Database:
    settings: Settings
    """With a MONGODB_URI: the given one, or the embedded server's."""
    supervisor: EmbeddedSupervisor | None = None
    """What keeps the embedded server running, when `serve` started one."""


@contextlib.contextmanager
def _database(settings: Settings, *, reuse_running: bool) -> Iterator[_Database]:
    """The MongoDB to use: the given one, one already serving DATA_DIR (`reuse_running`),
    or an embedded server started here and kept running while the block runs."""
    if settings.mongodb_uri is not None:
        yield _Database(settings)
        return
    from suspended_runs.server.embedded_mongodb import EmbeddedMongoDB
    from suspended_runs.server.supervisor import EmbeddedSupervisor

    running = EmbeddedMongoDB.running_in(settings.data_dir) if reuse_running else None
    if running is not None:
        yield _Database(settings.model_copy(update={"mongodb_uri": running}))
        return
    embedded = EmbeddedMongoDB(
        settings.data_dir,
        port=settings.embedded_mongodb_port,
        cache_size=settings.embedded_mongodb_cache_size,
    )
    try:
        embedded.start()  # stops a server a killed `serve` left behind on this data first
    except EmbeddedMongoDBError as exc:
        first_line = str(exc).splitlines()[0]
        raise ConfigurationError(
            f"the embedded MongoDB for DATA_DIR {settings.data_dir} did not start: {first_line}"
        ) from None
    # A SIGTERM to this process stops `serve` in order; `_serve` then reports why.
    supervisor = EmbeddedSupervisor(embedded, lambda: os.kill(os.getpid(), signal.SIGTERM))
    supervisor.start()
    try:
        yield _Database(settings.model_copy(update={"mongodb_uri": embedded.uri}), supervisor)
    finally:
        supervisor.stop()
        embedded.stop()


@contextlib.contextmanager
def _stopping_on_signals() -> Iterator[None]:
    """SIGTERM and SIGHUP stop `serve` as Ctrl-C (SIGINT) does, and a second signal does
    not interrupt the stopping.

    While uvicorn serves, it handles SIGINT and SIGTERM itself (a graceful shutdown), and
    a SIGHUP is passed on to it as a SIGTERM. After its shutdown uvicorn raises the signal
    again, under the handler here: a KeyboardInterrupt, which `_serve_until_stopped`
    swallows (as uvicorn.run does). Before uvicorn serves (the embedded MongoDB starting)
    the KeyboardInterrupt unwinds at once.
    Either way the `with _database(...)` block exits, and stops the embedded MongoDB.
    """
    stopping = False

    def stop(sig: int, frame: FrameType | None) -> None:
        nonlocal stopping
        if sig == signal.SIGHUP:
            signal.raise_signal(signal.SIGTERM)  # to uvicorn's handler, or to this one
        elif not stopping:
            stopping = True
            raise KeyboardInterrupt

    handled = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {sig: signal.signal(sig, stop) for sig in handled}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _serve(settings: Settings) -> int:
    """Serve until a signal asks it to stop (status 0), then stop the embedded MongoDB;
    raise EmbeddedMongoDBError when `serve` stopped because it could not keep that running."""
    served: list[_Database] = []
    try:
        with _stopping_on_signals():
            _serve_until_stopped(settings, served)
    except KeyboardInterrupt:  # a stop asked for before uvicorn served
        pass
    gave_up = served[0].supervisor.gave_up if served and served[0].supervisor else None
    if gave_up is not None:
        raise EmbeddedMongoDBError(gave_up)
    return 0


def _serve_until_stopped(settings: Settings, served: list[_Database]) -> None:
    """Serve; `served` gets the database served on, once it is there."""
    import uvicorn

    from suspended_runs.server.app import create_app
    from suspended_runs.server.http_protocol import uvicorn_options
    from suspended_runs.server.memory import freeze_startup_objects, return_large_blocks
    from suspended_runs.server.preflight import listening_socket, usable_data_dir

    return_large_blocks()
    # Before anything starts: the address (bound now, so nothing takes it meanwhile),
    # and the embedded MongoDB's data directory.
    sock = listening_socket(settings.host, settings.port)
    try:
        if settings.mongodb_uri is None:
            usable_data_dir(settings.data_dir)
        with _database(settings, reuse_running=False) as database:
            served.append(database)
            settings = database.settings
            assert settings.mongodb_uri is not None
            # A setting it cannot use fails here, before serving.
            app = create_app(settings, embedded=database.supervisor)
            asyncio.run(_reachable(settings.mongodb_uri))
            asyncio.run(_langgraph_indexed(settings))
            freeze_startup_objects()
            port = sock.getsockname()[1]
            log.info("serving GraphQL", extra={"url": f"http://{settings.host}:{port}/graphql"})
            config = uvicorn.Config(app, host=settings.host, port=port, **uvicorn_options(settings))
            with contextlib.suppress(KeyboardInterrupt):  # as uvicorn.run does
                uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()


async def _reachable(uri: str) -> None:
    """Fail with one line, not a traceback, when no MongoDB answers at `uri`."""
    from pymongo import AsyncMongoClient
    from pymongo.errors import PyMongoError

    client: AsyncMongoClient[dict[str, object]] = AsyncMongoClient(
        uri, serverSelectionTimeoutMS=int(_DATABASE_WAIT * 1000)
    )
    try:
        await client.admin.command("ping")
    except PyMongoError as exc:
        raise ConfigurationError(
            f"MONGODB_URI: no MongoDB answered within {_DATABASE_WAIT:g}s ({type(exc).__name__}): "
            "check the address, or unset MONGODB_URI to use the embedded MongoDB"
        ) from None
    finally:
        await client.close()


async def _langgraph_indexed(settings: Settings) -> None:
    """Fail with one line when LangGraph's writes lack the index this server finds
    interrupts by and the start may not build it (LANGGRAPH_CREATE_INDEX)."""
    checkpoints = settings.langgraph_checkpoints(None)
    if checkpoints is None or settings.creates_langgraph_index(settings.production):
        return
    from suspended_runs.storage import Storage

    assert settings.mongodb_uri is not None
    storage = Storage.open(
        settings.mongodb_uri, settings.mongodb_db, retention=settings.retention,
        langgraph=checkpoints,
    )  # fmt: skip
    try:
        assert storage.langgraph is not None
        if not await storage.langgraph.has_index():
            raise ConfigurationError(
                f"LANGGRAPH_CREATE_INDEX: {checkpoints.database}.{checkpoints.writes} has no "
                "(channel, checkpoint_ns) index: run `suspended-runs langgraph-index` once, "
                "or set LANGGRAPH_CREATE_INDEX=true"
            )
    finally:
        await storage.close()


def _langgraph_index(settings: Settings) -> int:
    checkpoints = settings.langgraph_checkpoints(None)
    if checkpoints is None:
        raise ConfigurationError("LANGGRAPH_DB: set it to the database a MongoDBSaver writes")
    from suspended_runs.storage import Storage

    async def build(uri: str) -> None:
        storage = Storage.open(
            uri, settings.mongodb_db, retention=settings.retention, langgraph=checkpoints
        )
        try:
            assert storage.langgraph is not None
            await storage.langgraph.ensure_index()
        finally:
            await storage.close()

    with _database(settings, reuse_running=True) as database:
        assert database.settings.mongodb_uri is not None
        asyncio.run(build(database.settings.mongodb_uri))
    print(f"indexed {checkpoints.database}.{checkpoints.writes} (channel, checkpoint_ns)")
    return 0


def _check() -> int:
    from suspended_runs.server.check import Finding, run_check

    try:
        settings = load_settings()
    except ConfigurationError as exc:
        found = [Finding("fail", f"settings: {exc}")]
    else:
        with _database(settings, reuse_running=True) as database:
            found = run_check(database.settings)
    print(*found, sep="\n")
    failed = sum(f.level == "fail" for f in found)
    print(f"{failed} failed" if failed else "nothing failed")
    return 1 if failed else 0


def _reconcile(settings: Settings) -> int:
    from suspended_runs.storage import Storage

    async def run(uri: str) -> dict[str, int]:
        storage = Storage.open(
            uri, settings.mongodb_db, retention=settings.retention,
            langgraph=settings.langgraph_checkpoints(settings.review_starter_context_key),
        )  # fmt: skip
        try:
            await storage.ensure_indexes()
            return asdict(await storage.follower.reconcile())
        finally:
            await storage.close()

    with _database(settings, reuse_running=True) as database:
        assert database.settings.mongodb_uri is not None
        report = asyncio.run(run(database.settings.mongodb_uri))
    print(json.dumps(report))
    return 0


def _new_api_key(args: argparse.Namespace) -> int:
    from suspended_runs.server.auth import new_api_key

    key, digest = new_api_key()

    def ids(text: str | None) -> list[str] | None:
        return [part.strip() for part in text.split(",") if part.strip()] if text else None

    if args.all and (args.resource_ids or args.agent_ids):
        raise ConfigurationError(
            "new-api-key: --all and --resource-ids/--agent-ids exclude each other"
        )
    entry: dict[str, object] = {"name": args.name, "sha256": digest, "role": args.role}
    if args.all:
        entry["scope"] = "all"
    else:  # scopes fail closed: a key with neither list sees no run
        entry |= {"resourceIds": ids(args.resource_ids), "agentIds": ids(args.agent_ids)}
    if args.groups:
        entry["groups"] = ids(args.groups)
    if args.person:
        entry["person"] = args.person
    print(f"key (shown once; send it as X-API-Key): {key}")
    print(f"entry for API_KEYS_FILE: {json.dumps(entry)}")
    return 0


def _export_schema(output: Path | None) -> int:
    from suspended_runs.schema import build_schema

    sdl = build_schema().as_str() + "\n"
    if output is None:
        sys.stdout.write(sdl)
    else:
        output.write_text(sdl)
    return 0


if __name__ == "__main__":
    sys.exit(main())
