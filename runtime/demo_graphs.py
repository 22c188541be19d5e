"""A demo LangGraph agent that needs no model and no API key, for `scripts/demo`, the
tutorials and `scripts/bench`: `create_agent` with LangChain's `HumanInTheLoopMiddleware`
over a scripted chat model. Its tools change nothing: they say what they would have done.

Register it as `LANGGRAPH_GRAPHS='{"langgraph-refunds":
"suspended_runs.runtime.demo_graphs:refunds"}'` (it needs the `langgraph` extra).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool

AGENT = "langgraph-refunds"


@tool
def issue_refund(order: str, amount: float) -> str:
    """Refund `amount` on `order` (a demo: nothing is refunded)."""
    return f"(demo) would have refunded {amount:.2f} on order {order}; nothing was changed"


@tool
def note_customer(order: str, text: str) -> str:
    """Leave a note for the customer of `order` (a demo: nothing is sent)."""
    return f"(demo) would have left a note on order {order}; nothing was sent"


class RefundDesk(BaseChatModel):
    """A scripted model: a request names an order (`A-1042`) and an amount (`49.90`); it
    asks for the refund and a note to the customer, then reports what was done."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> RefundDesk:
        return self

    @property
    def _llm_type(self) -> str:
        return "refund-desk"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        last = messages[-1]
        if isinstance(last, HumanMessage):
            text = str(last.content)
            order = re.search(r"[A-Z]-\d+", text)
            amount = re.search(r"\d+\.\d{2}", text)
            ordered = order.group(0) if order else "A-1042"
            asked = float(amount.group(0)) if amount else 49.90
            n = uuid.uuid4().hex[:8]
            note = {"order": ordered, "text": "Your refund is on its way."}
            calls = [
                {
                    "name": "issue_refund",
                    "args": {"order": ordered, "amount": asked},
                    "id": f"r_{n}",
                },
                {"name": "note_customer", "args": note, "id": f"n_{n}"},
            ]
            answer = AIMessage(content="", tool_calls=calls)
        else:
            answer = AIMessage(content="Done: the refund desk has answered the request.")
        return ChatResult(generations=[ChatGeneration(message=answer)])


def refunds(checkpointer: Any) -> Any:
    """The demo refund agent: its refund waits for a person (any decision), its note for an
    approval or a rejection."""
    gates: dict[str, Any] = {
        "issue_refund": True,
        "note_customer": {"allowed_decisions": ["approve", "reject"]},
    }
    return create_agent(
        RefundDesk(),
        tools=[issue_refund, note_customer],
        middleware=[HumanInTheLoopMiddleware(interrupt_on=gates)],
        checkpointer=checkpointer,
        name=AGENT,
    )
