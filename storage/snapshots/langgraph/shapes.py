"""What a LangGraph interrupt asks, by its shape: the pending calls a run lists.

An interrupt's value is whatever the node passed to `interrupt()`. Four shapes are known
(docs/design.md, "LangGraph threads"):

- LangChain's `HumanInTheLoopMiddleware`, batched (its default): one interrupt per model
  turn, `{action_requests: [{name, args, description}], review_configs: [{action_name,
  allowed_decisions}]}`: a call per action request, joined in order on (name, args) to the
  model's tool calls for their ids (else `<interrupt id>:<i>`);
- the same middleware per call: `{type: "tool_approval", tool_call_id, name, args,
  description}` with a `response_schema` of the decisions it allows;
- Agent Inbox's `HumanInterrupt`, `{action_request: {action, args}, config: {allow_*},
  description}`, often a one-element list;
- anything else, a plain `interrupt(value)`: one suspension waiting for data.

A value that looks like a known shape but cannot be read as one is listed as a plain
suspension with a problem, never dropped.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from suspended_runs.storage.index.entry import ToolCall
from suspended_runs.storage.snapshots.fields import json_safe
from suspended_runs.storage.snapshots.langgraph.decoding import plain
from suspended_runs.storage.types import json_kind

DECISION_TYPES = ("approve", "edit", "reject", "respond")
"""The decisions `HumanInTheLoopMiddleware` knows."""


class Shape(StrEnum):
    HITL = "hitl"
    HITL_PER_CALL = "hitl_per_call"
    AGENT_INBOX = "agent_inbox"
    INTERRUPT = "interrupt"


@dataclass(frozen=True, slots=True)
class Interrupt:
    """One pending interrupt of a thread: its id, what the node asked, and where."""

    id: str
    value: Any
    response_schema: Any = None
    node: str | None = None
    """The node that asked (from its task's path), where known."""


@dataclass(frozen=True, slots=True)
class PendingCall:
    """One call a run lists, and how its decision is sent back: the interrupt it answers,
    its position in it (a batch's action requests, an inbox list), and the shape."""

    interrupt_id: str
    position: int | None
    shape: Shape
    call: ToolCall
    allowed: tuple[str, ...] = ()
    """The decisions the interrupt allows (HITL's decision types, Agent Inbox's allow_*)."""


ModelCall = tuple[str, str, Any]
"""A tool call of the model's last message: (id, name, args)."""


def pending_calls(
    interrupt: Interrupt, model_calls: list[ModelCall], problems: list[str]
) -> list[PendingCall]:
    """The calls `interrupt` asks about; `model_calls` are the tool calls of the thread's
    last AI message (for a batch's ids)."""
    value = interrupt.value
    where = f"interrupt {interrupt.id}: "
    if isinstance(value, dict) and "action_requests" in value:
        batch = list(_batched(interrupt, model_calls, problems))
        if batch:
            return batch
    elif isinstance(value, dict) and value.get("type") == "tool_approval":
        call = _per_call(interrupt, problems)
        if call is not None:
            return [call]
    elif _looks_like_inbox(value):
        inbox = list(_inbox(interrupt, problems))
        if inbox:
            return inbox
    else:
        return [_suspension(interrupt, problems)]
    problems.append(f"{where}a value of a known shape that cannot be read; listed as asked")
    return [_suspension(interrupt, problems)]


def _batched(
    interrupt: Interrupt, model_calls: list[ModelCall], problems: list[str]
) -> Iterator[PendingCall]:
    value = interrupt.value
    requests, configs = value.get("action_requests"), value.get("review_configs")
    if not isinstance(requests, list) or not requests:
        return
    allowed_by_name: dict[str, tuple[str, ...]] = {}
    for config in configs if isinstance(configs, list) else []:
        if isinstance(config, dict) and isinstance(config.get("action_name"), str):
            allowed = _decisions(config.get("allowed_decisions"))
            allowed_by_name.setdefault(config["action_name"], allowed)
    unused = list(model_calls)
    for i, request in enumerate(requests):
        where = f"interrupt {interrupt.id}: action_requests[{i}]"
        if not isinstance(request, dict) or not isinstance(request.get("name"), str):
            problems.append(f"{where}: {json_kind(request)} without a name, left out")
            continue
        name, args = request["name"], plain(request.get("args"))
        call_id = _take(unused, name, args) or f"{interrupt.id}:{i}"
        allowed = allowed_by_name.get(name, DECISION_TYPES)
        payload = {"description": _text(request.get("description")), "allowedDecisions": allowed}
        yield PendingCall(
            interrupt.id,
            i,
            Shape.HITL,
            ToolCall(
                interrupt_id=interrupt.id,
                tool_call_id=call_id,
                tool_name=name,
                requires_approval=True,
                args=json_safe(args, f"{where}.args", problems),
                suspend_payload=json_safe(payload, f"{where}.description", problems),
            ),
            allowed,
        )


def _take(unused: list[ModelCall], name: str, args: Any) -> str | None:
    """The id of the first model call not yet joined with this name and arguments."""
    for i, (call_id, call_name, call_args) in enumerate(unused):
        if call_name == name and call_args == args:
            del unused[i]
            return call_id
    return None


def _per_call(interrupt: Interrupt, problems: list[str]) -> PendingCall | None:
    value = interrupt.value
    if not isinstance(value.get("name"), str):
        return None
    call_id = value.get("tool_call_id")
    allowed = _schema_decisions(interrupt.response_schema)
    payload = {"description": _text(value.get("description")), "allowedDecisions": allowed}
    where = f"interrupt {interrupt.id}"
    return PendingCall(
        interrupt.id,
        None,
        Shape.HITL_PER_CALL,
        ToolCall(
            interrupt_id=interrupt.id,
            tool_call_id=call_id if isinstance(call_id, str) and call_id else interrupt.id,
            tool_name=value["name"],
            requires_approval=True,
            args=json_safe(plain(value.get("args")), f"{where}.args", problems),
            suspend_payload=json_safe(payload, where, problems),
        ),
        allowed,
    )


def _schema_decisions(schema: Any) -> tuple[str, ...]:
    """The decision types a per-call `response_schema` (JSON Schema) allows: a union's
    discriminator mapping, or one plain decision's `type` constant; all when unreadable."""
    if not isinstance(schema, dict):
        return DECISION_TYPES
    mapping = schema.get("discriminator", {})
    mapping = mapping.get("mapping") if isinstance(mapping, dict) else None
    if isinstance(mapping, dict):
        return tuple(d for d in DECISION_TYPES if d in mapping)
    properties = schema.get("properties")
    kind = properties.get("type") if isinstance(properties, dict) else None
    const = kind.get("const") if isinstance(kind, dict) else None
    return (const,) if const in DECISION_TYPES else DECISION_TYPES


def _looks_like_inbox(value: Any) -> bool:
    items = value if isinstance(value, list) else [value]
    return bool(items) and all(isinstance(i, dict) and "action_request" in i for i in items)


_INBOX_FLAGS = ("allow_accept", "allow_edit", "allow_respond", "allow_ignore")


def _inbox(interrupt: Interrupt, problems: list[str]) -> Iterator[PendingCall]:
    items = interrupt.value if isinstance(interrupt.value, list) else [interrupt.value]
    for i, item in enumerate(items):
        request, config = item.get("action_request"), item.get("config")
        if not isinstance(request, dict) or not isinstance(request.get("action"), str):
            return
        config = config if isinstance(config, dict) else {}
        allowed = tuple(flag for flag in _INBOX_FLAGS if config.get(flag) is True)
        where = f"interrupt {interrupt.id}"
        yield PendingCall(
            interrupt.id,
            i if isinstance(interrupt.value, list) else None,
            Shape.AGENT_INBOX,
            ToolCall(
                interrupt_id=interrupt.id,
                tool_call_id=interrupt.id if len(items) == 1 else f"{interrupt.id}:{i}",
                tool_name=request["action"],
                requires_approval="allow_accept" in allowed,
                args=json_safe(plain(request.get("args")), f"{where}.args", problems),
                suspend_payload=json_safe(plain(item), where, problems),
            ),
            allowed,
        )


def _suspension(interrupt: Interrupt, problems: list[str]) -> PendingCall:
    return PendingCall(
        interrupt.id,
        None,
        Shape.INTERRUPT,
        ToolCall(
            interrupt_id=interrupt.id,
            tool_call_id=interrupt.id,
            tool_name=interrupt.node,
            requires_approval=False,
            suspend_payload=json_safe(
                plain(interrupt.value), f"interrupt {interrupt.id}", problems
            ),
        ),
    )


def _decisions(raw: Any) -> tuple[str, ...]:
    if not isinstance(raw, list):
        return DECISION_TYPES
    return tuple(d for d in DECISION_TYPES if d in raw)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None
