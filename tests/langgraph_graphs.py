"""Real LangGraph graphs for the tests: `create_agent` with LangChain's
`HumanInTheLoopMiddleware` (batched and per call) over a scripted chat model, an Agent
Inbox graph and plain `interrupt()` graphs, each checkpointed by a real `MongoDBSaver`.

The saver is synchronous: tests run a graph with `asyncio.to_thread`, so the app they run
in-process goes on serving meanwhile.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.mongodb import MongoDBSaver
from langgraph.config import get_config
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

RAN: list[tuple[str, dict[str, Any]]] = []
"""Every tool call that ran in this process: (tool, arguments); with TOOLS_RAN_FILE set,
also a JSON line each in that file (a server in a process of its own)."""


def ran(name: str, args: dict[str, Any]) -> None:
    RAN.append((name, args))
    if path := os.environ.get("TOOLS_RAN_FILE"):
        thread_id = get_config().get("configurable", {}).get("thread_id")
        with Path(path).open("a") as out:
            out.write(json.dumps({"tool": name, "args": args, "thread": thread_id}) + "\n")


@tool
def issue_refund(order: str, amount: float) -> str:
    """Refund an order (a test tool: records that it ran, nothing else; TOOL_SECONDS slow)."""
    time.sleep(float(os.environ.get("TOOL_SECONDS", "0")))
    ran("issue_refund", {"order": order, "amount": amount})
    return f"refunded {amount} on {order}"


@tool
def send_email(to: str, body: str) -> str:
    """Send an email (a test tool: records that it ran, nothing else)."""
    ran("send_email", {"to": to, "body": body})
    return "sent"


class ScriptedModel(BaseChatModel):
    """A chat model with a script, for any number of runs: a person's message is answered
    with a refund and an email (new call ids each time), anything else with "done"."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedModel:
        return self

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        if isinstance(messages[-1], HumanMessage):
            n = uuid.uuid4().hex[:6]
            refund = {"order": "A-1", "amount": 12.5}
            email = {"to": "a@example.com", "body": "hi"}
            calls = [
                {"name": "issue_refund", "args": refund, "id": f"call_refund_{n}"},
                {"name": "send_email", "args": email, "id": f"call_email_{n}"},
            ]
            answer = AIMessage(content="", tool_calls=calls)
        else:
            answer = AIMessage(content="done")
        return ChatResult(generations=[ChatGeneration(message=answer)])


def refund_agent(
    checkpointer: MongoDBSaver, *, per_call: bool = False, name: str = "refunds"
) -> Any:
    """`create_agent` whose refund (every decision) and email (approve or reject) wait for a
    person."""
    gates: dict[str, Any] = {
        "issue_refund": True,
        "send_email": {"allowed_decisions": ["approve", "reject"]},
    }
    middleware = HumanInTheLoopMiddleware(
        interrupt_on=gates, interrupt_mode="per_call" if per_call else "batched"
    )
    return create_agent(
        ScriptedModel(),
        tools=[issue_refund, send_email],
        middleware=[middleware],
        checkpointer=checkpointer,
        name=name,
    )


class Questions(TypedDict, total=False):
    topic: str
    first: Any
    second: Any


def two_questions(checkpointer: MongoDBSaver) -> Any:
    """A node that calls `interrupt()` twice: a plain suspension, asked again."""

    def ask(state: Questions) -> Questions:
        first = interrupt({"question": "Which customer?"})
        if first == "boom":  # an answer the node refuses once it has it: the run fails
            raise ValueError("no customer is called boom")
        second = interrupt({"question": "Which order?"})
        return {"first": first, "second": second}

    graph = StateGraph(Questions)
    graph.add_node("ask", ask)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", END)
    return graph.compile(checkpointer=checkpointer)


def inbox_graph(checkpointer: MongoDBSaver) -> Any:
    """Agent Inbox's `HumanInterrupt`: a one-element list, accept and edit allowed."""

    def review(state: Questions) -> Questions:
        answer = interrupt(
            [
                {
                    "action_request": {"action": "close_ticket", "args": {"ticket": "T-9"}},
                    "config": {
                        "allow_accept": True,
                        "allow_edit": True,
                        "allow_respond": False,
                        "allow_ignore": True,
                    },
                    "description": "Close the ticket?",
                }
            ]
        )
        return {"first": answer}

    graph = StateGraph(Questions)
    graph.add_node("review", review)
    graph.add_edge(START, "review")
    graph.add_edge("review", END)
    return graph.compile(checkpointer=checkpointer)


def per_call_refunds(checkpointer: MongoDBSaver) -> Any:
    """A factory for LANGGRAPH_GRAPHS: the refund agent, an interrupt per call."""
    return refund_agent(checkpointer, per_call=True, name="per-call-refunds")


def thread(thread_id: str | None = None, **metadata: Any) -> dict[str, Any]:
    """A run config for a thread (a new one by default), with `metadata` on its checkpoints."""
    return {
        "configurable": {"thread_id": thread_id or f"thread-{uuid.uuid4().hex[:10]}"},
        "metadata": metadata,
    }


def ask_refund(graph: Any, config: dict[str, Any]) -> Any:
    return graph.invoke({"messages": [{"role": "user", "content": "Refund order A-1"}]}, config)


def resume(graph: Any, config: dict[str, Any], value: Any) -> Any:
    return graph.invoke(Command(resume=value), config)
