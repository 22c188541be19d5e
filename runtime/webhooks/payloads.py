"""What a webhook is sent: Standard Webhooks' `{type, timestamp, data}`, or a Slack
incoming webhook's Block Kit message.

The run is as the event captured it, in `AgentRun`'s field names; an argument larger
than `WEBHOOK_MAX_ARGS_BYTES` is replaced by `{"truncated": true, "bytes": N}`, so that
one tool call's data never makes a delivery too large to accept.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from suspended_runs.storage import Document

_SLACK_ARGS_CHARACTERS = 500
_SLACK_SECTION_CHARACTERS = 3000


@dataclass(frozen=True, slots=True)
class PayloadRules:
    public_url: str | None
    max_args_bytes: int

    def inbox_url(self, run_id: str) -> str | None:
        return f"{self.public_url.rstrip('/')}/runs/{run_id}" if self.public_url else None


def run_json(run: Document, max_args_bytes: int) -> dict[str, Any]:
    """A captured run-index entry as the API shows a run."""
    outcome = run.get("outcome") or {}
    return {
        "runId": run.get("runId"),
        "agentId": run.get("agentId"),
        "runtime": str(run.get("runtime", "")).upper() or None,
        "status": run.get("status"),
        "threadId": run.get("threadId"),
        "resourceId": run.get("resourceId"),
        "createdAt": _iso(run.get("createdAt")),
        "suspendedAt": _iso(run.get("suspendedAt")),
        "decidedAt": _iso(run.get("decidedAt")),
        "decidedBy": run.get("decidedBy"),
        "output": outcome.get("output"),
        "error": outcome.get("error"),
        "toolCalls": [_call(c, max_args_bytes) for c in run.get("toolCalls") or ()],
    }


def standard_body(
    event: str, at: datetime, run: Document, tool_call_id: str | None, rules: PayloadRules
) -> str:
    data: dict[str, Any] = {
        "run": run_json(run, rules.max_args_bytes),
        "inboxUrl": rules.inbox_url(str(run.get("runId"))),
    }
    if tool_call_id is not None:
        data["toolCallId"] = tool_call_id
    return _dumps({"type": event, "timestamp": _iso(at), "data": data})


def slack_body(
    event: str,
    at: datetime,
    run: Document,
    tool_call_id: str | None,
    now: datetime,
    rules: PayloadRules,
) -> str:
    """A message for a Slack incoming webhook: what waits, for how long, and a button."""
    shown = run_json(run, rules.max_args_bytes)
    calls = [
        c for c in shown["toolCalls"] if tool_call_id is None or c["toolCallId"] == tool_call_id
    ]
    pending = [c for c in calls if c.get("decision") is None] or calls
    agent, run_id = _escaped(shown["agentId"]), _escaped(shown["runId"])
    lines = [f"*{_title(event)}*: agent `{agent}`, run `{run_id}`"]
    for call in pending[:5]:
        lines.append(f"• `{_escaped(call.get('toolName'))}`: {_escaped(_summary(call))}")
    suspended = run.get("suspendedAt")
    if isinstance(suspended, datetime):
        lines.append(f"Waiting for {_duration(now - suspended)}")
    text = "\n".join(lines)
    if len(text) > _SLACK_SECTION_CHARACTERS:  # Slack refuses a longer section
        text = text[: _SLACK_SECTION_CHARACTERS - 1] + "…"
    blocks: list[dict[str, Any]] = [{"type": "section", "text": {"type": "mrkdwn", "text": text}}]
    inbox = rules.inbox_url(str(run.get("runId")))
    if inbox:
        button = {"type": "button", "text": {"type": "plain_text", "text": "Open in the inbox"}}
        blocks.append({"type": "actions", "elements": [button | {"url": inbox}]})
    return _dumps({"text": lines[0], "blocks": blocks})


def _call(call: Document, max_args_bytes: int) -> dict[str, Any]:
    decision = call.get("decision")
    return {
        "toolCallId": call.get("toolCallId"),
        "toolName": call.get("toolName"),
        "args": _bounded(call.get("args"), max_args_bytes),
        "requiresApproval": bool(call.get("requiresApproval")),
        "suspendPayload": _bounded(call.get("suspendPayload"), max_args_bytes),
        "decision": None
        if not decision
        else {
            "action": str(decision.get("action", "")).upper(),
            "decidedBy": decision.get("by"),
            "decidedAt": _iso(decision.get("at")),
            "reason": decision.get("reason"),
        },
    }


def _bounded(value: Any, max_bytes: int) -> Any:
    size = len(_dumps(value).encode())
    return {"truncated": True, "bytes": size} if size > max_bytes else value


def _summary(call: dict[str, Any]) -> str:
    payload = call.get("suspendPayload")
    question = payload.get("question") if isinstance(payload, dict) else None
    text = question if isinstance(question, str) else _dumps(call.get("args"))
    if len(text) > _SLACK_ARGS_CHARACTERS:
        text = text[:_SLACK_ARGS_CHARACTERS] + f"… ({len(text)} characters)"
    return text


def _title(event: str) -> str:
    return {
        "run.suspended": "Waiting for a person",
        "toolcall.decided": "Decided",
        "run.settled": "Settled",
        "run.stalled": "Stalled",
        "approval.expiring": "Approval expiring",
        "approval.expired": "Approval expired",
        "approval.escalated": "Approval escalated",
    }.get(event, event)


def _duration(waited: Any) -> str:
    seconds = max(int(waited.total_seconds()), 0)
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h"


def _iso(value: Any) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if isinstance(value, datetime) else None


def _escaped(value: object) -> str:
    """Text as Slack's mrkdwn shows it literally: an agent's arguments make no link or
    mention (`<https://...|click>`, `<!channel>`)."""
    return str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
