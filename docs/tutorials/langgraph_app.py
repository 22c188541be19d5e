"""A LangGraph agent whose interrupts suspended-runs lists and decides
(docs/tutorials/connect-langgraph.md): LangChain's `create_agent` with
`HumanInTheLoopMiddleware`, checkpointed by `MongoDBSaver`.

Ask it:  MONGODB_URI=mongodb://127.0.0.1:27017 python langgraph_app.py "Refund order A-3015, 89.00"
Decide:  suspended-runs with LANGGRAPH_GRAPHS='{"refunds": "langgraph_app:build"}'
With OPENAI_API_KEY set it uses OpenAI; without it, a scripted model that needs no network.
"""

import os
import re
import sys
import uuid
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.mongodb import MongoDBSaver


@tool
def issue_refund(order: str, amount: float) -> str:
    """Refund `amount` on `order`."""
    return f"refunded {amount:.2f} on order {order}"


def build(checkpointer: Any) -> Any:
    """The graph. suspended-runs calls this with a MongoDBSaver of its own to resume a
    thread after a decision (LANGGRAPH_GRAPHS names it)."""
    gates = HumanInTheLoopMiddleware(interrupt_on={"issue_refund": True})
    return create_agent(
        _model(),
        tools=[issue_refund],
        middleware=[gates],
        checkpointer=checkpointer,
        name="refunds",
    )


def _model() -> Any:
    if os.environ.get("OPENAI_API_KEY"):
        from langchain.chat_models import init_chat_model

        return init_chat_model("openai:gpt-5-mini")
    return Scripted()


class Scripted(BaseChatModel):
    """The stand-in for a real model: one call of issue_refund, then a closing sentence."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> "Scripted":
        return self

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(self, messages: Any, *args: Any, **kwargs: Any) -> ChatResult:
        asked = str(messages[-1].content)
        if not isinstance(messages[-1], HumanMessage):
            return ChatResult(
                generations=[ChatGeneration(message=AIMessage("The refund is done."))]
            )
        order = re.search(r"[A-Z]-\d+", asked)
        amount = re.search(r"\d+\.\d\d", asked)
        args = {"order": order[0] if order else "A-1", "amount": float(amount[0] if amount else 1)}
        call = {"name": "issue_refund", "args": args, "id": f"call_{uuid.uuid4().hex[:8]}"}
        return ChatResult(generations=[ChatGeneration(message=AIMessage("", tool_calls=[call]))])


if __name__ == "__main__":
    database = os.environ.get("LANGGRAPH_DB", "langgraph")
    with MongoDBSaver.from_conn_string(os.environ["MONGODB_URI"], db_name=database) as saver:
        order = re.search(r"[A-Z]-\d+", sys.argv[1])  # a thread per order
        thread = {"configurable": {"thread_id": f"refund-{order[0] if order else uuid.uuid4()}"}}
        asked = {"messages": [{"role": "user", "content": sys.argv[1]}]}
        state = build(saver).invoke(asked, thread)
        print("waiting for a person" if state.get("__interrupt__") else "done")
