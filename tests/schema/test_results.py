"""Result members (schema/results.py): a refusal about a run carries the run, keyed by its
global id as the lists show it, so a client's cache corrects its entry after a lost race
(AlreadyDecided, StaleDecision, RunNotSuspended, WrongRunStatus, ...); `run` is `AgentRun!`
as on RunDecided, so one selection asks both (fields of one name must have one shape)."""

from __future__ import annotations

from typing import Any

from tests.helpers import Gql, start_run

CARRIED = """__typename ... on Problem { message }
  ... on AlreadyDecided { run { id status toolCalls { id decision { action } } } }
  ... on StaleDecision { run { id status } }
  ... on RunNotSuspended { run { id status } }
  ... on ToolCallNotFound { run { id status } }
  ... on WrongSuspensionKind { run { id status } }
  ... on RunDecided { run { id status } }"""
DECIDE = f"""mutation($d: [ToolCallDecisionInput!]!) {{ decideToolCalls(decisions: $d) {{
  {CARRIED} }} }}"""
RELEASE = """mutation($run: ID!) { releaseRun(input: {runId: $run}) {
  __typename ... on WrongRunStatus { status run { id status } } } }"""


async def decided(gql: Gql, *decisions: dict[str, Any]) -> list[Any]:
    body = await gql(DECIDE, {"d": list(decisions)})
    assert "errors" not in body, body
    answers: list[Any] = body["data"]["decideToolCalls"]
    return answers


async def id_of(gql: Gql, run_id: str) -> str:
    body = await gql("query($r: ID!) { agentRun(runId: $r) { id } }", {"r": run_id})
    node_id: str = body["data"]["agentRun"]["id"]
    return node_id


async def test_the_loser_of_a_race_gets_the_run_as_the_winner_left_it(gql) -> None:
    run = await start_run(gql, "file-cleaner")
    both = await decided(gql, *[{"runId": run["runId"], "action": "APPROVE"}] * 2)
    [won] = [a for a in both if a["__typename"] == "RunDecided"]  # decided at once: either
    [lost] = [a for a in both if a is not won]
    assert won["__typename"] == "RunDecided"
    assert lost["__typename"] in ("RunNotSuspended", "AlreadyDecided"), lost
    assert lost["run"]["id"] == won["run"]["id"] == await id_of(gql, run["runId"])
    assert lost["run"]["status"] in ("RUNNING", "COMPLETED")  # as the winner left it


async def test_already_decided_and_stale_decisions_carry_the_run(gql) -> None:
    run = await start_run(gql, "trip-planner")
    approval = next(c for c in run["toolCalls"] if c["requiresApproval"])
    other = next(c for c in run["toolCalls"] if not c["requiresApproval"])
    first = {"runId": run["runId"], "toolCallId": approval["toolCallId"]}
    declined, approved, stale, wrong, missing = await decided(
        gql,
        {**first, "action": "DECLINE", "reason": "no"},
        {**first, "action": "APPROVE"},
        {"runId": run["runId"], "toolCallId": other["toolCallId"], "action": "RESUME",
         "resumeData": {"name": "Oslo"}, "expectedArgsHash": "0" * 64},
        {"runId": run["runId"], "toolCallId": other["toolCallId"], "action": "APPROVE"},
        {"runId": run["runId"], "toolCallId": "nope", "action": "APPROVE"},
    )  # fmt: skip
    # The decisions of one decideToolCalls run at once: either of the two on one call wins.
    [won] = [a for a in (declined, approved) if a["__typename"] == "RunDecided"]
    [again] = [a for a in (declined, approved) if a is not won]
    assert again["__typename"] == "AlreadyDecided"
    decisions = {c["id"]: c["decision"] for c in again["run"]["toolCalls"]}
    winner = "DECLINE" if won is declined else "APPROVE"
    assert {d and d["action"] for d in decisions.values()} == {winner, None}
    node_id = await id_of(gql, run["runId"])
    for refused, kind in ((stale, "StaleDecision"), (wrong, "WrongSuspensionKind"),
                          (missing, "ToolCallNotFound"), (again, "AlreadyDecided")):  # fmt: skip
        assert (refused["__typename"], refused["run"]["id"]) == (kind, node_id), refused
        assert refused["run"]["status"] == "SUSPENDED"


async def test_operator_refusals_carry_the_run(gql) -> None:
    run = await start_run(gql, "file-cleaner")
    body = await gql(RELEASE, {"run": run["runId"]})
    refused = body["data"]["releaseRun"]
    assert (refused["__typename"], refused["status"]) == ("WrongRunStatus", "SUSPENDED")
    assert refused["run"] == {"id": await id_of(gql, run["runId"]), "status": "SUSPENDED"}
