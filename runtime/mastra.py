"""Mastra runs, continued by the Mastra server that hosts their agent.

A decision made here is sent to that server's streaming routes
(`POST /api/agents/:agentId/approve-tool-call`, `/decline-tool-call`, `/resume-stream`),
whose event stream is read to its end. Where the run came to rest is then read from its
snapshot, the source of truth: suspended again (Mastra asks parallel approvals one at a
time), or gone (completed, with the text the stream carried). A server that is down,
slow or answers an error changes nothing here: the caller puts the run back as it was.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

import httpx

from runtime.background import Background
from runtime.claims import kept_claim
from storage import Action, Outcome, RunEntry, RunStatus, Storage

log = logging.getLogger(__name__)

_ROUTES = {
    Action.APPROVE: "approve-tool-call",
    Action.DECLINE: "decline-tool-call",
    Action.RESUME: "resume-stream",
}


class MastraUnavailable(Exception):
    """The Mastra server could not apply the decision: down, timed out, or an error."""


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
            raise MastraUnavailable(f"no Mastra server is configured for agent {agent_id!r}")
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
                    raise MastraUnavailable(
                        f"Mastra answered HTTP {response.status_code}: {detail}"
                    )
                return await _read_stream(response)
        except httpx.TimeoutException:
            raise MastraUnavailable(
                f"Mastra did not answer within {self.servers.timeout_seconds:g}s"
            ) from None
        except httpx.HTTPError as exc:
            raise MastraUnavailable(f"Mastra could not be reached: {type(exc).__name__}") from None


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
        raise MastraUnavailable("Mastra's event stream ended before [DONE]")
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

    def __init__(
        self,
        client: MastraClient,
        storage: Storage,
        *,
        instance_id: str,
        lease: timedelta,
        clock: Callable[[], datetime],
    ) -> None:
        self.client = client
        self.storage = storage
        self.instance_id = instance_id
        self.lease = lease
        self.clock = clock
        self.background = Background()

    def serves(self, agent_id: str) -> bool:
        return self.client.serves(agent_id)

    async def continue_run(self, claimed: RunEntry, seen: RunEntry, tool_call_id: str) -> RunEntry:
        """Send the claimed run's decision; the settled entry.

        Raises MastraUnavailable after putting the run back as it was `seen`: the decision
        is not applied and can be made again.
        """
        call = next(c for c in claimed.tool_calls if c.tool_call_id == tool_call_id)
        assert call.decision is not None
        try:
            async with kept_claim(
                self.storage.runs, claimed.run_id, self.instance_id, self.lease, self.clock
            ):
                end = await self.client.decide(
                    claimed.agent_id,
                    call.decision.action,
                    claimed.run_id,
                    tool_call_id,
                    reason=call.decision.reason,
                    resume_data=call.decision.resume_data,
                )
        except MastraUnavailable as exc:
            log.warning(
                "Mastra did not apply a decision; the run is put back",
                extra={"runId": claimed.run_id, "reason": str(exc)},
            )
            await self._put_back(seen)
            raise
        current = await self.storage.sync.current_entry(claimed.run_id)
        if current is not None and current.suspended_at == seen.suspended_at:
            await self._put_back(seen)  # answered, yet the run did not move: not applied
            raise MastraUnavailable(end.error or "Mastra answered, but the run did not move on")
        if current is not None:  # suspended again, on its next call
            after = replace(current, version=claimed.version, claim=None)
        elif end.error is not None:
            after = claimed.finished(RunStatus.FAILED, Outcome(error=end.error), self.clock())
        else:
            after = claimed.finished(RunStatus.COMPLETED, Outcome(output=end.text), self.clock())
        if not await self.storage.runs.settle(after, self.instance_id):
            log.error("lost the claim of a Mastra run", extra={"runId": claimed.run_id})
        return after

    def continue_in_background(self, claimed: RunEntry, seen: RunEntry, tool_call_id: str) -> None:
        self.background.spawn(self._quietly(self.continue_run(claimed, seen, tool_call_id)))

    async def _put_back(self, seen: RunEntry) -> None:
        if await self.storage.runs.settle(replace(seen, claim=None), self.instance_id):
            # Mastra may have moved the run on although the call failed: look.
            await self.storage.sync.refresh(seen.run_id)

    async def _quietly(self, work: Coroutine[Any, Any, Any]) -> None:
        with contextlib.suppress(MastraUnavailable):  # already logged, and the run put back
            await work
