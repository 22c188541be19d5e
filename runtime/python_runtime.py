"""Runs of this server's own Python agents: start them, and continue them after decisions.

A run that suspends is written as a snapshot (with pydantic-ai's message history) and an
index entry, snapshot first: the snapshot is the source of truth, and a lost entry is
rebuilt from it. A decided run is continued by whoever holds its claim, with
`DeferredToolResults`; the claim's lease is renewed while the agent works, so a run whose
process dies shows as STALLED instead of being run twice.
"""

from __future__ import annotations

import asyncio
import logging
import typing
import uuid
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from pydantic import TypeAdapter, ValidationError
from pydantic_ai import DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied
from pydantic_ai.messages import ModelMessagesTypeAdapter, ModelResponse, ToolCallPart
from pydantic_ai.run import AgentRunResult

from suspended_runs.runtime.agents import AgentMap
from suspended_runs.runtime.background import Background
from suspended_runs.runtime.claims import ClaimKeeper
from suspended_runs.runtime.errors import (
    ArgsRejected,
    OutcomeUncertain,
    ResumeDataRejected,
    SnapshotMissing,
)
from suspended_runs.runtime.protocol import ApprovalsOrData, Capabilities, Continuation
from suspended_runs.storage import (
    PYTHON_RUN_WORKFLOW,
    Action,
    Outcome,
    RunEntry,
    RunStatus,
    Runtime,
    Storage,
    ToolCall,
    database_fault,
    deadlines,
)

log = logging.getLogger(__name__)

_RECORD_RETRY = (0.5, 30.0)
"""Seconds before the first retry of recording a result the database refused, and the
longest wait between retries."""

Messages = list[Any]
"""pydantic-ai's message history as JSON data, as a snapshot keeps it."""


