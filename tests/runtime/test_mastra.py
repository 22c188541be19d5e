"""Mastra runs end to end (runtime/mastra.py), against a real Mastra server.

The peer (tests/mastra_peer/) and this server share one embedded MongoDB: the peer writes
snapshots, this server lists them, and decisions made here go to the peer's routes.
Run this suite alone with `scripts/test tests/runtime/test_mastra.py`.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from tests.helpers import (
    APPROVE,
    DECLINE,
    RESUME,
    Gql,
    act,
    as_mastra,
    eventually,
    has_status,
    make_gql,
    run_of,
)
from tests.mastra_peer import MastraPeer, delete, settings_for

LIST = """query($agent: ID) { suspendedRuns(filter: {agentId: $agent}, perPage: 500) {
  total runs { runId status threadId resourceId suspendedAt runtime
  toolCalls { toolCallId toolName args requiresApproval suspendPayload } } } }"""


@pytest.fixture
async def gql(mongo_uri: str, peer: MastraPeer, start_app) -> Gql:
    return make_gql(await start_app(settings_for(mongo_uri, peer)))


async def test_the_listing_equals_the_peers_own(gql, peer: MastraPeer) -> None:
    tag = uuid.uuid4().hex[:8]
    created = [
        await peer.start_run("approver", [delete(f"/tmp/{tag}/a")], resource="user-1"),
        await peer.start_run("approver", [delete(f"/tmp/{tag}/b"), delete(f"/tmp/{tag}/c")]),
        await peer.start_run(
            "asker", [{"toolName": "askCity", "input": {"question": "Which?"}}], resource="user-2"
        ),
    ]

    async def all_shown() -> bool:
        return all([await has_status(gql, run_id) for run_id in created])

    await eventually(all_shown, within=2)
    for agent in ("approver", "asker"):
        theirs = await peer.suspended_runs(agent)

        async def same(agent: str = agent, theirs: dict[str, Any] = theirs) -> bool:
            # Mastra writes a run's snapshot more than once as it suspends: the follower
            # may have applied the first write and not yet the next, a moment later.
            ours = (await gql(LIST, {"agent": agent}))["data"]["suspendedRuns"]
            return bool(
                ours["total"] == theirs["total"]
                and [as_mastra(r) for r in ours["runs"]] == theirs["runs"]
                and {r["runtime"] for r in ours["runs"]} <= {"MASTRA"}
            )

        await eventually(same, within=2)


async def test_approve_runs_the_tool_once_and_completes(gql, peer: MastraPeer) -> None:
    path = f"/tmp/{uuid.uuid4().hex}"
    run_id = await peer.start_run("approver", [delete(path)])
    await eventually(lambda: has_status(gql, run_id), within=2)
    result = await act(gql, APPROVE, runId=run_id)
    assert result["__typename"] == "RunDecided", result
    assert (result["run"]["status"], result["run"]["output"]) == ("COMPLETED", "done")
    assert peer.executions(path) == [("deleteFile", {"path": path})]
    theirs = await peer.suspended_runs("approver")
    assert run_id not in {r["runId"] for r in theirs["runs"]}


async def test_decline_never_runs_the_tool(gql, peer: MastraPeer) -> None:
    path = f"/tmp/{uuid.uuid4().hex}"
    run_id = await peer.start_run("approver", [delete(path)])
    await eventually(lambda: has_status(gql, run_id), within=2)
    result = await act(gql, DECLINE, runId=run_id, reason="keep it")
    assert result["run"]["status"] == "COMPLETED"
    assert peer.executions(path) == []


async def test_resume_gives_the_suspended_tool_its_data(gql, peer: MastraPeer) -> None:
    city = f"City-{uuid.uuid4().hex[:6]}"
    run_id = await peer.start_run("asker", [{"toolName": "askCity", "input": {"question": "?"}}])
    await eventually(lambda: has_status(gql, run_id), within=2)
    result = await act(gql, RESUME, runId=run_id, resumeData={"name": city})
    assert result["run"]["status"] == "COMPLETED"
    assert peer.executions(city) == [("askCity", {"name": city})]


async def test_parallel_approvals_are_worked_through_one_by_one(gql, peer: MastraPeer) -> None:
    tag = uuid.uuid4().hex
    run_id = await peer.start_run("approver", [delete(f"/tmp/{tag}/1"), delete(f"/tmp/{tag}/2")])
    await eventually(lambda: has_status(gql, run_id), within=2)
    first = (await run_of(gql, run_id))["toolCalls"]
    assert [c["args"] for c in first] == [{"path": f"/tmp/{tag}/1"}]
    result = await act(gql, APPROVE, runId=run_id)
    assert result["run"]["status"] == "SUSPENDED"  # now on the second call
    second = result["run"]["toolCalls"]
    assert len(second) == 1 and second[0]["toolCallId"] != first[0]["toolCallId"]
    done = await act(gql, APPROVE, runId=run_id)
    assert done["run"]["status"] == "COMPLETED"
    assert sorted(p["path"] for _, p in peer.executions(tag)) == [f"/tmp/{tag}/1", f"/tmp/{tag}/2"]


async def test_twenty_concurrent_approvals_run_the_tool_once(gql, peer: MastraPeer) -> None:
    path = f"/tmp/{uuid.uuid4().hex}"
    run_id = await peer.start_run("approver", [delete(path)])
    await eventually(lambda: has_status(gql, run_id), within=2)
    results = await asyncio.gather(*(act(gql, APPROVE, runId=run_id) for _ in range(20)))
    kinds = [r["__typename"] for r in results]
    assert kinds.count("RunDecided") == 1, kinds
    assert set(kinds) <= {"RunDecided", "AlreadyDecided", "RunNotSuspended"}
    assert peer.executions(path) == [("deleteFile", {"path": path})]


async def test_decisions_made_on_the_peer_show_within_2s(gql, peer: MastraPeer) -> None:
    tag = uuid.uuid4().hex
    run_id = await peer.start_run("approver", [delete(f"/tmp/{tag}/1"), delete(f"/tmp/{tag}/2")])
    await eventually(lambda: has_status(gql, run_id), within=2)
    [call] = (await run_of(gql, run_id))["toolCalls"]
    await peer.decide(
        "approver", "approve-tool-call", {"runId": run_id, "toolCallId": call["toolCallId"]}
    )

    async def on_next_call() -> bool:
        calls = (await run_of(gql, run_id))["toolCalls"]
        return [c["args"]["path"] for c in calls] == [f"/tmp/{tag}/2"]

    await eventually(on_next_call, within=2)
    [call] = (await run_of(gql, run_id))["toolCalls"]
    await peer.decide(
        "approver", "approve-tool-call", {"runId": run_id, "toolCallId": call["toolCallId"]}
    )
    # It left the suspended state without a decision made here: ENDED.
    await eventually(lambda: has_status(gql, run_id, "ENDED"), within=2)


async def test_a_stopped_peer_is_executor_unavailable_and_a_retry_succeeds(
    mongo_uri: str, own_peer: MastraPeer, start_app
) -> None:
    own = own_peer
    gql = make_gql(await start_app(settings_for(mongo_uri, own)))
    path = f"/tmp/{uuid.uuid4().hex}"
    run_id = await own.start_run("approver", [delete(path)])
    await eventually(lambda: has_status(gql, run_id), within=2)
    own.stop()
    refused = await act(gql, APPROVE, runId=run_id)
    assert refused["__typename"] == "ExecutorUnavailable"
    assert "could not be reached" in refused["message"]
    run = await run_of(gql, run_id)
    assert run["status"] == "SUSPENDED" and run["toolCalls"][0]["decision"] is None
    own.start()
    result = await act(gql, APPROVE, runId=run_id)
    assert result["run"]["status"] == "COMPLETED", result
    assert own.executions(path) == [("deleteFile", {"path": path})]


async def test_python_and_mastra_runs_share_one_list(gql, peer: MastraPeer) -> None:
    resource = f"shared-{uuid.uuid4().hex[:8]}"
    mastra_run = await peer.start_run("approver", [delete("/tmp/shared")], resource=resource)
    body = await gql(
        'mutation($r: String) { startRun(input: {agentId: "file-cleaner", prompt: "x /tmp/y", '
        "resourceId: $r}) { ... on RunStarted { run { runId } } } }",
        {"r": resource},
    )
    python_run = body["data"]["startRun"]["run"]["runId"]
    query = """query($r: String) { suspendedRuns(filter: {resourceId: $r}) {
      total runs { runId runtime } } }"""

    async def both() -> bool:
        page = (await gql(query, {"r": resource}))["data"]["suspendedRuns"]
        return bool(page["total"] == 2)

    await eventually(both, within=2)
    page = (await gql(query, {"r": resource}))["data"]["suspendedRuns"]
    assert {(r["runId"], r["runtime"]) for r in page["runs"]} == {
        (mastra_run, "MASTRA"),
        (python_run, "PYTHON"),
    }


async def test_edited_args_are_refused_and_nothing_is_sent(gql, peer: MastraPeer) -> None:
    path = f"/tmp/{uuid.uuid4().hex}"
    run_id = await peer.start_run("approver", [delete(path)])
    await eventually(lambda: has_status(gql, run_id), within=2)
    refused = await act(gql, APPROVE, runId=run_id, editedArgs={"path": "/tmp/other"})
    assert refused["__typename"] == "ArgsNotEditable", refused
    run = await run_of(gql, run_id)
    assert run["status"] == "SUSPENDED" and run["toolCalls"][0]["decision"] is None
    assert peer.executions(path) == []
    assert (await act(gql, APPROVE, runId=run_id))["run"]["status"] == "COMPLETED"


async def test_bulk_decisions_on_mastra_runs(gql, peer: MastraPeer) -> None:
    tag = uuid.uuid4().hex
    approve = await peer.start_run("approver", [delete(f"/tmp/{tag}/a")])
    decline = await peer.start_run("approver", [delete(f"/tmp/{tag}/b")])

    async def both_listed() -> bool:
        return await has_status(gql, approve) and await has_status(gql, decline)

    await eventually(both_listed, within=2)
    body = await gql(
        "mutation($d: [ToolCallDecisionInput!]!) { decideToolCalls(decisions: $d) "
        "{ __typename ... on RunDecided { run { runId status } } } }",
        {"d": [{"runId": approve, "action": "APPROVE"}, {"runId": decline, "action": "DECLINE"}]},
    )
    answers = body["data"]["decideToolCalls"]
    assert [(a["run"]["runId"], a["run"]["status"]) for a in answers] == [
        (approve, "COMPLETED"),
        (decline, "COMPLETED"),
    ]
    assert [p["path"] for _, p in peer.executions(tag)] == [f"/tmp/{tag}/a"]


async def test_an_expired_mastra_approval_is_declined_on_mastra(
    mongo_uri: str, peer: MastraPeer, start_app
) -> None:
    settings = settings_for(mongo_uri, peer, decision_timeouts={"asker": 600, "approver": 1})
    gql = make_gql(await start_app(settings))
    path = f"/tmp/{uuid.uuid4().hex}"
    run_id = await peer.start_run("approver", [delete(path)])
    await eventually(lambda: has_status(gql, run_id, "COMPLETED"), within=6)
    run = await run_of(gql, run_id)
    assert run["decidedBy"] == "system"
    assert peer.executions(path) == []
    theirs = await peer.suspended_runs("approver")
    assert run_id not in {r["runId"] for r in theirs["runs"]}
