"""LangGraph threads' runs: listed from the saver's documents by the follower, continued
here through the user's own graph (LANGGRAPH_GRAPHS), under this server's claim.

LangGraph has no guard against two resumes of one interrupt (both run), a resume of a
thread no longer interrupted does nothing, and a malformed answer is stored for good: so
a decision reaches a thread only here, once, checked first, and strictly (LangGraph
refuses, before writing, an answer to an interrupt no longer pending). Where it came to
rest is read from the documents, as a Mastra run's is from its snapshot: asked again
(SUSPENDED), finished (COMPLETED), failed (FAILED).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable
from dataclasses import replace
from datetime import timedelta
from functools import partial
from typing import Any

from pydantic import BaseModel, ValidationError

from suspended_runs.runtime import langgraph_answers as answers
from suspended_runs.runtime.claims import ClaimKeeper
from suspended_runs.runtime.errors import (
    ArgsRejected,
    NotApplied,
    OutcomeUncertain,
    ResumeDataRejected,
)
from suspended_runs.runtime.langgraph_graphs import LangGraphGraphs
from suspended_runs.runtime.protocol import Capabilities, Continuation
from suspended_runs.storage import (
    LANGGRAPH_RUN_WORKFLOW,
    Action,
    LangGraphSource,
    Outcome,
    RunEntry,
    RunStatus,
    Runtime,
    Storage,
    ToolCall,
    database_fault,
    deadlines,
)
from suspended_runs.storage.follower.thread_reads import Hint, ThreadLook
from suspended_runs.storage.snapshots.fields import json_safe
from suspended_runs.storage.snapshots.langgraph.shapes import PendingCall, Shape
from suspended_runs.storage.snapshots.langgraph.threads import (
    checkpoint_id_at,
    checkpoint_time,
    thread_agent,
)

log = logging.getLogger(__name__)

Written = frozenset[tuple[Any, Any, Any]]
"""A checkpoint's writes as (id, channel, control value): what tells whether a resume wrote."""


