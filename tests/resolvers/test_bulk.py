"""decideToolCalls (resolvers/bulk.py): each item answered in order, as its own mutation."""

from __future__ import annotations

from typing import Any

from suspended_runs.runtime.demo import EXECUTIONS
from tests.helpers import RESULT, Gql, make_gql, start_run

BULK = f"""mutation($d: [ToolCallDecisionInput!]!) {{
  decideToolCalls(decisions: $d) {{ {RESULT} ... on InvalidArgs {{ message }} }} }}"""


async def bulk(gql: Gql, *decisions: dict[str, Any]) -> Any:
    return await gql(BULK, {"d": list(decisions)})


async def test_each_item_is_answered_in_order_as_its_own_mutation(gql) -> None:
    approve, decline, ask = (
        await start_run(gql, "file-cleaner", "delete /tmp/bulk-a"),
        await start_run(gql, "file-cleaner", "delete /tmp/bulk-b"),
        await start_run(gql, "city-asker", "Where?"),
    )
    before = len(EXECUTIONS)
    body = await bulk(
        gql,
        {"runId": approve["runId"], "action": "APPROVE"},
        {"runId": decline["runId"], "action": "DECLINE", "reason": "keep b"},
        {"runId": ask["runId"], "action": "RESUME", "resumeData": {"name": "Oslo"}},
        {"runId": "nope", "action": "APPROVE"},
        {"runId": approve["runId"], "action": "APPROVE"},
        {"runId": ask["runId"], "action": "RESUME", "resumeData": {"nom": 1}},
    )
    answers = body["data"]["decideToolCalls"]
    assert [a["__typename"] for a in answers[:4]] == [
        "RunDecided",
        "RunDecided",
        "RunDecided",
        "RunNotFound",
    ]
    assert [a["run"]["status"] for a in answers[:3]] == ["COMPLETED"] * 3
    # The repeats raced their first decisions: each answers as its own mutation would.
    assert answers[4]["__typename"] in ("RunDecided", "AlreadyDecided", "RunNotSuspended")
    assert answers[5]["__typename"] in ("InvalidResumeData", "RunNotSuspended", "AlreadyDecided")
    assert EXECUTIONS[before:].count(("delete_file", {"path": "/tmp/bulk-a"})) == 1
    assert ("delete_file", {"path": "/tmp/bulk-b"}) not in EXECUTIONS[before:]


async def test_a_bad_item_refuses_the_whole_list_and_nothing_is_applied(gql) -> None:
    run = await start_run(gql, "file-cleaner")
    body = await bulk(
        gql,
        {"runId": run["runId"], "action": "APPROVE"},
        {"runId": run["runId"], "action": "DECLINE", "editedArgs": {"path": "/x"}},
    )
    assert body["errors"][0]["extensions"] == {
        "code": "BAD_USER_INPUT",
        "argument": "decisions[1].editedArgs",
    }
    still = await gql("query($id: ID!) { agentRun(runId: $id) { status } }", {"id": run["runId"]})
    assert still["data"]["agentRun"]["status"] == "SUSPENDED"


async def test_more_than_the_maximum_is_a_bad_argument(settings, start_app) -> None:
    gql = make_gql(await start_app(settings.model_copy(update={"bulk_decisions_max": 2})))
    body = await bulk(gql, *({"runId": f"r{i}", "action": "APPROVE"} for i in range(3)))
    assert body["errors"][0]["extensions"]["argument"] == "decisions"
