"""Snapshot documents -> run-index entries: discovery with Mastra's own rules.

`extract_entry` is the one function every writer of the run index uses, so the index can
always be rebuilt from the snapshots. For Mastra's documents it mirrors
`Agent.listSuspendedRuns()` of `@mastra/core` (see docs/design.md, "Snapshot documents"); for
this server's own Python runs it reads the layout that `storage/snapshots/python_runs.py` writes.
It is pure: no I/O, no clock.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from suspended_runs.storage.errors import MalformedSnapshot
from suspended_runs.storage.index.entry import Decision, RunEntry, ToolCall
from suspended_runs.storage.snapshots.fields import json_safe, read_call, read_scope
from suspended_runs.storage.types import (
    MASTRA_RUN_WORKFLOWS,
    PYTHON_RUN_WORKFLOW,
    Document,
    RunStatus,
    Runtime,
    json_kind,
)

_starter_key: str | None = None
"""REVIEW_STARTER_CONTEXT_KEY: a process-wide setting, since every path of the follower,
the reconcile and the reader ends in `extract_entry`."""


def read_starters_from(key: str | None) -> None:
    """Read a Mastra run's starter from its request context's `key` (None: not read)."""
    global _starter_key
    _starter_key = key


def _starter(snapshot: Document, problems: list[str]) -> str | None:
    context = snapshot.get("requestContext")
    if _starter_key is None or not isinstance(context, dict):
        return None
    value = context.get(_starter_key)
    if value is None or isinstance(value, str):
        return value
    problems.append(f"requestContext.{_starter_key}: {json_kind(value)}, not a string")
    return None


def extract_entry(doc: Document) -> RunEntry | None:
    """The index entry of a suspended run, or None when the document is not one.

    Raises MalformedSnapshot for a document that claims to be a run but cannot be read.
    """
    workflow_name = doc.get("workflow_name")
    if workflow_name not in MASTRA_RUN_WORKFLOWS and workflow_name != PYTHON_RUN_WORKFLOW:
        return None
    run_id = doc.get("run_id")
    if not isinstance(run_id, str) or not run_id:
        raise MalformedSnapshot("run_id is missing or not a string")
    snapshot = parse_snapshot(doc.get("snapshot"))
    if snapshot.get("status") != "suspended":
        return None
    if workflow_name == PYTHON_RUN_WORKFLOW:
        return _python_entry(doc, run_id, snapshot)
    return _mastra_entry(doc, run_id, workflow_name, snapshot)


def _mastra_entry(
    doc: Document, run_id: str, workflow_name: str, snapshot: dict[str, Any]
) -> RunEntry | None:
    context = snapshot.get("context")
    if not isinstance(context, dict):
        raise MalformedSnapshot("snapshot.context is not an object")

    steps = [(key, step) for key, step in context.items() if _is_suspended_step(step)]
    agent_id = _agent_id(steps, context)
    if agent_id is None:
        return None  # Mastra lists a run only under the agent that owns it.
    memory_info = _memory_info(steps, context)
    created_at = _as_datetime(doc.get("createdAt"), "createdAt")
    updated_at = _as_datetime(doc.get("updatedAt", doc.get("createdAt")), "updatedAt")
    problems: list[str] = []
    own = read_scope({"resourceId": doc.get("resourceId")}, problems)
    memory = read_scope(memory_info, problems, "memoryInfo.")
    labels = snapshot.get("resumeLabels")
    calls = tuple(_tool_calls(steps, labels if isinstance(labels, dict) else {}, problems))
    return RunEntry(
        run_id=run_id,
        workflow_name=workflow_name,
        runtime=Runtime.MASTRA,
        agent_id=agent_id,
        status=RunStatus.SUSPENDED,
        created_at=created_at,
        suspended_at=updated_at,
        thread_id=memory.thread_id,
        resource_id=own.resource_id or memory.resource_id,
        tool_calls=calls,
        snapshot_id=doc.get("_id"),
        started_by=_starter(snapshot, problems),
        problems=tuple(problems),
    )


def _python_entry(doc: Document, run_id: str, snapshot: Document) -> RunEntry:
    agent_id = snapshot.get("agentId")
    calls = snapshot.get("toolCalls")
    if not isinstance(agent_id, str) or not isinstance(calls, list):
        raise MalformedSnapshot("a Python run snapshot needs agentId and toolCalls")
    problems: list[str] = []
    own = read_scope({"resourceId": doc.get("resourceId")}, problems)
    inner = read_scope(snapshot, problems, "snapshot.")
    return RunEntry(
        run_id=run_id,
        workflow_name=PYTHON_RUN_WORKFLOW,
        runtime=Runtime.PYTHON,
        agent_id=agent_id,
        status=RunStatus.SUSPENDED,
        created_at=_as_datetime(doc.get("createdAt"), "createdAt"),
        suspended_at=_as_datetime(doc.get("updatedAt"), "updatedAt"),
        thread_id=inner.thread_id,
        resource_id=own.resource_id or inner.resource_id,
        tool_calls=tuple(_python_call(call, i, problems) for i, call in enumerate(calls)),
        snapshot_id=doc.get("_id"),
        problems=tuple(problems),
        started_by=started if isinstance(started := snapshot.get("startedBy"), str) else None,
    )


def _python_call(call: Any, index: int, problems: list[str]) -> ToolCall:
    """One call of a Python run; its decision is this server's own record: one it cannot
    read leaves the run out (a decision read as null would let the call be decided twice)."""
    if not isinstance(call, dict):
        raise MalformedSnapshot(f"toolCalls[{index}] is not an object")
    where = f"toolCalls[{index}]."
    fields = read_call(call, where, problems)
    decision = call.get("decision")
    try:
        decided = Decision.from_document(decision) if decision else None
    except (KeyError, ValueError, TypeError, AttributeError) as exc:
        raise MalformedSnapshot(f"{where}decision: {type(exc).__name__}: {exc}") from None
    return ToolCall(
        tool_call_id=fields.tool_call_id,
        tool_name=fields.tool_name,
        requires_approval=call.get("requiresApproval") is True,
        args=json_safe(call.get("args"), f"{where}args", problems),
        suspend_payload=json_safe(call.get("suspendPayload"), f"{where}suspendPayload", problems),
        decision=decided,
    )


def parse_snapshot(raw: Any) -> Document:
    """The snapshot object; older writers stored it as a JSON string."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError as exc:
            raise MalformedSnapshot(f"snapshot is a string that is not JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise MalformedSnapshot(f"snapshot is a {type(raw).__name__}, not an object")
    return raw


def _is_suspended_step(step: Any) -> bool:
    return isinstance(step, dict) and step.get("status") == "suspended"


def _agent_id(steps: list[tuple[str, Document]], context: Document) -> str | None:
    for _, step in steps:
        payload = step.get("suspendPayload")
        if isinstance(payload, dict) and isinstance(payload.get("__agentId"), str):
            return str(payload["__agentId"])
    agent_id = _get(context, "input", "agentId")  # the durable loop keeps it in its input
    return agent_id if isinstance(agent_id, str) and agent_id else None


def _memory_info(steps: list[tuple[str, Document]], context: Document) -> Document:
    info = None
    if steps:
        info = _get(steps[0][1], "suspendPayload", "__streamState", "messageList", "memoryInfo")
    if not isinstance(info, dict):
        info = _get(context, "input", "messageListState", "memoryInfo")
    return info if isinstance(info, dict) else {}


def _tool_calls(
    steps: list[tuple[str, Document]], labels: Document, problems: list[str]
) -> Iterator[ToolCall]:
    for step_id, step in steps:
        payload = step.get("suspendPayload")
        if not isinstance(payload, dict):
            continue
        entries = list(_suspended_foreach_entries(payload))
        if not entries:
            entries = [(None, payload)]
        for index, entry_payload in entries:
            call = _tool_call(entry_payload, step_id, index, labels, problems)
            if call is not None:
                yield call


def _suspended_foreach_entries(payload: Document) -> Iterator[tuple[int | None, Document]]:
    output = _get(payload, "__workflow_meta", "foreachOutput")
    if isinstance(output, dict):  # some writers key the array by index
        items: list[tuple[int | None, Any]] = [
            (int(k) if str(k).isdigit() else None, v)
            for k, v in sorted(output.items(), key=lambda kv: _index_order(kv[0]))
        ]
    elif isinstance(output, list):
        items = list(enumerate(output))
    else:
        return
    for index, entry in items:
        if _is_suspended_step(entry) and isinstance(entry.get("suspendPayload"), dict):
            yield index, entry["suspendPayload"]


def _index_order(key: Any) -> tuple[int, int | str]:
    return (0, int(key)) if str(key).isdigit() else (1, str(key))


def _tool_call(
    payload: Document, step_id: str, index: int | None, labels: Document, problems: list[str]
) -> ToolCall | None:
    where = f"{step_id}{'' if index is None else f'[{index}]'}."
    approval = payload.get("requireToolApproval")
    if isinstance(approval, dict):
        fields = read_call(approval, where, problems)
        return ToolCall(
            tool_call_id=fields.tool_call_id,
            tool_name=fields.tool_name,
            requires_approval=True,
            args=json_safe(approval.get("args"), f"{where}args", problems),
        )
    if payload.get("type") == "approval":
        # The durable loop's approval; Mastra 1.71 reports it without args, a bug fixed later.
        fields = read_call(payload, where, problems)
        return ToolCall(
            tool_call_id=fields.tool_call_id,
            tool_name=fields.tool_name,
            requires_approval=True,
            args=json_safe(payload.get("args"), f"{where}args", problems),
        )
    if any(key in payload for key in ("toolCallSuspended", "toolName", "toolCallId")):
        fields = read_call(payload, where, problems)
        suspended = payload.get("toolCallSuspended")
        return ToolCall(
            tool_call_id=fields.tool_call_id or _label_for(step_id, index, labels),
            tool_name=fields.tool_name,
            requires_approval=False,
            suspend_payload=json_safe(suspended, f"{where}toolCallSuspended", problems),
        )
    return None


def _label_for(step_id: str, index: int | None, labels: Document) -> str | None:
    """The one resume label pointing at this step (and foreach entry, when there are several)."""
    matches = [
        (key, label)
        for key, label in labels.items()
        if isinstance(label, dict) and label.get("stepId") == step_id
    ]
    if len(matches) > 1 and index is not None:
        matches = [(key, label) for key, label in matches if label.get("foreachIndex") == index]
    return matches[0][0] if len(matches) == 1 else None


def _get(value: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _as_datetime(value: Any, name: str) -> datetime:
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            raise MalformedSnapshot(f"{name} is a string that is not an ISO date") from None
    if not isinstance(value, datetime):
        raise MalformedSnapshot(f"{name} is missing or not a date")
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def extraction_projection(prefix: str = "") -> Document:
    """What `extract_entry` reads of a snapshot document, as aggregation expressions over
    the document at `prefix` ("" for a collection's documents, "fullDocument." in a change
    stream), for a `$project` (or a change stream's `$set`).

    A snapshot's big parts are left out: the step graph, the steps' payloads and outputs,
    and the message history each suspension keeps in `__streamState` (only its
    `messageList.memoryInfo` is read). So a 1 MB snapshot travels as the few hundred bytes
    extraction needs. The step keys vary, hence `$objectToArray`/`$map`. A snapshot stored
    as a JSON string goes whole: it is parsed here.
    """
    snapshot = f"${prefix}snapshot"
    context = f"{snapshot}.context"
    fields: Document = {
        name: f"${prefix}{name}"
        for name in ("_id", "workflow_name", "run_id", "resourceId", "createdAt", "updatedAt")
    }
    kept: Document = {
        name: f"{snapshot}.{name}"
        for name in (
            "status",
            "resumeLabels",
            "agentId",
            "toolCalls",
            "threadId",
            "resourceId",
            "startedBy",
            "requestContext",
        )
    }
    steps = {"$arrayToObject": {"$map": {"input": {"$objectToArray": context}, "in": _STEP}}}
    kept["context"] = {"$cond": [_is_object(context), steps, context]}
    fields["snapshot"] = {"$cond": [_is_object(snapshot), kept, snapshot]}
    return fields


SMALL_SNAPSHOT_BYTES = 64 * 1024
"""Up to this size a snapshot document is read whole: reducing it costs the embedded server
more than sending it (docs/benchmarks.md has the measurement)."""


def reading_stage(limit: int = SMALL_SNAPSHOT_BYTES) -> Document:
    """A stage that passes a snapshot document of at most `limit` bytes as it is, and a larger
    one as `extraction_projection` reduces it: either way what `extract_entry` reads, and at
    most about `limit` bytes of it (so a batch of them stays small)."""
    small = {"$lte": [{"$bsonSize": "$$ROOT"}, limit]}
    return {"$replaceRoot": {"newRoot": {"$cond": [small, "$$ROOT", extraction_projection()]}}}


def _is_object(expression: str) -> Document:
    return {"$eq": [{"$type": expression}, "object"]}


_PAYLOAD = "$$this.v.suspendPayload"
_STEP: Document = {
    "k": "$$this.k",
    "v": {
        "status": "$$this.v.status",
        "agentId": "$$this.v.agentId",
        "messageListState": {"memoryInfo": "$$this.v.messageListState.memoryInfo"},
        "suspendPayload": {
            "$cond": [
                _is_object(_PAYLOAD),
                {
                    "$mergeObjects": [
                        {
                            "$arrayToObject": {
                                "$filter": {
                                    "input": {"$objectToArray": _PAYLOAD},
                                    "as": "field",
                                    "cond": {"$ne": ["$$field.k", "__streamState"]},
                                }
                            }
                        },
                        {
                            "__streamState": {
                                "messageList": {
                                    "memoryInfo": f"{_PAYLOAD}.__streamState.messageList.memoryInfo"
                                }
                            }
                        },
                    ]
                },
                _PAYLOAD,
            ]
        },
    },
}
"""One step of `snapshot.context` (as `$objectToArray` gives it, `$$this`), reduced to what
extraction reads: its status, the durable loop's input, and its suspendPayload without the
stream state's history."""
