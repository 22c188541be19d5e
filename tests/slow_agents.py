"""A Python agent whose approved tool takes a while, for tests that kill or stop
something while it runs. Every start of the tool's body is appended to the file that
SLOW_AGENT_LOG names (the tool may run in another process), so tests can count them.

The prompt says how long: "sleep 3 /tmp/x" runs `slow_delete(path="/tmp/x", seconds=3)`.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel


def _model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    if len(messages) > 1:
        return ModelResponse(parts=[TextPart("slow work done")])
    prompt = str(getattr(messages[0].parts[-1], "content", ""))
    _, seconds, path = [*prompt.split(), "0", "/tmp/slow"][:3]
    return ModelResponse(
        parts=[ToolCallPart("slow_delete", {"path": path, "seconds": float(seconds)})]
    )


slow: Agent[None, str | DeferredToolRequests] = Agent(
    FunctionModel(_model), output_type=[str, DeferredToolRequests]
)


@slow.tool_plain(requires_approval=True)
async def slow_delete(path: str, seconds: float) -> str:
    """Delete a file, slowly (it only records that it started)."""
    log = os.environ.get("SLOW_AGENT_LOG")
    if log:
        _append(Path(log), json.dumps({"path": path}))
    await asyncio.sleep(seconds)
    return f"deleted {path}"


def _append(log: Path, line: str) -> None:
    with log.open("a") as out:
        out.write(line + "\n")


def executions(log: Path, path: str) -> int:
    """How many times the tool started for `path`."""
    if not log.exists():
        return 0
    return sum(json.loads(line)["path"] == path for line in log.read_text().splitlines())


agents: dict[str, Any] = {"slow": slow}


def _broken_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    if len(messages) > 1:
        return ModelResponse(parts=[TextPart("unreachable")])
    return ModelResponse(parts=[ToolCallPart("break_things", {})])


broken: Agent[None, str | DeferredToolRequests] = Agent(
    FunctionModel(_broken_model), output_type=[str, DeferredToolRequests]
)


@broken.tool_plain(requires_approval=True)
def break_things() -> str:
    """A tool whose body fails once approved."""
    raise RuntimeError("the tool broke")


agents["broken"] = broken
