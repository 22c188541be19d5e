"""Python agents (runtime/): loading them, and runs that survive a real restart."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.models.function import FunctionModel

from suspended_runs.runtime import AgentsNotLoadable, load_agents
from tests.helpers import Server

START = """mutation($agent: ID!, $prompt: String!) {
  startRun(input: {agentId: $agent, prompt: $prompt}) {
    ... on RunStarted { run { runId status toolCalls { toolCallId toolName } } } } }"""
DECIDE = """mutation($run: ID!, $call: String) {
  approve: approveToolCall(input: {runId: $run, toolCallId: $call}) {
    __typename ... on RunDecided { run { status output } } }
}"""
RESUME = """mutation($run: ID!, $data: JSON!) {
  resumeRun(input: {runId: $run, resumeData: $data}) {
    __typename ... on RunDecided { run { status output } } } }"""
LIST = """{ suspendedRuns { total runs { runId agentId status
  toolCalls { toolCallId requiresApproval decision { action decidedBy } } } } }"""


def test_demo_agents_load_by_path() -> None:
    agents = load_agents("suspended_runs.runtime.demo:agents")
    assert set(agents) == {"file-cleaner", "city-asker", "trip-planner"}


@pytest.mark.parametrize(
    "spec",
    [
        "suspended_runs.runtime.demo",
        "no.such.module:agents",
        "suspended_runs.runtime.demo:nothing",
        "suspended_runs.runtime.demo:City",
    ],
)
def test_a_bad_agents_setting_says_what_is_wrong(spec: str) -> None:
    with pytest.raises(AgentsNotLoadable):
        load_agents(spec)


def start(server: Server, agent: str, prompt: str) -> dict[str, Any]:
    body = server.query(START, {"agent": agent, "prompt": prompt})
    run: dict[str, Any] = body["data"]["startRun"]["run"]
    assert run["status"] == "SUSPENDED"
    return run


def test_suspended_and_half_decided_runs_survive_a_restart(server: Server) -> None:
    server.start()
    cleaner = start(server, "file-cleaner", "delete /tmp/keep-me")
    asker = start(server, "city-asker", "Which city?")
    planner = start(server, "trip-planner", "plan /tmp/old")
    approval = planner["toolCalls"][0]["toolCallId"]
    half = server.query(DECIDE, {"run": planner["runId"], "call": approval})
    assert half["data"]["approve"]["run"]["status"] == "SUSPENDED"
    before = server.query(LIST)["data"]["suspendedRuns"]
    assert before["total"] == 3

    assert server.stop() == 0
    server.start()

    assert server.query(LIST)["data"]["suspendedRuns"] == before
    decided = [c for r in before["runs"] for c in r["toolCalls"] if c["decision"]]
    assert [c["toolCallId"] for c in decided] == [approval]
    # The decided run goes on from where it was: its other call, then completion.
    done = server.query(RESUME, {"run": planner["runId"], "data": {"name": "Rome"}})
    result = done["data"]["resumeRun"]["run"]
    assert result["status"] == "COMPLETED"
    assert "deleted /tmp/old" in result["output"] and "Rome" in result["output"]
    approved = server.query(DECIDE, {"run": cleaner["runId"]})
    assert approved["data"]["approve"]["run"]["status"] == "COMPLETED"
    resumed = server.query(RESUME, {"run": asker["runId"], "data": {"name": "Oslo"}})
    assert resumed["data"]["resumeRun"]["run"]["status"] == "COMPLETED"
    assert server.query(LIST)["data"]["suspendedRuns"]["total"] == 0


def test_a_failed_run_shows_the_exception_type_not_its_text(settings, tmp_path) -> None:
    import asyncio

    from tests.helpers import make_gql, running_app, start_run

    async def scenario() -> dict[str, Any]:
        update = {"agents": "tests.runtime.test_python_runtime:failing"}
        async with running_app(settings.model_copy(update=update)) as client:
            return await start_run(make_gql(client), "leaky", "go")

    run = asyncio.run(scenario())
    assert run["status"] == "FAILED"
    assert run["error"].startswith("RuntimeError")
    assert "sk-secret" not in run["error"]


def _leaky_model(messages: Any, info: Any) -> Any:
    raise RuntimeError("provider said: invalid key sk-secret-123")


failing = {"leaky": Agent(FunctionModel(_leaky_model))}
