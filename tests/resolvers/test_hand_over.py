"""Hand-overs on the real server (resolvers/hand_over.py): a run handed to a colleague is
theirs to decide, listed as assigned to them once, and announced."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from suspended_runs.storage.types import EVENTS_COLLECTION
from tests.helpers import APPROVE, Gql, act, make_gql
from tests.helpers import start_run as start

ASSIGN = """mutation($input: AssignRunInput!) { assignRun(input: $input) { __typename
  ... on Problem { message }
  ... on RunAssigned { run { inReviewBy toolCalls { assignedTo } } } } }"""
REVIEW = """mutation($input: StartReviewInput!) { startReview(input: $input) { __typename } }"""
MINE = """{ suspendedRuns(filter: {assignedToMe: true}) { total runs { runId } } }"""
POLICY = {"agentId": "file-cleaner", "reviewers": ["key:alice"]}


async def mine(gql: Gql) -> tuple[list[str], int]:
    page = (await gql(MINE))["data"]["suspendedRuns"]
    return [run["runId"] for run in page["runs"]], page["total"]


async def test_a_run_handed_over_is_the_colleague_s_to_decide(reviewed: Callable[..., Any]) -> None:
    async with reviewed(POLICY) as who:
        run_id = (await start(who["starter"], "file-cleaner"))["runId"]
        assert (await act(who["bob"], APPROVE, runId=run_id))["__typename"] == "NotAReviewer"
        assert await mine(who["bob"]) == ([], 0)
        handed = await act(who["starter"], ASSIGN, runId=run_id, to=["key:Bob", "key:bob"])
        assert handed["__typename"] == "RunAssigned"
        assert handed["run"]["toolCalls"][0]["assignedTo"] == ["key:alice", "key:bob"]
        assert await mine(who["bob"]) == ([run_id], 1)
        assert await mine(who["alice"]) == ([run_id], 1)  # by the policy and a hand-over: once
        assert (await act(who["bob"], APPROVE, runId=run_id))["__typename"] == "RunDecided"
        assert await mine(who["bob"]) == ([], 0)


async def test_its_reviewer_hands_a_run_to_a_group_and_stops_reviewing_it(
    reviewed: Callable[..., Any],
) -> None:
    async with reviewed(POLICY) as who:
        run_id = (await start(who["starter"], "file-cleaner"))["runId"]
        refused = await act(who["alice"], ASSIGN, runId=run_id, to=["group:ops"])
        assert refused["__typename"] == "Forbidden"  # not an admin, and not reviewing it
        await act(who["alice"], REVIEW, runId=run_id)
        handed = await act(who["alice"], ASSIGN, runId=run_id, to=["group:ops"])
        assert handed["__typename"] == "RunAssigned"
        assert handed["run"]["inReviewBy"] is None
        assert await mine(who["p3"]) == ([run_id], 1)
        assert (await act(who["p3"], REVIEW, runId=run_id))["__typename"] == "ReviewStarted"
        assert (await act(who["p3"], APPROVE, runId=run_id))["__typename"] == "RunDecided"


async def test_a_reviewer_hands_over_no_more_than_they_may_decide(
    reviewed: Callable[..., Any],
) -> None:
    policies = [
        {"agentId": "trip-planner", "toolName": "delete_file", "reviewers": ["key:alice"]},
        {"agentId": "trip-planner", "toolName": "ask_city", "reviewers": ["key:carol"]},
    ]
    async with reviewed(*policies) as who:
        run_id = (await start(who["starter"], "trip-planner"))["runId"]
        await act(who["alice"], REVIEW, runId=run_id)
        refused = await act(who["alice"], ASSIGN, runId=run_id, to=["key:mallory"])
        assert refused["__typename"] == "NotAReviewer"


async def test_names_that_are_no_one_are_refused(reviewed: Callable[..., Any]) -> None:
    async with reviewed() as who:
        run_id = (await start(who["starter"], "file-cleaner"))["runId"]
        for to in ([], ["token:bob"], ["key: bob"], ["person:"], ["bob"], ["key:x"] * 21):
            body = await who["starter"](ASSIGN, {"input": {"runId": run_id, "to": to}})
            assert body["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT", to
        assert (await act(who["bob"], APPROVE, runId=run_id))["__typename"] == "RunDecided"
        done = await act(who["starter"], ASSIGN, runId=run_id, to=["key:bob"])
        assert done["__typename"] == "RunNotSuspended"


async def test_reviews_and_hand_overs_are_events_and_audited(
    reviewed: Callable[..., Any], db
) -> None:
    webhook = """mutation { createWebhook(input: {url: "https://example.com/h",
      events: [RUN_IN_REVIEW, RUN_ASSIGNED]}) { __typename } }"""
    async with reviewed() as who:
        assert (await who["starter"](webhook))["data"]["createWebhook"]["__typename"] == (
            "WebhookCreated"
        )
        run_id = (await start(who["starter"], "file-cleaner"))["runId"]
        await act(who["alice"], REVIEW, runId=run_id)
        await act(who["alice"], REVIEW, runId=run_id)  # extended: no new event
        await act(who["alice"], ASSIGN, runId=run_id, to=["group:ops"])
        query = {"runId": run_id, "type": {"$in": ["run.in_review", "run.assigned"]}}
        found = [e async for e in db[EVENTS_COLLECTION].find(query, sort=[("at", 1)])]
        assert [e["type"] for e in found] == ["run.in_review", "run.assigned"]
        log = """query($id: ID!) { decisionLog(runId: $id) { action decidedBy reason } }"""
        records = (await who["starter"](log, {"id": run_id}))["data"]["decisionLog"]
        assert records[-1] == {"action": "ASSIGN", "decidedBy": "key:alice", "reason": "group:ops"}


async def test_another_tenant_s_admin_finds_no_run(tenants: dict[str, Any]) -> None:
    other = make_gql(tenants["client"], {"x-api-key": tenants["keys"]["a-admin"]})
    assert (await act(other, ASSIGN, runId="b-0", to=["key:x"]))["__typename"] == "RunNotFound"
