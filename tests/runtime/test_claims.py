"""Keeping a claim (runtime/claims.py): a continuation that outlasts its lease is renewed,
never shown STALLED; only a run whose holder stopped renewing is."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.helpers import APPROVE, act, make_gql, start_run, status_of


def _model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    if len(messages) > 1:
        return ModelResponse(parts=[TextPart("slow work done")])
    return ModelResponse(parts=[ToolCallPart("slow_work", {"seconds": 3.5})])


slow: Agent[None, str | DeferredToolRequests] = Agent(
    FunctionModel(_model), output_type=[str, DeferredToolRequests]
)


@slow.tool_plain(requires_approval=True)
async def slow_work(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return "done"


agents: dict[str, Any] = {"slow": slow}


async def test_a_continuation_longer_than_its_lease_stays_running(settings, start_app) -> None:
    # Renewed every third of the lease; the tool takes three and a half leases. A shorter
    # lease failed under a loaded machine: a renewal a few tenths late shows STALLED.
    lease = 1.0
    client = await start_app(
        settings.model_copy(
            update={"agents": "tests.runtime.test_claims:agents", "claim_lease_seconds": lease}
        )
    )
    gql = make_gql(client)
    run_id = (await start_run(gql, "slow", "go"))["runId"]
    approve = await act(gql, APPROVE, runId=run_id, wait=False)
    assert approve["run"]["status"] == "RUNNING"
    seen: list[str | None] = []
    async with asyncio.timeout(30):  # a renewal that never ends would keep it RUNNING
        while not seen or seen[-1] == "RUNNING":
            seen.append(await status_of(gql, run_id))
            await asyncio.sleep(0.05)
    assert "STALLED" not in seen
    assert seen[-1] == "COMPLETED"
    assert seen.count("RUNNING") >= 10  # it was watched across several lease periods
