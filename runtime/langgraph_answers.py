"""What a decision made here says to a LangGraph interrupt, in the interrupt's own terms.

LangGraph keeps a malformed answer for good (a batch answered with one decision for two
requests fails every later resume of its thread), so each answer is made here from a
decision already checked against what the interrupt allows:

- approve: HITL `{type: approve}` (edited: `{type: edit, edited_action: {name, args}}`);
  Agent Inbox `{type: accept, args: null}` (edited: `{type: edit, args: {action, args}}`);
- decline: HITL `{type: reject, message}`; Agent Inbox `{type: ignore}`, or `response`
  with the reason where only that is allowed;
- resume: HITL `{type: respond, message}`; Agent Inbox `{type: response, args}`; a plain
  `interrupt()` the value itself (which takes no approval or decline).

A batch's answer is `{"decisions": [...]}` in request order, an inbox list's a list; every
interrupt is answered by its id (`{interrupt_id: answer}`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from suspended_runs.storage import Action, Decision, ToolCall

HITL_MODES = ("batched", "per_call")


def allowed(call: ToolCall) -> tuple[str, ...] | None:
    """The decisions `call`'s interrupt allows, as it says them (HITL's decision types,
    Agent Inbox's `allow_*`); None for a plain interrupt, which takes data only."""
    payload = call.suspend_payload if isinstance(call.suspend_payload, dict) else {}
    if isinstance(payload.get("allowedDecisions"), list):
        return tuple(d for d in payload["allowedDecisions"] if isinstance(d, str))
    config = payload.get("config")
    if "action_request" in payload:
        config = config if isinstance(config, dict) else {}
        return tuple(
            flag for flag, on in config.items() if flag.startswith("allow_") and on is True
        )
    return None


def refusal(call: ToolCall, action: Action, edited: bool = False) -> str | None:
    """Why `call` cannot take `action` (WrongSuspensionKind), or None."""
    may = allowed(call)
    name = call.tool_call_id
    if may is None:
        return None if action is Action.RESUME else f"{name} waits for data: resume it"
    wanted = {
        Action.APPROVE: ("approve", "allow_accept"),
        Action.DECLINE: ("reject", "allow_ignore", "allow_respond"),
        Action.RESUME: ("respond", "allow_respond"),
    }[action]
    if not set(wanted) & set(may):
        return f"{name}'s interrupt allows {', '.join(may) or 'nothing'}, not {action.value}"
    return None


def edits(call: ToolCall) -> bool:
    may = allowed(call) or ()
    return "edit" in may or "allow_edit" in may


def answer(call: ToolCall, decision: Decision) -> Any:
    """The answer to `call`'s part of its interrupt."""
    may = allowed(call)
    if may is None:
        return decision.resume_data
    if "allowedDecisions" in (call.suspend_payload or {}):
        return _hitl(call, decision)
    return _inbox(call, decision, may)


def _hitl(call: ToolCall, decision: Decision) -> dict[str, Any]:
    if decision.action is Action.APPROVE and decision.edited_args is not None:
        return {
            "type": "edit",
            "edited_action": {"name": call.tool_name, "args": decision.edited_args},
        }
    if decision.action is Action.APPROVE:
        return {"type": "approve"}
    if decision.action is Action.DECLINE:
        return {"type": "reject"} | ({"message": decision.reason} if decision.reason else {})
    return {"type": "respond", "message": decision.resume_data}


def _inbox(call: ToolCall, decision: Decision, may: tuple[str, ...]) -> dict[str, Any]:
    if decision.action is Action.APPROVE and decision.edited_args is not None:
        return {"type": "edit", "args": {"action": call.tool_name, "args": decision.edited_args}}
    if decision.action is Action.APPROVE:
        return {"type": "accept", "args": None}
    if decision.action is Action.DECLINE and "allow_ignore" in may:
        return {"type": "ignore", "args": None}
    data = decision.reason if decision.action is Action.DECLINE else decision.resume_data
    return {"type": "response", "args": data}


def interrupt_answer(calls: Iterable[tuple[ToolCall, int | None, bool]]) -> Any:
    """One interrupt's answer from its decided calls, each with its position and whether
    the interrupt asks for a list (a batch, an inbox list): `{"decisions": [...]}` for a
    batch, a list for an inbox list, else the one call's answer."""
    parts = sorted(calls, key=lambda part: part[1] or 0)
    answers = [answer(call, call.decision) for call, _, _ in parts if call.decision]
    listed = any(as_list for _, _, as_list in parts)
    if not listed:
        return answers[0]
    first = parts[0][0]
    return (
        {"decisions": answers} if "allowedDecisions" in (first.suspend_payload or {}) else answers
    )
