"""Mastra runs, continued by the Mastra server that hosts their agent.

A decision made here is sent to that server's streaming routes
(`POST /api/agents/:agentId/approve-tool-call`, `/decline-tool-call`, `/resume-stream`),
whose event stream is read to its end. Where the run came to rest is then read from its
snapshot, the source of truth: suspended again (Mastra asks parallel approvals one at a
time), or gone (completed, with the text the stream carried). A server that is down,
slow or answers an error changes nothing here: the caller puts the run back as it was.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import httpx

from suspended_runs.runtime.claims import ClaimKeeper
from suspended_runs.runtime.errors import ArgsRejected, NotApplied, OutcomeUncertain
from suspended_runs.runtime.metrics import MASTRA_ERRORS, MASTRA_SECONDS
from suspended_runs.runtime.protocol import ApprovalsOrData, Capabilities, Continuation
from suspended_runs.storage import Action, Outcome, RunEntry, RunStatus, Runtime, Storage, ToolCall

log = logging.getLogger(__name__)

_CONNECT_TIMEOUT = 5.0
"""Seconds to connect: a decision that cannot connect certainly was not applied."""
_SETTLE_WAIT = 1.0
"""Seconds to wait for the snapshot to move after a stream that ended well."""

_MAX_DECLINES = 20
"""Declines sent to cancel one run: Mastra asks parallel approvals one at a time."""

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


def _kind(error: Exception) -> str:
    return "not_applied" if isinstance(error, NotApplied) else "uncertain"


class MastraClient:
    def __init__(self, servers: MastraServers) -> None:
        self.servers = servers
        self._http = httpx.AsyncClient(
            headers=dict(servers.headers),
            timeout=httpx.Timeout(servers.timeout_seconds, connect=_CONNECT_TIMEOUT),
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
        return await self._post(url, body)

    async def _post(self, url: str, body: dict[str, Any]) -> StreamEnd:
        """POST a decision and read its event stream to the end, within the deadline.

        Raises NotApplied while the request certainly has not reached Mastra (no request
        byte was written) or Mastra refused it (a 4xx answer: it validated and did nothing);
        OutcomeUncertain for anything after that: a timeout, a broken or unfinished stream,
        a 5xx answer. httpx's trace hook tells when the request starts going out.
        """
        sent = False

        async def trace(event: str, info: dict[str, Any]) -> None:
            nonlocal sent
            sent = sent or event.endswith("send_request_headers.started")

        deadline = self.servers.timeout_seconds
        route, started = url.rsplit("/", 1)[-1], time.perf_counter()
        try:
            async with asyncio.timeout(deadline):
                async with self._http.stream(
                    "POST", url, json=body, extensions={"trace": trace}
                ) as response:
                    _refused(response)
                    return await _read_stream(response)
        except TimeoutError:
            failure = f"Mastra did not answer within {deadline:g}s"
        except httpx.HTTPError as exc:
            failed = "failed" if sent else "could not be reached"
            failure = f"the call to Mastra {failed} ({type(exc).__name__})"
        except (NotApplied, OutcomeUncertain) as exc:
            MASTRA_ERRORS.labels(route=route, kind=_kind(exc)).inc()
            raise
        finally:
            MASTRA_SECONDS.labels(route=route).observe(time.perf_counter() - started)
        MASTRA_ERRORS.labels(route=route, kind="uncertain" if sent else "not_applied").inc()
        raise (OutcomeUncertain if sent else NotApplied)(failure) from None


def _refused(response: httpx.Response) -> None:
    if 400 <= response.status_code < 500:
        raise NotApplied(f"Mastra refused the decision (HTTP {response.status_code})")
    if response.status_code >= 500:
        raise OutcomeUncertain(f"Mastra failed while applying it (HTTP {response.status_code})")


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
        raise OutcomeUncertain("Mastra's event stream ended before [DONE]")
    return StreamEnd(text="".join(text), error=error, suspended=suspended)


def _error_text(payload: Any) -> str:
    if isinstance(payload, dict):
        error = payload.get("error", payload)
        if isinstance(error, dict):
            return str(error.get("message") or error)
        return str(error)
    return str(payload)


class MastraRuntime(ApprovalsOrData):
    """Continues a claimed Mastra run through its server, and settles where it came to rest."""

    kind = Runtime.MASTRA
    capabilities = Capabilities(
        starts_runs=False,  # Mastra starts its own runs
        continues_each_decision=True,  # Mastra asks parallel approvals one at a time
        edits_args=False,  # Mastra's approval takes no arguments
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
        self,
        agent_id: str,
        prompt: str,
        thread_id: str | None,
        resource_id: str | None,
        started_by: str | None = None,
    ) -> RunEntry:
        raise NotApplied("Mastra runs are started by Mastra, not here")

    def check_resume_data(self, entry: RunEntry, call: ToolCall, data: Any) -> None:
        return None  # Mastra checks resume data against its own schemas

    def check_edited_args(self, entry: RunEntry, call: ToolCall, args: Any) -> None:
        raise ArgsRejected("a Mastra approval takes no arguments")

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
            await self._put_back(seen, exc)
            raise
        except OutcomeUncertain as exc:
            return await self._in_doubt(claimed, exc)
        moved = await self._moved_within(claimed, _SETTLE_WAIT)
        if moved is None and end.error is not None:  # Mastra said no, and nothing moved
            await self._put_back(seen, NotApplied("Mastra could not apply the decision"))
            raise NotApplied("Mastra could not apply the decision")
        if moved is None:
            return await self._in_doubt(claimed, OutcomeUncertain("the run did not move on"))
        if moved.status is RunStatus.COMPLETED:  # gone: the stream says how it ended
            outcome = Outcome(error=end.error) if end.error else Outcome(output=end.text)
            status = RunStatus.FAILED if end.error else RunStatus.COMPLETED
            moved = claimed.finished(status, outcome, self.claims.clock())
        if not await self.claims.settle(moved):
            log.error("lost the claim of a Mastra run", extra={"runId": claimed.run_id})
        return moved

    async def settle(self, claimed: RunEntry) -> RunEntry | None:
        return await self.storage.follower.moved_on(claimed)

    async def release(self, entry: RunEntry) -> RunEntry:
        current = await self.storage.follower.current_entry(entry.run_id)
        if current is not None:  # suspended: its calls as Mastra holds them now, undecided
            return replace(current, version=entry.version, claim=None).decided_as(entry)
        moved = await self.settle(entry)
        return moved or entry.finished(RunStatus.ENDED, None, self.claims.clock())

    async def cancel(self, claimed: RunEntry, reason: str) -> RunEntry:
        """Decline what the run waits for, one call at a time, until it waits no more.

        Mastra cannot abort a run: a declined call is reported to the model, which may
        answer or call another tool. A suspend() call cannot be declined: nothing is sent
        for it, and the run, CANCELLED here, is never resumed through this server.
        """
        sent = False
        for _ in range(_MAX_DECLINES):
            current = await self.storage.follower.current_entry(claimed.run_id)
            approvals = [c for c in current.tool_calls if c.requires_approval] if current else []
            if current is None or not approvals:
                break
            try:
                await self.client.decide(
                    claimed.agent_id,
                    Action.DECLINE,
                    claimed.run_id,
                    approvals[0].tool_call_id or "",
                    reason=reason,
                )
            except NotApplied as exc:
                if sent:  # earlier declines went through: where the run is, is unknown
                    return await self._in_doubt(claimed, OutcomeUncertain(str(exc)))
                raise
            except OutcomeUncertain as exc:
                return await self._in_doubt(claimed, exc)
            sent = True
            await self._moved_within(current, _SETTLE_WAIT)
        return claimed.finished(RunStatus.CANCELLED, None, self.claims.clock())

    async def _moved_within(self, claimed: RunEntry, seconds: float) -> RunEntry | None:
        """Where the run went, looking again for up to `seconds` (a snapshot write may lag
        the end of the stream by a moment)."""
        deadline = asyncio.get_running_loop().time() + seconds
        while (moved := await self.settle(claimed)) is None:
            if asyncio.get_running_loop().time() >= deadline:
                return None
            await asyncio.sleep(0.05)
        return moved

    async def _in_doubt(self, claimed: RunEntry, failure: OutcomeUncertain) -> RunEntry:
        """The decision may have been applied: settle the run if its snapshot already moved;
        else keep the claim, marked as in doubt, for the follower to settle, and raise."""
        moved = await self.settle(claimed)
        if moved is not None and await self.claims.settle(moved):
            return moved
        await self.storage.runs.claims.mark_outcome_unknown(claimed.run_id, self.claims.instance_id)
        log.warning(
            "a decision's outcome is unknown; the run stays claimed until its snapshot moves",
            extra={"runId": claimed.run_id, "reason": str(failure)},
        )
        raise failure

    async def _put_back(self, seen: RunEntry, failure: NotApplied) -> None:
        log.warning(
            "Mastra did not apply a decision; the run is put back",
            extra={"runId": seen.run_id, "reason": str(failure)},
        )
        if await self.claims.settle(replace(seen, claim=None)):
            # Mastra may have moved the run on although the call failed: look.
            await self.storage.follower.refresh(seen.run_id)
