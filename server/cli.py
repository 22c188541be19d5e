"""The `suspended-runs` command: serve, reconcile, export-schema."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import sys
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from pathlib import Path

from pydantic import ValidationError

from server.settings import Settings

log = logging.getLogger(__name__)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="suspended-runs",
        description="A GraphQL API over suspended agent runs. Settings are environment "
        "variables (see README.md); flags override them.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve = commands.add_parser(
        "serve", help="serve GraphQL (starts the embedded MongoDB when MONGODB_URI is unset)"
    )
    serve.add_argument("--host", help="overrides HOST")
    serve.add_argument("--port", type=int, help="overrides PORT")
    commands.add_parser(
        "reconcile", help="rebuild the run index from the snapshot collection once, and exit"
    )
    export = commands.add_parser("export-schema", help="print the GraphQL schema (SDL)")
    export.add_argument("--output", type=Path, help="write to this file instead")
    key = commands.add_parser(
        "new-api-key", help="make an API key: print it once, and its entry for API_KEYS_FILE"
    )
    key.add_argument("--name", required=True)
    key.add_argument("--role", required=True, choices=["viewer", "approver", "admin"])
    key.add_argument("--resource-ids", help="comma-separated: the key sees only these resources")
    key.add_argument("--agent-ids", help="comma-separated: the key sees only these agents")
    args = parser.parse_args(argv)
    if args.command == "new-api-key":
        return _new_api_key(args)

    try:
        settings = Settings()
    except ValidationError as exc:
        for error in exc.errors():
            name = ".".join(str(part) for part in error["loc"]).upper()
            print(f"suspended-runs: setting {name}: {error['msg']}", file=sys.stderr)
        return 2
    from server.logs import configure_logging

    configure_logging(settings.log_level)
    if args.command == "serve":
        overrides = {k: v for k, v in (("host", args.host), ("port", args.port)) if v is not None}
        return _serve(settings.model_copy(update=overrides))
    if args.command == "reconcile":
        return _reconcile(settings)
    return _export_schema(args.output)


@contextlib.contextmanager
def _database(settings: Settings, *, reuse_running: bool) -> Iterator[Settings]:
    """Settings with a MONGODB_URI: the given one, or an embedded server's."""
    if settings.mongodb_uri is not None:
        yield settings
        return
    from server.embedded_mongodb import EmbeddedMongoDB

    running = EmbeddedMongoDB.running_in(settings.data_dir) if reuse_running else None
    if running is not None:
        yield settings.model_copy(update={"mongodb_uri": running})
        return
    with EmbeddedMongoDB(settings.data_dir, port=settings.embedded_mongodb_port) as embedded:
        yield settings.model_copy(update={"mongodb_uri": embedded.uri})


def _serve(settings: Settings) -> int:
    import uvicorn

    from server.app import create_app

    with _database(settings, reuse_running=False) as settings:
        log.info(
            "serving GraphQL",
            extra={"url": f"http://{settings.host}:{settings.port}/graphql"},
        )
        uvicorn.run(
            create_app(settings),
            host=settings.host,
            port=settings.port,
            log_config=None,
            access_log=False,
        )
    return 0


def _reconcile(settings: Settings) -> int:
    from storage import Storage

    async def run(uri: str) -> dict[str, int]:
        storage = Storage.open(uri, settings.mongodb_db, retention=settings.retention)
        try:
            await storage.ensure_indexes()
            return asdict(await storage.sync.reconcile())
        finally:
            await storage.close()

    with _database(settings, reuse_running=True) as settings:
        assert settings.mongodb_uri is not None
        report = asyncio.run(run(settings.mongodb_uri))
    print(json.dumps(report))
    return 0


def _new_api_key(args: argparse.Namespace) -> int:
    from server.auth import new_api_key

    key, digest = new_api_key()

    def ids(text: str | None) -> list[str] | None:
        return [part.strip() for part in text.split(",") if part.strip()] if text else None

    entry = {
        "name": args.name,
        "sha256": digest,
        "role": args.role,
        "resourceIds": ids(args.resource_ids),
        "agentIds": ids(args.agent_ids),
    }
    print(f"key (shown once; send it as X-API-Key): {key}")
    print(f"entry for API_KEYS_FILE: {json.dumps(entry)}")
    return 0


def _export_schema(output: Path | None) -> int:
    from schema import build_schema

    sdl = build_schema().as_str() + "\n"
    if output is None:
        sys.stdout.write(sdl)
    else:
        output.write_text(sdl)
    return 0


if __name__ == "__main__":
    sys.exit(main())
