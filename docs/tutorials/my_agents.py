"""Your own agents for suspended-runs: serve them with AGENTS=my_agents:agents, started
in this file's folder (docs/tutorials/python-agent.md)."""

from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.models.test import TestModel

# Your model goes here: "openai:gpt-5", "anthropic:claude-sonnet-4-5", ... TestModel needs
# no key and no network: it calls the tool once, with made-up arguments.
MODEL = TestModel(call_tools=["issue_refund"])

refunds = Agent(MODEL, output_type=[str, DeferredToolRequests], instructions="You refund orders.")


@refunds.tool_plain(requires_approval=True)
def issue_refund(order: str, amount: float) -> str:
    """Refund `amount` on `order`: a person approves each refund first."""
    return f"refunded {amount:.2f} on order {order}"


agents = {"refunds": refunds}
