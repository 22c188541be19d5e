"""The command line's arguments: what `suspended-runs --help` shows, kept apart from
what each command does (server/cli.py)."""

from __future__ import annotations

import argparse
import importlib.metadata
from pathlib import Path


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="suspended-runs",
        description="A GraphQL API over suspended agent runs. Settings are environment "
        "variables (see README.md); flags override them.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    env_file = "settings from this file (KEY=value lines, systemd's EnvironmentFile) over the env"
    parser.add_argument("--env-file", type=Path, help=env_file)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve = commands.add_parser(
        "serve", help="serve GraphQL (starts the embedded MongoDB when MONGODB_URI is unset)"
    )
    serve.add_argument("--host", help="overrides HOST")
    serve.add_argument("--port", help="overrides PORT (0-65535)")
    commands.add_parser(
        "check",
        help="say what this deployment's settings and database need, a line each; "
        "exit 1 when something fails",
    )
    commands.add_parser(
        "reconcile", help="rebuild the run index from the snapshot collection once, and exit"
    )
    commands.add_parser(
        "langgraph-index",
        help="build the index LangGraph's interrupts are found by (LANGGRAPH_DB's writes), "
        "and exit",
    )
    export = commands.add_parser("export-schema", help="print the GraphQL schema (SDL)")
    export.add_argument("--output", type=Path, help="write to this file instead")
    _new_api_key(
        commands.add_parser(
            "new-api-key", help="make an API key: print it once, and its entry for API_KEYS_FILE"
        )
    )
    return parser


def _new_api_key(key: argparse.ArgumentParser) -> None:
    key.add_argument("--name", required=True)
    key.add_argument("--role", required=True, choices=["viewer", "approver", "admin"])
    key.add_argument("--resource-ids", help="comma-separated: the key sees only these resources")
    key.add_argument("--agent-ids", help="comma-separated: the key sees only these agents")
    key.add_argument(
        "--all", action="store_true", help="the key sees every run (without it or ids: none)"
    )
    key.add_argument("--groups", help="comma-separated: its groups (review policies' group:<name>)")
    key.add_argument("--person", help="the person who holds it (review policies' person:<name>)")


def version() -> str:
    try:
        return importlib.metadata.version("suspended-runs")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout, not installed
        return "unknown"
