"""What tests build and share: run-index entries and decisions, credentials and the
requests that carry them. One place, so no test module imports another's helpers."""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import jwt
from pydantic import SecretStr

from suspended_runs.server.auth import new_api_key
from suspended_runs.storage import (
    Action,
    Decision,
    RunEntry,
    RunIndex,
    RunStatus,
    Runtime,
    ToolCall,
)

# -- the run index ----------------------------------------------------------------------

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def entry(**changes: object) -> RunEntry:
    base = RunEntry(
        run_id="r-1",
        workflow_name="agentic-loop",
        runtime=Runtime.MASTRA,
        agent_id="approver",
        status=RunStatus.SUSPENDED,
        created_at=T0,
        suspended_at=T0,
        tool_calls=(ToolCall("c-1", "deleteFile", True, args={"path": "/a"}),),
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def varied_calls(i: int) -> tuple[ToolCall, ...]:
    """Run `i`'s calls: deleteFile, sendMail, both, or one whose tool was not read."""
    names = [("deleteFile",), ("sendMail",), ("deleteFile", "sendMail"), (None,)][i % 4]
    return tuple(ToolCall(f"c-{k + 1}", name, True, args={"n": i}) for k, name in enumerate(names))


def approval() -> Decision:
    return Decision(Action.APPROVE, "alice", T0)


def read_for_counts(index: RunIndex) -> list[dict[str, object]]:
    """The queries whose matches `index` reads to count them, from now on."""
    asked: list[dict[str, object]] = []
    real = index.collection.find

    def spying(query: dict[str, object], *args: object, **kwargs: object):
        if "changedAt" not in query:  # not the look at what changed
            asked.append(query)
        return real(query, *args, **kwargs)

    index.collection.find = spying  # type: ignore[method-assign]
    return asked


# -- credentials ------------------------------------------------------------------------

SECRET = "test-secret-that-is-long-enough-for-hs256"
SECRET_SETTING = SecretStr(SECRET)
LIST = "{ suspendedRuns { total runs { runId resourceId } } }"
"""The list the tenants' fixture waits on."""
KEYS: list[dict[str, Any]] = [
    {"name": "a-viewer", "role": "viewer", "resourceIds": ["tenant-a"]},
    {"name": "b-approver", "role": "approver", "resourceIds": ["tenant-b"]},
    {"name": "guest", "role": "guest", "scope": "all"},
    {"name": "unscoped", "role": "approver"},
    {"name": "everything", "role": "viewer", "scope": "all"},
    {"name": "a-admin", "role": "admin", "resourceIds": ["tenant-a"]},
    {"name": "approver-agent", "role": "viewer", "agentIds": ["approver"]},
]
"""The tenants' API keys: name, role and scope of each."""


def key_file(
    path: Path, entries: list[dict[str, Any]], kept: dict[str, str] | None = None
) -> dict[str, str]:
    """Write an API_KEYS_FILE of `entries` (scope "all" unless they say), each with the
    key `kept` holds for its name, else a new one; the keys, by name."""
    keys, written = dict(kept or {}), []
    for entry in entries:
        key = keys.setdefault(entry["name"], new_api_key()[0])
        digest = hashlib.sha256(key.encode()).hexdigest()
        written.append({"scope": "all", **entry, "sha256": digest})
    path.write_text(json.dumps(written))
    return keys


def token(key: Any = SECRET, algorithm: str = "HS256", **claims: Any) -> str:
    body = {"sub": "someone", "role": "viewer", "exp": int(time.time()) + 600, **claims}
    return jwt.encode(body, key, algorithm=algorithm)


def bearer(value: str) -> dict[str, str]:
    return {"authorization": f"Bearer {value}"}


async def post(
    client: httpx.AsyncClient, query: str, headers: dict[str, str], **variables: Any
) -> httpx.Response:
    return await client.post(
        "/graphql", json={"query": query, "variables": variables}, headers=headers
    )


def key(tenants: dict[str, Any], name: str) -> dict[str, str]:
    return {"x-api-key": tenants["keys"][name]}


def calls_of(monkeypatch: Any, owner: type, name: str) -> list[tuple[object, ...]]:
    """The calls of the async method `owner.name` from now on (their arguments)."""
    calls: list[tuple[object, ...]] = []
    real = getattr(owner, name)

    async def counting(self: object, *args: object, **kwargs: object) -> Any:
        calls.append(args)
        return await real(self, *args, **kwargs)

    monkeypatch.setattr(owner, name, counting)
    return calls
