"""Demo agents that run offline: pydantic-ai's FunctionModel plays the model, no API key.

- `file-cleaner`: its `delete_file` tool needs approval (it only pretends to delete).
- `city-asker`: its `ask_city` tool suspends with the question; the resume data, checked
  against `City`, is the tool's result.
- `trip-planner`: calls both tools in one step, so a run waits on two decisions.

Every executed tool body is appended to `EXECUTIONS`, so tests can count executions.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic_ai import Agent, CallDeferred, DeferredToolRequests
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

EXECUTIONS: list[tuple[str, dict[str, Any]]] = []


class City(BaseModel):
    name: str


def first_prompt(messages: list[ModelMessage]) -> str:
    """The first thing the user said in `messages` (a scripted model answers it)."""
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                    return part.content
    return ""


def _path(prompt: str) -> str:
    return next((word for word in prompt.split() if word.startswith("/")), "/tmp/demo.txt")


def _scripted(*calls: str) -> FunctionModel:
    """Calls the named tools on the first turn; then reports what each tool returned."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        returns = [p for p in getattr(last, "parts", []) if isinstance(p, ToolReturnPart)]
        if returns:
            text = "; ".join(f"{p.tool_name}: {p.model_response_str()}" for p in returns)
            return ModelResponse(parts=[TextPart(text)])
        prompt = first_prompt(messages)
        args = {"delete_file": {"path": _path(prompt)}, "ask_city": {"question": prompt}}
        return ModelResponse(parts=[ToolCallPart(name, args[name]) for name in calls])

    return FunctionModel(respond)


def _agent(*tools: str) -> Agent[None, str | DeferredToolRequests]:
    agent: Agent[None, str | DeferredToolRequests] = Agent(
        _scripted(*tools), output_type=[str, DeferredToolRequests]
    )
    if "delete_file" in tools:
        agent.tool_plain(requires_approval=True)(delete_file)
    if "ask_city" in tools:
        agent.tool_plain(ask_city)
    return agent


def delete_file(path: str) -> str:
    """Delete a file (the demo only records that it would)."""
    EXECUTIONS.append(("delete_file", {"path": path}))
    return f"deleted {path} (a demo: no file was touched)"


def ask_city(question: str) -> City:
    """Ask the user for a city: the run suspends until someone answers."""
    raise CallDeferred(metadata={"question": question})


agents: dict[str, Agent[None, str | DeferredToolRequests]] = {
    "file-cleaner": _agent("delete_file"),
    "city-asker": _agent("ask_city"),
    "trip-planner": _agent("delete_file", "ask_city"),
}
