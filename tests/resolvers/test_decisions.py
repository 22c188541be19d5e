"""approveToolCall / declineToolCall / resumeRun over HTTP (resolvers/decisions.py)."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from suspended_runs.runtime.demo import EXECUTIONS
from suspended_runs.server.embedded_mongodb import EmbeddedMongoDB
from suspended_runs.storage import RUNS_COLLECTION, SNAPSHOTS_COLLECTION
from tests.helpers import (
    APPROVE,
    DECLINE,
    RESUME,
    START,
    Server,
    act,
    eventually,
    listed,
    load_snapshots,
    make_gql,
    run_of,
    stopped,
)
from tests.helpers import start_run as start

DEMO_NOTE = "(a demo: no file was touched)"

# -- the demo agents' whole cycle -------------------------------------------------------


async def test_approval_cycle_start_list_approve_complete(gql, db) -> None:
    before = len(EXECUTIONS)
    run = await start(gql, "file-cleaner", "please delete /tmp/a.txt", threadId="t-1")
    assert run["status"] == "SUSPENDED" and run["runtime"] == "PYTHON"
    [call] = run["toolCalls"]
    assert (call["toolName"], call["requiresApproval"], call["args"]) == (
        "delete_file",
        True,
        {"path": "/tmp/a.txt"},
    )
    assert await listed(gql, run["runId"])  # at once, without waiting for the sync
    assert await db[SNAPSHOTS_COLLECTION].count_documents({"run_id": run["runId"]}) == 1
    result = await act(gql, APPROVE, runId=run["runId"], toolCallId=call["toolCallId"])
    assert result["__typename"] == "RunDecided"
    assert result["run"]["status"] == "COMPLETED"
    assert (
        result["run"]["output"] == "delete_file: deleted /tmp/a.txt (a demo: no file was touched)"
    )
    assert EXECUTIONS[before:] == [("delete_file", {"path": "/tmp/a.txt"})]
    assert not await listed(gql, run["runId"])
    assert (await run_of(gql, run["runId"]))["status"] == "COMPLETED"  # kept for retention
    assert await db[SNAPSHOTS_COLLECTION].count_documents({"run_id": run["runId"]}) == 0


async def test_decline_reason_reaches_the_model_and_the_tool_does_not_run(gql) -> None:
    before = len(EXECUTIONS)
    run = await start(gql, "file-cleaner")
    result = await act(gql, DECLINE, runId=run["runId"], reason="keep that file, it is mine")
    assert result["run"]["status"] == "COMPLETED"
    assert "keep that file, it is mine" in result["run"]["output"]
    decision = result["run"]["toolCalls"][0]["decision"]
    assert (decision["action"], decision["reason"]) == ("DECLINE", "keep that file, it is mine")
    assert len(EXECUTIONS) == before


async def test_suspend_cycle_resume_data_becomes_the_tool_result(gql) -> None:
    run = await start(gql, "city-asker", "Where to?")
    [call] = run["toolCalls"]
    assert call["requiresApproval"] is False
    assert call["suspendPayload"] == {"question": "Where to?"}
    result = await act(gql, RESUME, runId=run["runId"], resumeData={"name": "Lisbon"})
    assert result["__typename"] == "RunDecided"
    assert result["run"]["status"] == "COMPLETED"
    assert "Lisbon" in result["run"]["output"]


async def test_resume_data_that_fails_validation_changes_nothing(gql) -> None:
    run = await start(gql, "city-asker")
    bad = await act(gql, RESUME, runId=run["runId"], resumeData={"nom": 42})
    assert bad["__typename"] == "InvalidResumeData"
    assert "name" in bad["message"]
    again = await run_of(gql, run["runId"])
    assert again["status"] == "SUSPENDED" and again["toolCalls"][0]["decision"] is None
    good = await act(gql, RESUME, runId=run["runId"], resumeData={"name": "Oslo"})
    assert good["run"]["status"] == "COMPLETED"


async def test_two_calls_in_one_step_are_decided_one_by_one(gql) -> None:
    run = await start(gql, "trip-planner", "plan /tmp/old-plans")
    approval, question = run["toolCalls"]
    assert (approval["toolName"], question["toolName"]) == ("delete_file", "ask_city")
    unnamed = await gql(APPROVE, {"input": {"runId": run["runId"]}})
    assert unnamed["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    first = await act(gql, APPROVE, runId=run["runId"], toolCallId=approval["toolCallId"])
    assert first["__typename"] == "RunDecided"
    assert first["run"]["status"] == "SUSPENDED"  # one call still pending
    assert await listed(gql, run["runId"])
    # The one call left may be named or not.
    second = await act(gql, RESUME, runId=run["runId"], resumeData={"name": "Rome"})
    assert second["toolCallId"] == question["toolCallId"]
    assert second["run"]["status"] == "COMPLETED"
    assert "deleted /tmp/old-plans" in second["run"]["output"]
    assert "Rome" in second["run"]["output"]


async def test_wait_false_answers_running_and_the_run_goes_on(gql) -> None:
    run = await start(gql, "file-cleaner")
    result = await act(gql, APPROVE, runId=run["runId"], wait=False)
    assert result["run"]["status"] == "RUNNING"

    async def completed() -> bool:
        return bool((await run_of(gql, run["runId"]))["status"] == "COMPLETED")

    await eventually(completed, within=5)


# -- every union member -------------------------------------------------------------------


async def test_unknown_run_is_run_not_found(gql) -> None:
    result = await act(gql, APPROVE, runId="no-such-run")
    assert (result["__typename"], result["message"]) == ("RunNotFound", "no run no-such-run")


async def test_finished_run_is_not_suspended_and_says_its_status(gql) -> None:
    run = await start(gql, "file-cleaner")
    await act(gql, APPROVE, runId=run["runId"])
    result = await act(gql, APPROVE, runId=run["runId"])
    assert (result["__typename"], result["status"]) == ("RunNotSuspended", "COMPLETED")


async def test_unknown_tool_call_is_tool_call_not_found(gql) -> None:
    run = await start(gql, "file-cleaner")
    result = await act(gql, APPROVE, runId=run["runId"], toolCallId="nope")
    assert result["__typename"] == "ToolCallNotFound"


@pytest.mark.parametrize(
    ("agent", "mutation", "extra"),
    [
        ("city-asker", APPROVE, {}),
        ("city-asker", DECLINE, {}),
        ("file-cleaner", RESUME, {"resumeData": {}}),
    ],
)
async def test_deciding_the_wrong_kind_is_wrong_suspension_kind(
    gql, agent, mutation, extra
) -> None:
    run = await start(gql, agent)
    result = await act(gql, mutation, runId=run["runId"], **extra)
    assert result["__typename"] == "WrongSuspensionKind"
    assert result["requiresApproval"] is (agent == "file-cleaner")


async def test_a_decided_call_is_already_decided(gql) -> None:
    run = await start(gql, "trip-planner")
    approval = run["toolCalls"][0]["toolCallId"]
    await act(gql, DECLINE, runId=run["runId"], toolCallId=approval, reason="no")
    result = await act(gql, APPROVE, runId=run["runId"], toolCallId=approval)
    assert (result["__typename"], result["decision"]["action"]) == ("AlreadyDecided", "DECLINE")


async def test_mastra_runs_and_unknown_agents_are_executor_unavailable(gql, snapshots) -> None:
    await snapshots.insert_many(load_snapshots())
    mastra_run = "cc81ae27-d252-416e-8c0c-1d806da4331d"
    await eventually(lambda: listed(gql, mastra_run), within=2)
    result = await act(gql, APPROVE, runId=mastra_run)
    assert (result["__typename"], result["agentId"]) == ("ExecutorUnavailable", "approver")
    body = await gql(START, {"input": {"agentId": "nobody", "prompt": "hi"}})
    assert body["data"]["startRun"]["__typename"] == "ExecutorUnavailable"


async def test_a_run_whose_lease_ran_out_is_stalled_and_not_rerun(gql, db) -> None:
    run = await start(gql, "file-cleaner")
    # What a process that died while continuing the run leaves behind.
    await db[RUNS_COLLECTION].update_one(
        {"runId": run["runId"]},
        {
            "$set": {
                "status": "RUNNING",
                "claim": {"by": "dead", "at": _past(), "expiresAt": _past()},
            }
        },
    )
    assert (await run_of(gql, run["runId"]))["status"] == "STALLED"
    result = await act(gql, APPROVE, runId=run["runId"])
    assert (result["__typename"], result["status"]) == ("RunNotSuspended", "STALLED")


def _past() -> Any:
    from datetime import UTC, datetime

    return datetime(2020, 1, 1, tzinfo=UTC)


# -- exactly once, idempotency, audit -------------------------------------------------------


async def test_fifty_concurrent_approvals_continue_the_run_exactly_once(gql) -> None:
    run = await start(gql, "file-cleaner", "delete /tmp/race.txt")
    before = [e for e in EXECUTIONS if e == ("delete_file", {"path": "/tmp/race.txt"})]
    results = await asyncio.gather(*(act(gql, APPROVE, runId=run["runId"]) for _ in range(50)))
    kinds = [r["__typename"] for r in results]
    assert kinds.count("RunDecided") == 1
    assert set(kinds) <= {"RunDecided", "AlreadyDecided", "RunNotSuspended"}
    after = [e for e in EXECUTIONS if e == ("delete_file", {"path": "/tmp/race.txt"})]
    assert len(after) - len(before) == 1
    assert (await run_of(gql, run["runId"]))["status"] == "COMPLETED"


async def test_the_same_idempotency_key_repeats_the_first_answer(gql) -> None:
    run = await start(gql, "file-cleaner", "delete /tmp/idem.txt")
    count = len(EXECUTIONS)
    first, second = await asyncio.gather(
        act(gql, APPROVE, runId=run["runId"], idempotencyKey="k-1"),
        act(gql, APPROVE, runId=run["runId"], idempotencyKey="k-1"),
    )
    assert first == second
    assert first["run"]["status"] == "COMPLETED"
    assert len(EXECUTIONS) == count + 1
    third = await act(gql, APPROVE, runId=run["runId"], idempotencyKey="k-1")
    assert third == first
    other = await gql(DECLINE, {"input": {"runId": run["runId"], "idempotencyKey": "k-1"}})
    assert other["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"


async def test_every_decision_is_audited_with_who_when_what_why_and_key(client) -> None:
    gql = make_gql(client, headers={"x-actor": "alice@example.com"})
    run = await start(gql, "trip-planner")
    approval, question = (c["toolCallId"] for c in run["toolCalls"])
    await act(
        gql, DECLINE, runId=run["runId"], toolCallId=approval, reason="no", idempotencyKey="a-1"
    )
    await act(gql, DECLINE, runId=run["runId"], toolCallId=approval, reason="again")
    await act(gql, RESUME, runId=run["runId"], resumeData={"name": "Rome"})
    body = await gql(
        "query($id: ID!) { decisionLog(runId: $id) { toolCallId action decidedBy decidedAt "
        "reason resumeData idempotencyKey outcome } }",
        {"id": run["runId"]},
    )
    log = body["data"]["decisionLog"]
    assert [(r["action"], r["outcome"], r["toolCallId"]) for r in log] == [
        ("DECLINE", "RunDecided", approval),
        ("DECLINE", "AlreadyDecided", approval),
        ("RESUME", "RunDecided", question),
    ]
    assert {r["decidedBy"] for r in log} == {"anonymous:alice@example.com"}
    assert (log[0]["reason"], log[0]["idempotencyKey"]) == ("no", "a-1")
    assert log[2]["resumeData"] == {"name": "Rome"}
    anonymous = await act(make_gql(client), APPROVE, runId="nope")
    assert anonymous["__typename"] == "RunNotFound"
    body = await make_gql(client)('{ decisionLog(runId: "nope") { decidedBy } }')
    assert body["data"]["decisionLog"] == []  # a refusal about an unseen run is not written


# -- edited arguments ---------------------------------------------------------------------


async def test_approval_with_edited_args_runs_the_tool_with_them(gql) -> None:
    run = await start(gql, "file-cleaner", "delete /tmp/model-chose.txt")
    before = len(EXECUTIONS)
    result = await act(gql, APPROVE, runId=run["runId"], editedArgs={"path": "/tmp/person-chose"})
    assert result["__typename"] == "RunDecided", result
    assert (
        result["run"]["output"]
        == "delete_file: deleted /tmp/person-chose (a demo: no file was touched)"
    )
    assert EXECUTIONS[before:] == [("delete_file", {"path": "/tmp/person-chose"})]
    [call] = result["run"]["toolCalls"]
    assert call["args"] == {"path": "/tmp/model-chose.txt"}  # what the model asked stays
    body = await gql(
        "query($id: ID!) { agentRun(runId: $id) { decidedBy decidedAt "
        "toolCalls { decision { editedArgs } } } "
        "decisionLog(runId: $id) { action editedArgs } }",
        {"id": run["runId"]},
    )
    assert body["data"]["agentRun"]["toolCalls"][0]["decision"]["editedArgs"] == {
        "path": "/tmp/person-chose"
    }
    assert body["data"]["agentRun"]["decidedBy"] == "anonymous"
    assert body["data"]["agentRun"]["decidedAt"] is not None
    assert body["data"]["decisionLog"] == [
        {"action": "APPROVE", "editedArgs": {"path": "/tmp/person-chose"}}
    ]


async def test_edited_args_that_do_not_fit_are_invalid_and_nothing_is_applied(gql) -> None:
    run = await start(gql, "file-cleaner")
    before = len(EXECUTIONS)
    for edited in ({"pth": 1}, {"path": 42}, ["not", "an", "object"]):
        result = await act(gql, APPROVE, runId=run["runId"], editedArgs=edited)
        assert result["__typename"] == "InvalidArgs", result
        assert "delete_file" in result["message"]
    after = await run_of(gql, run["runId"])
    assert after["status"] == "SUSPENDED" and after["toolCalls"][0]["decision"] is None
    assert len(EXECUTIONS) == before
    ok = await act(gql, APPROVE, runId=run["runId"], editedArgs={"path": "/tmp/fine"})
    assert ok["run"]["status"] == "COMPLETED"


async def test_edited_args_on_a_mastra_run_are_refused_and_nothing_is_sent(gql, snapshots) -> None:
    doc = load_snapshots()[0]
    await snapshots.insert_one(doc)
    run_id = doc["run_id"]
    await eventually(lambda: listed(gql, run_id), within=2)
    result = await act(gql, APPROVE, runId=run_id, editedArgs={"x": 1})
    # No Mastra server is configured here either: the edit is refused before anything else.
    assert result["__typename"] in ("ArgsNotEditable", "ExecutorUnavailable"), result


_GATED_AGENTS = '''
"""An agent whose approved tool waits for a file: a test stops the database meanwhile."""
import os
import time
from pathlib import Path

from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import FunctionModel

GATE = Path(os.environ["GATE_DIR"])


def respond(messages, info):
    if any(isinstance(part, ToolReturnPart) for part in getattr(messages[-1], "parts", [])):
        return ModelResponse(parts=[TextPart("done")])
    return ModelResponse(parts=[ToolCallPart("gated_tool", {})])


agent = Agent(FunctionModel(respond), output_type=[str, DeferredToolRequests])


@agent.tool_plain(requires_approval=True)
def gated_tool() -> str:
    (GATE / "started").touch()
    deadline = time.monotonic() + 60
    while not (GATE / "go").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    with (GATE / "executions").open("a") as executions:
        executions.write("ran\\n")
    return "ran"


agents = {"gated": agent}
'''


def test_a_database_killed_mid_approval_answers_outcome_unknown_and_the_run_settles(
    own_database: EmbeddedMongoDB, server: Server, tmp_path: Path
) -> None:
    """The tool runs while the database is killed: the caller is told OutcomeUnknown (never
    an internal error), and once the database is back the run settles by itself, with the
    tool run once."""
    gate, run_id = _gated_run(server, own_database, tmp_path)
    approving, answers = _approving(server, run_id)
    _wait_for_file(gate / "started")
    own_database.kill()
    (gate / "go").touch()
    approving.join(120)
    body = answers[0].json()
    assert "errors" not in body, body
    result = body["data"]["approveToolCall"]
    assert result["__typename"] == "OutcomeUnknown", result
    assert "database" in result["message"]
    own_database.start()  # the same data, on the same port
    run = _completed(server, run_id)
    assert run["output"] == "done"
    assert (gate / "executions").read_text() == "ran\n"
    assert "Traceback" not in server.log.read_text()


def test_a_database_hung_mid_approval_answers_outcome_unknown_within_the_deadline(
    own_database: EmbeddedMongoDB, server: Server, tmp_path: Path
) -> None:
    """The database hangs while the tool runs: once the tool ends, the caller is told
    OutcomeUnknown within DATABASE_DEADLINE_SECONDS, with the run as read before the
    claim; once the database goes on, the run settles by itself, the tool run once."""
    server.env["DATABASE_DEADLINE_SECONDS"] = "2"
    gate, run_id = _gated_run(server, own_database, tmp_path)
    approving, answers = _approving(server, run_id)
    _wait_for_file(gate / "started")
    with stopped(own_database):
        (gate / "go").touch()
        opened = time.monotonic()
        approving.join(120)
        assert time.monotonic() - opened <= 2 + 1
    result = answers[0].json()["data"]["approveToolCall"]
    assert result["__typename"] == "OutcomeUnknown", result
    assert (result["run"]["runId"], result["run"]["status"]) == (run_id, "SUSPENDED")
    assert _completed(server, run_id)["output"] == "done"
    assert (gate / "executions").read_text() == "ran\n"
    assert "Traceback" not in server.log.read_text()


def _gated_run(server: Server, database: EmbeddedMongoDB, tmp_path: Path) -> tuple[Path, str]:
    """`server` serving the gated agent on `database`; the gate's folder and a run of it."""
    (tmp_path / "gated_agents.py").write_text(_GATED_AGENTS)
    gate = tmp_path / "gate"
    gate.mkdir()
    path = os.pathsep.join(p for p in [str(tmp_path), os.environ.get("PYTHONPATH")] if p)
    server.env.update(
        MONGODB_URI=database.uri, AGENTS="gated_agents:agents", PYTHONPATH=path, GATE_DIR=str(gate)
    )
    server.start()
    started = server.query(START, {"input": {"agentId": "gated", "prompt": "go"}})
    return gate, started["data"]["startRun"]["run"]["runId"]


def _approving(server: Server, run_id: str) -> tuple[threading.Thread, list[httpx.Response]]:
    """An approval of `run_id` sent from a thread; its answer lands in the list."""
    answers: list[httpx.Response] = []
    body = {"query": APPROVE, "variables": {"input": {"runId": run_id}}}
    approving = threading.Thread(
        target=lambda: answers.append(httpx.post(f"{server.url}/graphql", json=body, timeout=120))
    )
    approving.start()
    return approving, answers


def _completed(server: Server, run_id: str, within: float = 90) -> Any:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        run = server.query(RUN_STATUS, {"runId": run_id})["data"]["agentRun"]
        if run and run["status"] == "COMPLETED":
            return run
        time.sleep(0.5)
    raise AssertionError(f"run {run_id} did not complete within {within:g}s")


RUN_STATUS = "query($runId: ID!) { agentRun(runId: $runId) { status output } }"


def _wait_for_file(path: Path, within: float = 60) -> None:
    deadline = time.monotonic() + within
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} did not appear"
        time.sleep(0.05)