class LangGraphRuntime:
    kind = Runtime.LANGGRAPH
    capabilities = Capabilities(starts_runs=True, continues_each_decision=False, edits_args=True)

    def __init__(self, graphs: LangGraphGraphs, storage: Storage, claims: ClaimKeeper) -> None:
        self.graphs = graphs
        self.storage = storage
        self.claims = claims

    @property
    def source(self) -> LangGraphSource:
        assert self.storage.langgraph is not None, "LANGGRAPH_GRAPHS without LANGGRAPH_DB"
        return self.storage.langgraph

    def serves(self, agent_id: str) -> bool:
        return agent_id in self.graphs and self.storage.langgraph is not None

    def agent_ids(self) -> Iterable[str]:
        return self.graphs.graphs.keys()

    def suspension_mismatch(self, call: ToolCall, action: Action) -> str | None:
        return answers.refusal(call, action)

    def edits(self, call: ToolCall) -> bool:
        return answers.edits(call)

    def continues_now(self, decided: RunEntry, tool_call_id: str) -> bool:
        """Once every call of the decided call's interrupt is decided (a batch is answered
        whole; another interrupt's calls are answered by their own decisions)."""
        call = next(c for c in decided.tool_calls if c.tool_call_id == tool_call_id)
        group = [c for c in decided.tool_calls if c.interrupt_id == call.interrupt_id]
        return all(c.decision is not None for c in group)

    def check_resume_data(self, entry: RunEntry, call: ToolCall, data: Any) -> None:
        payload = call.suspend_payload if isinstance(call.suspend_payload, dict) else {}
        if "allowedDecisions" in payload and not isinstance(data, str):
            raise ResumeDataRejected("a HITL answer (respond) is the message text: a string")

    def check_edited_args(self, entry: RunEntry, call: ToolCall, args: Any) -> None:
        if not isinstance(args, dict):
            raise ArgsRejected(f"{call.tool_name} takes its arguments as a JSON object")
        tool = self.graphs.tool(entry.agent_id, call.tool_name)
        schema = getattr(tool, "tool_call_schema", None)
        if isinstance(schema, type) and issubclass(schema, BaseModel):
            try:
                schema.model_validate(args)
            except ValidationError as exc:
                problems = "; ".join(
                    f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}"
                    for e in exc.errors()
                )
                raise ArgsRejected(
                    f"the arguments do not fit {call.tool_name}: {problems}"
                ) from None

    async def record_decision(self, decided: RunEntry) -> None:
        return None  # the thread learns of a decision only when its interrupt is answered

    async def start(
        self,
        agent_id: str,
        prompt: str,
        thread_id: str | None,
        resource_id: str | None,
        started_by: str | None = None,
    ) -> RunEntry:
        """Invoke a graph whose input is a message list; its run where it came to rest."""
        if not self.graphs.takes_messages(agent_id):
            raise NotApplied(f"the graph of {agent_id!r} takes no message list: start it yourself")
        thread = thread_id or f"thread-{uuid.uuid4().hex}"
        reading = self.source.reader.reading
        metadata: dict[str, Any] = {"agent_id": agent_id, reading.resource_key: resource_id}
        if reading.starter_key and started_by:
            metadata[reading.starter_key] = started_by
        started = partial(self.graphs.start, agent_id, prompt, thread, metadata)
        # Not "": the embedded server finds nothing in a descending index's range bounded
        # by a prefix of its keys; every checkpoint of this run is made after this one.
        since = checkpoint_id_at(self.claims.clock() - timedelta(seconds=1))
        try:
            result, error = await deadlines.handed_on(self.graphs.run(started)), None
        except Exception as exc:  # the graph, or a tool, failed
            log.warning("a LangGraph run failed", exc_info=exc, extra={"agentId": agent_id})
            result, error = None, _describe(exc)
        entry = await self._started(thread, since, result, error)
        await self.storage.runs.claims.put_started(entry)
        return entry

    async def continue_run(self, continuation: Continuation) -> RunEntry:
        """Answer the claimed call's interrupt (with every decision of its calls) once, and
        settle the run where its thread came to rest."""
        claimed, seen = continuation.claimed, continuation.seen
        call = next(c for c in claimed.tool_calls if c.tool_call_id == continuation.tool_call_id)
        at = await self.source.reader.checkpoint_id_of(claimed.snapshot_id)
        look = await self.source.reader.look(at[0], Hint(at[1], seen=False)) if at else None
        group = [c for c in claimed.tool_calls if c.interrupt_id == call.interrupt_id]
        pending = _pending(look, claimed)
        if at is None or any(c.tool_call_id not in pending for c in group):
            await self._put_back(seen, "its thread no longer waits on this call")
            raise NotApplied("the thread no longer waits on this call: it moved on elsewhere")
        thread, checkpoint = at
        parts = [pending[c.tool_call_id or ""] for c in group]
        value = answers.interrupt_answer(
            (c, part.position, _as_list(part)) for c, part in zip(group, parts, strict=True)
        )
        before = await self._written(thread, checkpoint)
        answered = {call.interrupt_id or "": value}
        resume = partial(self.graphs.resume, claimed.agent_id, thread, answered)
        try:
            async with self.claims.kept(claimed.run_id):
                result = await deadlines.handed_on(self.graphs.run(resume))
        except Exception as exc:
            return await self._after_failure(claimed, seen, at, before, exc)
        return await self._settled(await self._rest(claimed, at, result))

    async def settle(self, claimed: RunEntry) -> RunEntry | None:
        return await self.source.settlement.moved_on(claimed)

    async def release(self, entry: RunEntry) -> RunEntry:
        """The run as its thread holds it now: its calls undecided, to be decided again."""
        at = await self.source.reader.checkpoint_id_of(entry.snapshot_id)
        look = await self.source.reader.look(at[0], Hint(at[1], seen=False)) if at else None
        if look is not None and look.run is not None and look.run.entry.run_id == entry.run_id:
            return replace(look.run.entry, version=entry.version, claim=None).decided_as(entry)
        moved = await self.settle(entry)
        return moved or entry.finished(RunStatus.ENDED, None, self.claims.clock())

    async def cancel(self, claimed: RunEntry, reason: str) -> RunEntry:
        """CANCELLED here; nothing is sent to the thread: an interrupted thread runs nothing
        until answered, and its own process may still answer it (docs/langgraph.md)."""
        return claimed.finished(RunStatus.CANCELLED, None, self.claims.clock())

    async def _started(self, thread: str, since: str, result: Any, error: str | None) -> RunEntry:
        reader = self.source.reader
        latest = await reader.latest(thread, since)
        look = await reader.look(thread, Hint(latest, seen=False)) if latest else None
        if look is None or latest is None:
            raise NotApplied(
                f"the graph wrote no checkpoint of thread {thread}{f' ({error})' if error else ''}"
            )
        if look.run is not None:
            return look.run.entry
        doc = await reader.checkpoints.find_one({"thread_id": thread, "checkpoint_id": latest})
        start = await reader.input_checkpoint(doc or {})
        entry = RunEntry(
            run_id=f"lg:{thread}:{start or latest}",
            workflow_name=LANGGRAPH_RUN_WORKFLOW,
            runtime=Runtime.LANGGRAPH,
            agent_id=thread_agent(doc or {}, self.source.reader.reading),
            status=RunStatus.RUNNING,
            created_at=checkpoint_time(start or latest) or self.claims.clock(),
            suspended_at=None,
            thread_id=thread,
            snapshot_id=(doc or {}).get("_id"),
        )
        status = RunStatus.FAILED if error else RunStatus.COMPLETED
        outcome = Outcome(error=error) if error else Outcome(output=_output(result))
        return entry.finished(status, outcome, self.claims.clock())

    async def _rest(self, claimed: RunEntry, at: tuple[str, str], result: Any) -> RunEntry:
        """Where the run rests after a resume that returned: asked again, or finished."""
        thread, checkpoint = at
        latest = await self.source.reader.latest(thread, checkpoint) or checkpoint
        look = await self.source.reader.look(thread, Hint(latest, seen=False))
        if look.run is not None and look.run.entry.run_id == claimed.run_id:
            return replace(look.run.entry, version=claimed.version, claim=None).decided_as(claimed)
        now = self.claims.clock()
        finished = claimed.finished(RunStatus.COMPLETED, Outcome(output=_output(result)), now)
        return replace(finished, snapshot_id=look.key or claimed.snapshot_id)

    async def _after_failure(
        self,
        claimed: RunEntry,
        seen: RunEntry,
        at: tuple[str, str],
        before: Written,
        exc: Exception,
    ) -> RunEntry:
        """A resume that raised: refused as not pending (the thread moved on: put back,
        nothing ran), lost with the database (outcome unknown: a tool may have run), or
        refused or failed by the graph (FAILED, never offered again)."""
        thread, checkpoint = at
        latest = await self.source.reader.latest(thread, checkpoint)
        wrote = latest != checkpoint or await self._written(thread, checkpoint) != before
        if not wrote and type(exc).__name__ == "UnknownInterruptError":  # before anything ran
            await self._put_back(seen, _describe(exc))
            raise NotApplied("the thread no longer waits on this interrupt: it moved on")
        if database_fault(exc):
            await self.storage.runs.claims.mark_outcome_unknown(
                claimed.run_id, self.claims.instance_id
            )
            raise OutcomeUncertain(f"the resume's database failed ({type(exc).__name__})")
        rest = await self._rest(claimed, at, None)
        if not wrote or rest.status is RunStatus.COMPLETED:  # refused, or wrote then raised
            rest = claimed.finished(
                RunStatus.FAILED, Outcome(error=_describe(exc)), self.claims.clock()
            )
        return await self._settled(rest)

    async def _settled(self, after: RunEntry) -> RunEntry:
        if not await self.claims.settle(after):
            log.error("lost the claim of a LangGraph run", extra={"runId": after.run_id})
        return after

    async def _written(self, thread: str, checkpoint: str) -> Written:
        writes = await self.source.reader.checkpoint_writes(thread, checkpoint)
        return frozenset((w.get("_id"), w.get("channel"), w.get("value")) for w in writes)

    async def _put_back(self, seen: RunEntry, why: str) -> None:
        log.warning(
            "a LangGraph decision was not applied; the run is put back",
            extra={"runId": seen.run_id, "reason": why},
        )
        await self.claims.settle(replace(seen, claim=None))


