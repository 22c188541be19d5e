"""A run's conversation, as its snapshot keeps it: why the agent asks.

Mastra keeps the messages of the run's turn in the suspended step's
`suspendPayload.__streamState.messageList` (its `systemMessages`, then `messages`, each
a message of Mastra's format 2: `content.parts` of `text` and `tool-invocation`); this
server keeps a Python run's pydantic-ai history in its snapshot's `messages`. Both are
read into one shape. A part that cannot be read is left out, never an error: the
conversation is shown as far as it can be.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pymongo.asynchronous.collection import AsyncCollection

from suspended_runs.storage.errors import MalformedSnapshot
from suspended_runs.storage.index.entry import RunEntry
from suspended_runs.storage.snapshots.extraction import parse_snapshot
from suspended_runs.storage.types import PYTHON_RUN_WORKFLOW, Document, Runtime


class MessageRole(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"
    SYSTEM = "system"


@dataclass(frozen=True, slots=True)
class MessageToolCall:
    tool_name: str | None
    args: Any


@dataclass(frozen=True, slots=True)
class RunMessage:
    role: MessageRole
    text: str | None
    tool_calls: tuple[MessageToolCall, ...] = ()


async def read_messages(
    snapshots: AsyncCollection[Document], entry: RunEntry, last: int
) -> list[RunMessage]:
    """The last `last` messages of the run's snapshot (none when it has none: a finished
    run's snapshot is gone), oldest first."""
    if entry.snapshot_id is not None:
        query: Document = {"_id": entry.snapshot_id}
    elif entry.runtime is Runtime.PYTHON:
        query = {"workflow_name": PYTHON_RUN_WORKFLOW, "run_id": entry.run_id}
    else:
        return []
    doc = await snapshots.find_one(query, {"snapshot": 1})
    try:
        snapshot = parse_snapshot((doc or {}).get("snapshot"))
    except MalformedSnapshot:
        return []
    if entry.runtime is Runtime.PYTHON:
        found = list(_python_messages(snapshot.get("messages")))
    else:
        found = list(_mastra_messages(snapshot))
    return found[-last:] if last > 0 else []


# -- Mastra --------------------------------------------------------------------------------


def _mastra_messages(snapshot: Document) -> Iterator[RunMessage]:
    message_list = _message_list(snapshot)
    if message_list is None:
        return
    for system in _list(message_list.get("systemMessages")):
        if isinstance(system, dict):
            yield RunMessage(MessageRole.SYSTEM, _text_of(system.get("content")))
    for message in _list(message_list.get("messages")):
        if isinstance(message, dict):
            yield from _mastra_message(message)


def _message_list(snapshot: Document) -> Document | None:
    """The message list of the suspended step (the first step that holds one)."""
    context = snapshot.get("context")
    if not isinstance(context, dict):
        return None
    for step in context.values():
        payload = step.get("suspendPayload") if isinstance(step, dict) else None
        state = payload.get("__streamState") if isinstance(payload, dict) else None
        found = state.get("messageList") if isinstance(state, dict) else None
        if isinstance(found, dict):
            return found
    return None


def _mastra_message(message: Document) -> Iterator[RunMessage]:
    role = _role(message.get("role"))
    content = message.get("content")
    parts = _list(content.get("parts")) if isinstance(content, dict) else []
    texts = [p["text"] for p in parts if _kind(p) == "text" and isinstance(p.get("text"), str)]
    calls, results = [], []
    for part in parts:
        invocation = part.get("toolInvocation") if _kind(part) == "tool-invocation" else None
        if not isinstance(invocation, dict):
            continue
        calls.append(MessageToolCall(_str(invocation.get("toolName")), invocation.get("args")))
        if invocation.get("state") == "result":
            results.append(RunMessage(MessageRole.TOOL, _json_text(invocation.get("result"))))
    if not parts:
        texts = [text] if (text := _text_of(content)) else []
    yield RunMessage(role, "\n".join(texts) if texts else None, tuple(calls))
    yield from results


# -- pydantic-ai ---------------------------------------------------------------------------

_REQUEST_ROLES = {
    "system-prompt": MessageRole.SYSTEM,
    "user-prompt": MessageRole.USER,
    "tool-return": MessageRole.TOOL,
    "retry-prompt": MessageRole.TOOL,
}


def _python_messages(history: Any) -> Iterator[RunMessage]:
    for message in _list(history):
        if not isinstance(message, dict):
            continue
        parts = [p for p in _list(message.get("parts")) if isinstance(p, dict)]
        if message.get("kind") == "request":
            for part in parts:
                role = _REQUEST_ROLES.get(str(part.get("part_kind")))
                if role is not None:
                    yield RunMessage(role, _text_of(part.get("content")))
        elif message.get("kind") == "response":
            texts = [p["content"] for p in parts if p.get("part_kind") == "text"]
            calls = [
                MessageToolCall(_str(p.get("tool_name")), _args(p.get("args")))
                for p in parts
                if p.get("part_kind") == "tool-call"
            ]
            text = "\n".join(t for t in texts if isinstance(t, str)) or None
            yield RunMessage(MessageRole.ASSISTANT, text, tuple(calls))


def _args(value: Any) -> Any:
    """pydantic-ai keeps a call's arguments as a JSON string or as an object."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


# -- shared --------------------------------------------------------------------------------


def _role(value: Any) -> MessageRole:
    try:
        return MessageRole(value)
    except ValueError:
        return MessageRole.ASSISTANT


def _kind(part: Any) -> Any:
    return part.get("type") if isinstance(part, dict) else None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _text_of(content: Any) -> str | None:
    """Text from a content that is a string, a list of strings, or `{content: str}`."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [item for item in content if isinstance(item, str)]
        return "\n".join(texts) if texts else None
    if isinstance(content, dict):
        return _str(content.get("content"))
    return None if content is None else _json_text(content)


def _json_text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, default=str)