class PythonRuntime(ApprovalsOrData):
    kind = Runtime.PYTHON
    capabilities = Capabilities(starts_runs=True, continues_each_decision=False, edits_args=True)

    def __init__(
        self,
        agents: AgentMap,
        storage: Storage,
        claims: ClaimKeeper,
        background: Background | None = None,
    ) -> None:
        self.agents = agents
        self.storage = storage
        self.claims = claims
        self.clock = claims.clock
        self.background = background or Background()
        """Where results the database could not take wait to be recorded."""

    def serves(self, agent_id: str) -> bool:
        return agent_id in self.agents

    def agent_ids(self) -> Iterable[str]:
        return self.agents.keys()

    # -- starting ------------------------------------------------------------------------

    async def start(
        self,
        agent_id: str,
        prompt: str,
        thread_id: str | None,
        resource_id: str | None,
        started_by: str | None = None,
    ) -> RunEntry:
        """Run an agent until it completes or suspends; the run's resting entry."""
        now = self.clock()
        entry = RunEntry(
            run_id=str(uuid.uuid4()),
            workflow_name=PYTHON_RUN_WORKFLOW,
            runtime=Runtime.PYTHON,
            agent_id=agent_id,
            status=RunStatus.RUNNING,
            created_at=now,
            suspended_at=None,
            thread_id=thread_id,
            resource_id=resource_id,
            started_by=started_by,
        )
        try:
            result = await deadlines.handed_on(self.agents[agent_id].run(prompt))
        except Exception as exc:
            log.warning("agent run failed", exc_info=exc, extra={"agentId": agent_id})
            entry = entry.finished(RunStatus.FAILED, Outcome(error=_describe(exc)), self.clock())
            await self.storage.runs.claims.put_started(entry)
            return entry
        entry, messages = self._rest(entry, result)
        if messages is not None:
            entry = await self._put_snapshot(entry, messages)
        await self.storage.runs.claims.put_started(entry)
        return entry

    # -- continuing ----------------------------------------------------------------------

    def check_resume_data(self, entry: RunEntry, call: ToolCall, data: Any) -> None:
        self._resume_value(entry, call, data)

    def check_edited_args(self, entry: RunEntry, call: ToolCall, args: Any) -> None:
        tool = self._tool(entry.agent_id, call.tool_name or "")
        if tool is None or not isinstance(args, dict):
            raise ArgsRejected(f"{call.tool_name} takes its arguments as a JSON object")
        try:
            tool.function_schema.validator.validate_python(args)
        except ValidationError as exc:
            raise ArgsRejected(
                f"the arguments do not fit {call.tool_name}: {_problems(exc)}"
            ) from None

    async def record_decision(self, decided: RunEntry) -> None:
        await self.storage.python_snapshots.record_decisions(decided)

    async def continue_run(self, continuation: Continuation) -> RunEntry:
        """Continue a claimed, fully decided run to its next resting state, and record it.

        A database that fails as the result is recorded (the tools have run) raises
        OutcomeUncertain, and the result is recorded in the background once the
        database takes it: the run settles by itself, as it would have. Its reads before
        the agent works and its writes after it each wait for the database no longer than
        a request would (storage/deadlines.py); the agent's own work is not cut."""
        entry = continuation.claimed
        deadlines.restart()
        stored = await self.storage.python_snapshots.messages(entry.run_id)
        messages: Messages | None = None
        try:
            async with self.claims.kept(entry.run_id):
                after, messages = await deadlines.handed_on(self._continue(entry, stored))
        except Exception as exc:  # the agent, or a tool, failed: the run ends FAILED
            log.warning("continuing a run failed", exc_info=exc, extra={"runId": entry.run_id})
            after = entry.finished(RunStatus.FAILED, Outcome(error=_describe(exc)), self.clock())
        try:
            return await self._record(entry, after, messages)
        except Exception as exc:
            if not database_fault(exc):
                raise
            self.background.spawn(self._record_when_back(entry, after, messages))
            raise OutcomeUncertain(
                "the database failed as the run's result was recorded (its tools have "
                "run); the result is recorded once the database is back"
            ) from exc

    async def _record(
        self, claimed: RunEntry, after: RunEntry, messages: Messages | None
    ) -> RunEntry:
        """Write where a continued run came to rest: every step can be repeated."""
        if messages is not None:
            after = await self._put_snapshot(after, messages)
        if not await self.claims.settle(after) and not await self._settled_as(after):
            log.error("lost the claim of a run while continuing it", extra={"runId": after.run_id})
        if after.status is RunStatus.COMPLETED:
            await self.storage.python_snapshots.delete(claimed.run_id)  # as Mastra does
        elif after.status is RunStatus.FAILED:
            await self.storage.python_snapshots.mark_failed(claimed.run_id)
        return after

    async def _settled_as(self, after: RunEntry) -> bool:
        """Whether the run already rests as `after` says (an earlier attempt wrote it)."""
        current = await self.storage.runs.get(after.run_id)
        return current is not None and current.claim is None and current.status is after.status

    async def _record_when_back(
        self, claimed: RunEntry, after: RunEntry, messages: Messages | None
    ) -> None:
        """Retry `_record` until the database takes it. The claim stays this process's
        meanwhile (STALLED once its lease ends): if this process dies first, the run is
        reported, never run again."""
        wait, longest = _RECORD_RETRY
        while True:
            await asyncio.sleep(wait)
            try:
                await self._record(claimed, after, messages)
            except Exception as exc:
                if not database_fault(exc):
                    raise
                wait = min(wait * 2, longest)
                continue
            log.info(
                "recorded a run's result once the database was back",
                extra={"runId": claimed.run_id, "status": after.status.value},
            )
            return

    async def settle(self, claimed: RunEntry) -> RunEntry | None:
        """None: a Python run moves only through this server, whose continuation settles it
        as it goes; one whose process died stays as it was claimed (STALLED) until an
        operator releases or cancels it."""
        return None

    async def release(self, entry: RunEntry) -> RunEntry:
        undecided = await self.storage.python_snapshots.undecided(entry.run_id)
        if undecided is None:  # its snapshot is gone: nothing can continue it
            return entry.finished(RunStatus.ENDED, None, self.clock())
        return replace(undecided, version=entry.version, claim=None).decided_as(entry)

    async def cancel(self, claimed: RunEntry, reason: str) -> RunEntry:
        # Without its snapshot (the message history) the run cannot be continued by anyone.
        await self.storage.python_snapshots.delete(claimed.run_id)
        return claimed.finished(RunStatus.CANCELLED, None, self.clock())

    def _resume_value(self, entry: RunEntry, call: ToolCall, data: Any) -> Any:
        """`data` as the suspended tool's result, validated against its return type."""
        return_type = self._return_type(entry.agent_id, call.tool_name or "")
        try:
            return TypeAdapter(return_type).validate_python(data)
        except ValidationError as exc:
            raise ResumeDataRejected(
                f"resume data does not fit {call.tool_name}'s result: {_problems(exc)}"
            ) from None

    async def _continue(
        self, entry: RunEntry, stored: Messages | None
    ) -> tuple[RunEntry, Messages | None]:
        if stored is None:
            raise SnapshotMissing("the run's snapshot is gone")
        results = DeferredToolResults()
        for call in entry.tool_calls:
            decision, call_id = call.decision, call.tool_call_id or ""
            # A claimed run has a decision for every call (run_index.apply_decision).
            assert decision is not None, f"tool call {call_id} has no decision"
            if decision.action is Action.APPROVE and decision.edited_args is not None:
                results.approvals[call_id] = ToolApproved(override_args=decision.edited_args)
            elif decision.action is Action.APPROVE:
                results.approvals[call_id] = True
            elif decision.action is Action.DECLINE:
                results.approvals[call_id] = ToolDenied(decision.reason or "Declined.")
            else:
                results.calls[call_id] = self._resume_value(entry, call, decision.resume_data)
        result = await self.agents[entry.agent_id].run(
            message_history=ModelMessagesTypeAdapter.validate_python(stored),
            deferred_tool_results=results,
        )
        return self._rest(entry, result)

    def _rest(
        self, entry: RunEntry, result: AgentRunResult[Any]
    ) -> tuple[RunEntry, Messages | None]:
        """The entry where a run came to rest, and the messages of a run that suspended
        again (its next snapshot), not yet written."""
        output = result.output
        if not isinstance(output, DeferredToolRequests):
            finished = entry.finished(
                RunStatus.COMPLETED, Outcome(output=_plain(output)), self.clock()
            )
            return finished, None
        now = self.clock()
        resting = replace(
            entry,
            status=RunStatus.SUSPENDED,
            suspended_at=now,
            tool_calls=_pending_calls(output, result),
            claim=None,
            outcome=None,
        )
        messages = ModelMessagesTypeAdapter.dump_python(result.all_messages(), mode="json")
        return resting, messages

    async def _put_snapshot(self, resting: RunEntry, messages: Messages) -> RunEntry:
        snapshot_id = await self.storage.python_snapshots.put(resting, messages)
        return replace(resting, snapshot_id=snapshot_id)

    def _return_type(self, agent_id: str, tool_name: str) -> Any:
        function = getattr(self._tool(agent_id, tool_name), "function", None)
        return typing.get_type_hints(function).get("return", Any) if function else Any

    def _tool(self, agent_id: str, tool_name: str) -> Any:
        for toolset in self.agents[agent_id].toolsets:
            tool = getattr(toolset, "tools", {}).get(tool_name)
            if tool is not None:
                return tool
        return None


