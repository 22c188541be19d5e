"""A LangGraph thread's conversation, as its checkpoint keeps it: LangChain messages in the
`messages` channel (graphs made with `create_agent`, or any with that channel).

Read into the shape every run's conversation has (storage/snapshots/messages.py), and the
tool calls of the last AI message, which a batched approval's calls are joined to for
their ids. A message that cannot be read is left out, never an error.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from suspended_runs.storage.snapshots.langgraph.decoding import Tagged, plain
from suspended_runs.storage.snapshots.langgraph.shapes import ModelCall
from suspended_runs.storage.snapshots.messages import MessageRole, MessageToolCall, RunMessage

_ROLES = {
    "human": MessageRole.USER,
    "user": MessageRole.USER,
    "ai": MessageRole.ASSISTANT,
    "assistant": MessageRole.ASSISTANT,
    "tool": MessageRole.TOOL,
    "system": MessageRole.SYSTEM,
}


def channel_messages(checkpoint: Any) -> list[Any]:
    """The `messages` channel of a decoded checkpoint (none where it has no such channel)."""
    values = checkpoint.get("channel_values") if isinstance(checkpoint, dict) else None
    found = values.get("messages") if isinstance(values, dict) else None
    return found if isinstance(found, list) else []


def conversation(messages: list[Any]) -> Iterator[RunMessage]:
    for message in messages:
        fields = _fields(message)
        if fields is None:
            continue
        role = _ROLES.get(str(fields.get("type") or fields.get("role")))
        if role is None:
            continue
        calls = tuple(MessageToolCall(name, args) for _, name, args in _tool_calls(fields))
        yield RunMessage(role, _text(fields.get("content")), calls)


def last_model_calls(messages: list[Any]) -> list[ModelCall]:
    """The tool calls of the last AI message, in the order the model made them."""
    for message in reversed(messages):
        fields = _fields(message)
        if fields is not None and fields.get("type") in ("ai", "AIMessageChunk"):
            return list(_tool_calls(fields))
    return []


def _fields(message: Any) -> dict[str, Any] | None:
    data = message.data if isinstance(message, Tagged) else message
    return data if isinstance(data, dict) else None


def _tool_calls(fields: dict[str, Any]) -> Iterator[ModelCall]:
    calls = fields.get("tool_calls")
    for call in calls if isinstance(calls, list) else []:
        call = plain(call)
        if isinstance(call, dict) and isinstance(call.get("name"), str):
            call_id = call.get("id")
            yield (call_id if isinstance(call_id, str) else "", call["name"], call.get("args"))


def _text(content: Any) -> str | None:
    """A message's text: a string, or the text blocks of a list of content blocks."""
    if isinstance(content, str):
        return content or None
    if isinstance(content, list):
        texts = [
            block if isinstance(block, str) else block.get("text")
            for block in content
            if isinstance(block, str) or (isinstance(block, dict) and block.get("type") == "text")
        ]
        joined = "\n".join(t for t in texts if isinstance(t, str))
        return joined or None
    return None if content is None else json.dumps(plain(content), default=str)
