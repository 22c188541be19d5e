"""Mastra runs, continued by the Mastra server that hosts their agent.

A decision made here is sent to that server's streaming routes
(`POST /api/agents/:agentId/approve-tool-call`, `/decline-tool-call`, `/resume-stream`),
whose event stream is read to its end. Where the run came to rest is then read from its
snapshot, the source of truth: suspended again (Mastra asks parallel approvals one at a
time), or gone (completed, with the text the stream carried). A server that is down,
slow or answers an error changes nothing here: the caller puts the run back as it was.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import httpx

from suspended_runs.runtime.claims import ClaimKeeper
from suspended_runs.runtime.protocol import Capabilities, Continuation
from suspended_runs.storage import (
    Action,
    NotApplied,
    Outcome,
    RunEntry,
    RunStatus,
    Runtime,
    Storage,
    ToolCall,
)

log = logging.getLogger(__name__)

_ROUTES = {
    Action.APPROVE: "approve-tool-call",
    Action.DECLINE: "decline-tool-call",
    Action.RESUME: "resume-stream",
}


@dataclass(frozen=True, slots=True)
class MastraServers:
    """Where each Mastra agent is served: one base URL for all, or one per agent id."""

    default_url: str | None = None
    agent_urls: Mapping[str, str] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout_seconds: float = 60.0

    def url_for(self, agent_id: str) -> str | None:
        url = self.agent_urls.get(agent_id, self.default_url)
        return url.rstrip("/") if url else None


@dataclass(frozen=True, slots=True)
class StreamEnd:
    """What a Mastra event stream said, read to its end."""

    text: str
    error: str | None
    suspended: bool


class MastraClient:
    def __init__(self, servers: MastraServers) -> None:
        self.servers = servers
        self._http = httpx.AsyncClient(
            headers=dict(servers.headers), timeout=httpx.Timeout(servers.timeout_seconds)
        )

    def serves(self, agent_id: str) -> bool:
        return self.servers.url_for(agent_id) is not None

    async def close(self) -> None:
        await self._http.aclose()

    async def decide(
        self,
        agent_id: str,
        action: Action,
        run_id: str,
        tool_call_id: str,
        *,
        reason: str | None = None,
        resume_data: Any = None,
    ) -> StreamEnd:
        base = self.servers.url_for(agent_id)
        if base is None:
            raise NotApplied(f"no Mastra server is configured for agent {agent_id!r}")
        body: dict[str, Any] = {"runId": run_id, "toolCallId": tool_call_id}
        if action is Action.DECLINE and reason is not None:
            body["reason"] = reason  # surfaced to the model, as Mastra's approval schema says
        if action is Action.RESUME:
            body["resumeData"] = resume_data
        url = f"{base}/api/agents/{agent_id}/{_ROUTES[action]}"
        try:
            async with self._http.stream("POST", url, json=body) as response:
                if response.status_code >= 400:
                    detail = (await response.aread()).decode(errors="replace")[:500]
                    raise NotApplied(f"Mastra answered HTTP {response.status_code}: {detail}")
                return await _read_stream(response)
        except httpx.TimeoutException:
            raise NotApplied(
                f"Mastra did not answer within {self.servers.timeout_seconds:g}s"
            ) from None
        except httpx.HTTPError as exc:
            raise NotApplied(f"Mastra could not be reached: {type(exc).__name__}") from None


async def _read_stream(response: httpx.Response) -> StreamEnd:
    text: list[str] = []
    error: str | None = None
    suspended = False
    done = False
    async for line in response.aiter_lines():
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            done = True
            break
        try:
            chunk = json.loads(data)
        except ValueError:
            continue
        kind, payload = chunk.get("type"), chunk.get("payload") or {}
        if kind == "text-delta":
            text.append(str(payload.get("text", "")))
        elif kind in ("tool-call-approval", "tool-call-suspended"):
            suspended = True
        elif kind in ("error", "tripwire"):
            error = _error_text(payload)
    if not done:
        raise NotApplied("Mastra's event stream ended before [DONE]")
    return StreamEnd(text="".join(text), error=error, suspended=suspended)


def _error_text(payload: Any) -> str:
    if isinstance(payload, dict):
        error = payload.get("error", payload)
        if isinstance(error, dict):
            return str(error.get("message") or error)
        return str(error)
    return str(payload)


class MastraRuntime:
    """Continues a claimed Mastra run through its server, and settles where it came to rest."""

    kind = Runtime.MASTRA
    capabilities = Capabilities(
        starts_runs=False,  # Mastra starts its own runs
        validates_resume_data=False,  # Mastra checks resume data against its own schemas
        continues_each_decision=True,  # Mastra asks parallel approvals one at a time
    )

    def __init__(self, client: MastraClient, storage: Storage, claims: ClaimKeeper) -> None:
        self.client = client
        self.storage = storage
        self.claims = claims

    def serves(self, agent_id: str) -> bool:
        return self.client.serves(agent_id)

    def agent_ids(self) -> Iterable[str]:
        return self.client.servers.agent_urls.keys()

    async def start(
        self, agent_id: str, prompt: str, thread_id: str | None, resource_id: str | None
    ) -> RunEntry:
        raise NotApplied("Mastra runs are started by Mastra, not here")

    def check_resume_data(self, entry: RunEntry, call: ToolCall, data: Any) -> None:
        return None

    async def record_decision(self, decided: RunEntry) -> None:
        return None  # Mastra's snapshot learns of the decision from Mastra itself

    async def continue_run(self, continuation: Continuation) -> RunEntry:
        claimed, seen = continuation.claimed, continuation.seen
        call = next(c for c in claimed.tool_calls if c.tool_call_id == continuation.tool_call_id)
        assert call.decision is not None
        try:
            async with self.claims.kept(claimed.run_id):
                end = await self.client.decide(
                    claimed.agent_id,
                    call.decision.action,
                    claimed.run_id,
                    continuation.tool_call_id,
                    reason=call.decision.reason,
                    resume_data=call.decision.resume_data,
                )
        except NotApplied as exc:
            log.warning(
                "Mastra did not apply a decision; the run is put back",
                extra={"runId": claimed.run_id, "reason": str(exc)},
            )
            await self._put_back(seen)
            raise
        moved = await self.settle(claimed)
        if moved is None:
            await self._put_back(seen)  # answered, yet the run did not move: not applied
            raise NotApplied(end.error or "Mastra answered, but the run did not move on")
        if moved.status is not RunStatus.SUSPENDED:  # gone: the stream says how it ended
            outcome = Outcome(error=end.error) if end.error else Outcome(output=end.text)
            status = RunStatus.FAILED if end.error else RunStatus.COMPLETED
            moved = claimed.finished(status, outcome, self.claims.clock())
        if not await self.claims.settle(moved):
            log.error("lost the claim of a Mastra run", extra={"runId": claimed.run_id})
        return moved

    async def settle(self, claimed: RunEntry) -> RunEntry | None:
        current = await self.storage.sync.current_entry(claimed.run_id)
        if current is None:  # the snapshot is gone: the run left the suspended state
            return claimed.finished(RunStatus.ENDED, None, self.claims.clock())
        if current.suspended_at == claimed.suspended_at:
            return None
        return replace(current, version=claimed.version, claim=None)  # suspended on its next call

    async def _put_back(self, seen: RunEntry) -> None:
        if await self.claims.settle(replace(seen, claim=None)):
            # Mastra may have moved the run on although the call failed: look.
            await self.storage.sync.refresh(seen.run_id)
