"""A run's conversation and whether it can be continued here (resolvers/conversation.py),
over GraphQL, for a Mastra run (a snapshot a real Mastra agent wrote) and a Python run."""

from __future__ import annotations

from typing import Any

from suspended_runs.server import Settings
from tests.helpers import APPROVE, Gql, act, eventually, make_gql, running_app, suspended_doc
from tests.helpers import start_run as start

CONVERSATION = """query($id: ID!, $last: Int!) { agentRun(runId: $id) {
  continuable notContinuableReason
  messages(last: $last) { role text toolCalls { toolName args } } } }"""


async def conversation(gql: Gql, run_id: str, last: int = 20) -> Any:
    return await gql(CONVERSATION, {"id": run_id, "last": last})


async def test_a_mastra_runs_messages_are_read_from_its_snapshot(
    settings: Settings, snapshots: Any
) -> None:
    await snapshots.insert_one(suspended_doc("m-talk"))
    async with running_app(settings) as client:
        gql = make_gql(client)

        async def indexed() -> bool:
            return (await conversation(gql, "m-talk"))["data"]["agentRun"] is not None

        await eventually(indexed, within=5)
        run = (await conversation(gql, "m-talk"))["data"]["agentRun"]
        last = (await conversation(gql, "m-talk", last=1))["data"]["agentRun"]["messages"]
    call = {"toolName": "deleteFile", "args": {"path": "/tmp/a.txt"}}
    assert run["messages"] == [
        {"role": "SYSTEM", "text": "x", "toolCalls": []},
        {
            "role": "USER",
            "text": 'CALL [{"toolName":"deleteFile","input":{"path":"/tmp/a.txt"}}]',
            "toolCalls": [],
        },
        {"role": "ASSISTANT", "text": None, "toolCalls": [call]},
    ]
    assert last == run["messages"][-1:]
    # No MASTRA_URL here: nothing can continue it, and the client is told why.
    assert run["continuable"] is False
    assert "no Mastra server is configured for agent 'approver'" in run["notContinuableReason"]


async def test_a_python_runs_messages_are_its_pydantic_ai_history(gql: Gql) -> None:
    run_id = (await start(gql, "file-cleaner", "please delete /tmp/talk.txt"))["runId"]
    run = (await conversation(gql, run_id))["data"]["agentRun"]
    assert run["continuable"] is True and run["notContinuableReason"] is None
    roles = [m["role"] for m in run["messages"]]
    assert "USER" in roles and roles[-1] == "ASSISTANT"
    said = next(m for m in run["messages"] if m["role"] == "USER")
    assert said["text"] == "please delete /tmp/talk.txt"
    asked = run["messages"][-1]["toolCalls"]
    assert asked == [{"toolName": "delete_file", "args": {"path": "/tmp/talk.txt"}}]
    await act(gql, APPROVE, runId=run_id)
    done = (await conversation(gql, run_id))["data"]["agentRun"]
    assert done["messages"] == []  # its snapshot is gone with the run's end


async def test_last_is_bounded_and_each_run_costs_a_row(settings: Settings) -> None:
    async with running_app(settings.model_copy(update={"max_rows_per_request": 3})) as client:
        gql = make_gql(client)
        run_ids = [(await start(gql, "file-cleaner"))["runId"] for _ in range(2)]
        for bad in (0, 101):
            errors = (await gql(CONVERSATION, {"id": run_ids[0], "last": bad}))["errors"]
            assert errors[0]["extensions"] == {"code": "BAD_USER_INPUT", "argument": "last"}
        page = "{ suspendedRuns(first: 2) { runs { runId %s } } }"
        assert "errors" not in await gql(page % "")
        over = await gql(page % "messages { role }")  # 2 rows of the page, and 2 reads
        assert over["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
