"""`RunMessage`: a run's conversation as a reviewer reads it (`AgentRun.messages`)."""

from __future__ import annotations

import strawberry
from strawberry.scalars import JSON

from suspended_runs.storage.snapshots.messages import MessageRole
from suspended_runs.storage.snapshots.messages import RunMessage as StoredMessage

strawberry.enum(MessageRole, name="MessageRole", description="Who said a message.")


@strawberry.type(description="A tool call the model made in a message.")
class RunMessageToolCall:
    tool_name: str | None
    args: JSON | None


@strawberry.type(
    description="One message of the run's conversation, as its snapshot keeps it (Mastra's "
    "message list; a Python run's pydantic-ai history)."
)
class RunMessage:
    role: MessageRole
    text: str | None
    tool_calls: list[RunMessageToolCall]

    @classmethod
    def from_stored(cls, message: StoredMessage) -> RunMessage:
        return cls(
            role=message.role,
            text=message.text,
            tool_calls=[
                RunMessageToolCall(tool_name=c.tool_name, args=c.args) for c in message.tool_calls
            ],
        )
