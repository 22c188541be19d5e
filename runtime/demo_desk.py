"""Demo Python agents for `scripts/demo` and the tutorials, offline: pydantic-ai's
FunctionModel plays the model (no API key). Their tools change nothing: they say what they
would have done.

- `refund-desk`: `issue_refund(order, amount)` needs approval (edit the amount, or decline).
- `support-desk`: `ask_customer(question)` suspends until a person answers for the customer.
"""

from __future__ import annotations

import re

from pydantic_ai import Agent, CallDeferred, DeferredToolRequests
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from suspended_runs.runtime.demo import first_prompt

Output = str | DeferredToolRequests


def issue_refund(order: str, amount: float) -> str:
    """Refund `amount` on `order` (a demo: nothing is refunded)."""
    return f"(demo) would have refunded {amount:.2f} on order {order}; nothing was changed"


def ask_customer(question: str) -> str:
    """Ask the customer: the run waits until a person answers for them."""
    raise CallDeferred(metadata={"question": question})


def _desk(tool: str) -> FunctionModel:
    """Calls `tool` on the request, then reports what it returned."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = [p for p in getattr(messages[-1], "parts", []) if isinstance(p, ToolReturnPart)]
        if returns:
            return ModelResponse(parts=[TextPart(f"Done: {returns[0].model_response_str()}")])
        asked = first_prompt(messages)
        if tool == "issue_refund":
            order = re.search(r"[A-Z]-\d+", asked)
            amount = re.search(r"\d+\.\d{2}", asked)
            args = {
                "order": order.group(0) if order else "A-1042",
                "amount": float(amount.group(0)) if amount else 49.90,
            }
        else:
            args = {"question": f"The customer asks: {asked or 'where is my order?'}"}
        return ModelResponse(parts=[ToolCallPart(tool, args)])

    return FunctionModel(respond)


def _refund_desk() -> Agent[None, Output]:
    agent: Agent[None, Output] = Agent(
        _desk("issue_refund"), output_type=[str, DeferredToolRequests]
    )
    agent.tool_plain(requires_approval=True)(issue_refund)
    return agent


def _support_desk() -> Agent[None, Output]:
    agent: Agent[None, Output] = Agent(
        _desk("ask_customer"), output_type=[str, DeferredToolRequests]
    )
    agent.tool_plain(ask_customer)
    return agent


agents: dict[str, Agent[None, Output]] = {
    "refund-desk": _refund_desk(),
    "support-desk": _support_desk(),
}