def _pending(look: ThreadLook | None, claimed: RunEntry) -> dict[str, PendingCall]:
    """The calls the thread waits on now, by id, where it waits in the claimed run."""
    if look is None or look.run is None or look.run.entry.run_id != claimed.run_id:
        return {}
    return {
        p.call.tool_call_id or "": p
        for p in look.run.calls
        if look.run.entry.status is RunStatus.SUSPENDED
    }


def _as_list(pending: PendingCall) -> bool:
    """Whether the interrupt asks for a list (a batch's decisions, an inbox list)."""
    return pending.shape is Shape.HITL or (
        pending.shape is Shape.AGENT_INBOX and pending.position is not None
    )


def _output(result: Any) -> Any:
    """A finished run's output: its last message's text (a `create_agent` graph's), else
    its state as JSON can carry it."""
    messages = result.get("messages") if isinstance(result, dict) else None
    if isinstance(messages, list) and messages:
        content = getattr(messages[-1], "content", None)
        if isinstance(content, str):
            return content
    state = (
        {k: v for k, v in result.items() if not k.startswith("__")}
        if isinstance(result, dict)
        else result
    )
    return json_safe(state, "output", [])


def _describe(exc: BaseException) -> str:
    """What a failed run shows: the exception's type and, for LangGraph's own refusals, its
    message (a tool's message may carry content: the log line has it)."""
    name = type(exc).__name__
    mine = type(exc).__module__.startswith(("langgraph", "langchain", "pydantic"))
    return (
        f"{name}: {str(exc)[:300]}"
        if mine
        else f"{name} in the graph or one of its tools (see the server log)"
    )