def _pending_calls(
    requests: DeferredToolRequests, result: AgentRunResult[Any]
) -> tuple[ToolCall, ...]:
    """The step's deferred calls, in the order the model made them."""
    approvals = {part.tool_call_id for part in requests.approvals}
    deferred = {part.tool_call_id: part for part in [*requests.approvals, *requests.calls]}
    order = [
        part.tool_call_id
        for message in result.all_messages()
        if isinstance(message, ModelResponse)
        for part in message.parts
        if isinstance(part, ToolCallPart) and part.tool_call_id in deferred
    ]
    ordered = list(dict.fromkeys(order)) + [i for i in deferred if i not in order]
    return tuple(
        ToolCall(
            tool_call_id=call_id,
            tool_name=deferred[call_id].tool_name,
            requires_approval=call_id in approvals,
            args=deferred[call_id].args_as_dict() if call_id in approvals else None,
            suspend_payload=None if call_id in approvals else requests.metadata.get(call_id),
        )
        for call_id in ordered
    )


def _plain(value: Any) -> Any:
    """An agent's output as JSON data."""
    return TypeAdapter(Any).dump_python(value, mode="json")


def _describe(exc: BaseException) -> str:
    """What a failed run shows: the exception's type, never its text (a model provider's or
    a tool's message may carry content or a credential); the log line, under the run's id
    and the request's, says where it was raised."""
    return f"{type(exc).__name__} in the agent or one of its tools (see the server log)"


def _problems(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}" for e in exc.errors()
    )
