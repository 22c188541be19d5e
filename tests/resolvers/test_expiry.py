"""Approvals that expire (resolvers/expiry.py): declined once, as the system, audited."""

from __future__ import annotations

import json
from datetime import datetime

from suspended_runs.runtime.demo import EXECUTIONS
from tests.helpers import eventually, has_status, make_gql, start_run

EXPIRY = """query($id: ID!) { agentRun(runId: $id) { status suspendedAt decidedBy
  toolCalls { expiresAt decision { action reason decidedBy } } }
  decisionLog(runId: $id) { action decidedBy reason outcome } }"""


async def test_an_approval_past_its_timeout_is_declined_once_by_the_system(
    settings, start_app
) -> None:
    timeouts = {"decision_timeout_seconds": 1.0, "decision_timeouts": {"trip-planner": 600}}
    gql = make_gql(await start_app(settings.model_copy(update=timeouts)))
    before = len(EXECUTIONS)
    run = await start_run(gql, "file-cleaner", "delete /tmp/expiring")
    later = await start_run(gql, "trip-planner", "plan /tmp/later")
    shown = (await gql(EXPIRY, {"id": run["runId"]}))["data"]["agentRun"]
    waited = datetime.fromisoformat(shown["toolCalls"][0]["expiresAt"]) - datetime.fromisoformat(
        shown["suspendedAt"]
    )
    assert waited.total_seconds() == 1.0
    await eventually(lambda: has_status(gql, run["runId"], "COMPLETED"), within=5)
    # The audit's outcome is written once the answer is known, a moment after the run ends.
    await eventually(lambda: logged_outcome(gql, run["runId"], "RunDecided"), within=5)
    body = (await gql(EXPIRY, {"id": run["runId"]}))["data"]
    decision = body["agentRun"]["toolCalls"][0]["decision"]
    assert decision == {"action": "DECLINE", "reason": "expired after 1 s", "decidedBy": "system"}
    assert body["agentRun"]["decidedBy"] == "system"
    assert body["decisionLog"] == [
        {
            "action": "DECLINE",
            "decidedBy": "system",
            "reason": "expired after 1 s",
            "outcome": "RunDecided",
        }
    ]
    assert ("delete_file", {"path": "/tmp/expiring"}) not in EXECUTIONS[before:]
    planner = (await gql(EXPIRY, {"id": later["runId"]}))["data"]["agentRun"]
    assert planner["status"] == "SUSPENDED"  # its agent's own timeout: 600 s
    approval, question = planner["toolCalls"]
    assert approval["expiresAt"] is not None and question["expiresAt"] is None  # suspend()


async def logged_outcome(gql, run_id: str, outcome: str) -> bool:
    log = (await gql(EXPIRY, {"id": run_id}))["data"]["decisionLog"]
    return [entry["outcome"] for entry in log] == [outcome]


async def test_without_a_timeout_nothing_expires(gql) -> None:
    run = await start_run(gql, "file-cleaner")
    body = (await gql(EXPIRY, {"id": run["runId"]}))["data"]["agentRun"]
    assert body["toolCalls"][0]["expiresAt"] is None


async def test_a_review_policys_timeout_wins_over_the_agents_and_the_default(
    settings, start_app
) -> None:
    policy = {"agentId": "file-cleaner", "toolName": "delete_file", "decisionTimeoutSeconds": 1}
    rules = {
        "decision_timeout_seconds": 600.0,
        "decision_timeouts": {"file-cleaner": 600},
        "review_policies": json.dumps([policy]),
    }
    gql = make_gql(await start_app(settings.model_copy(update=rules)))
    run = await start_run(gql, "file-cleaner", "delete /tmp/policy")
    shown = (await gql(EXPIRY, {"id": run["runId"]}))["data"]["agentRun"]
    expires = datetime.fromisoformat(shown["toolCalls"][0]["expiresAt"])
    assert (expires - datetime.fromisoformat(shown["suspendedAt"])).total_seconds() == 1.0
    await eventually(lambda: has_status(gql, run["runId"], "COMPLETED"), within=5)
    decision = (await gql(EXPIRY, {"id": run["runId"]}))["data"]["agentRun"]["toolCalls"][0]
    assert decision["decision"]["reason"] == "expired after 1 s"


async def test_a_policy_for_every_agent_expires_an_agent_with_a_timeout_of_its_own(
    settings, start_app
) -> None:
    """A policy of `*` agents whose timeout equals DECISION_TIMEOUT_SECONDS still reaches the
    agents DECISION_TIMEOUTS names: its timeout is theirs too."""
    policy = {"agentId": "*", "decisionTimeoutSeconds": 1}
    rules = {
        "decision_timeout_seconds": 1.0,
        "decision_timeouts": {"file-cleaner": 600},
        "review_policies": json.dumps([policy]),
    }
    gql = make_gql(await start_app(settings.model_copy(update=rules)))
    run = await start_run(gql, "file-cleaner", "delete /tmp/every-agent")
    await eventually(lambda: has_status(gql, run["runId"], "COMPLETED"), within=5)


async def test_a_review_does_not_put_an_expiry_off(settings, start_app) -> None:
    """Under a policy whose reviews hold off even forced decisions (strictReviews)."""
    policy = [{"agentId": "file-cleaner", "strictReviews": True}]
    rules = {"review_policies": json.dumps(policy), "decision_timeout_seconds": 2.0}
    gql = make_gql(await start_app(settings.model_copy(update=rules)), {"x-actor": "alice"})
    run = await start_run(gql, "file-cleaner", "delete /tmp/reviewed")
    review = """mutation($id: ID!) { startReview(input: {runId: $id, minutes: 30}) {
      __typename } }"""
    started = (await gql(review, {"id": run["runId"]}))["data"]["startReview"]
    assert started == {"__typename": "ReviewStarted"}
    await eventually(lambda: has_status(gql, run["runId"], "COMPLETED"), within=8)
    body = (await gql(EXPIRY, {"id": run["runId"]}))["data"]["agentRun"]
    assert body["toolCalls"][0]["decision"]["decidedBy"] == "system"
