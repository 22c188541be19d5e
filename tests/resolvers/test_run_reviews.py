"""Reviews on the real server (resolvers/run_reviews.py): one reviewer at a time, others'
decisions held off unless forced, races decided by the index, and every list and
subscription told."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from suspended_runs.server import Settings
from suspended_runs.storage import RUNS_COLLECTION
from tests.graphql_ws import next_for, open_session, subscribe
from tests.helpers import (
    APPROVE,
    CANCEL,
    DECLINE,
    Gql,
    ThreadedServer,
    act,
    make_gql,
)
from tests.helpers import start_run as start

REVIEWED = "... on InReviewByOther { runId inReviewBy inReviewUntil }"
START = f"""mutation($input: StartReviewInput!) {{ startReview(input: $input) {{ __typename
  ... on Problem {{ message }} {REVIEWED}
  ... on ReviewStarted {{ run {{ runId inReviewBy inReviewUntil }} }} }} }}"""
END = f"""mutation($input: EndReviewInput!) {{ endReview(input: $input) {{ __typename
  ... on Problem {{ message }} {REVIEWED} ... on ReviewEnded {{ run {{ inReviewBy }} }} }} }}"""
DECIDE_MANY = f"""mutation($decisions: [ToolCallDecisionInput!]!) {{
  decideToolCalls(decisions: $decisions) {{ __typename {REVIEWED} }} }}"""
LISTED = """query($filter: SuspendedRunsFilter) { suspendedRuns(filter: $filter) {
  total runs { runId inReviewBy } } }"""


async def review(gql: Gql, run_id: str, **more: Any) -> dict[str, Any]:
    return await act(gql, START, runId=run_id, **more)


async def listed(gql: Gql, **narrower: Any) -> tuple[list[str], int]:
    page = (await gql(LISTED, {"filter": narrower}))["data"]["suspendedRuns"]
    return sorted(run["runId"] for run in page["runs"]), page["total"]


async def test_of_reviewers_starting_at_once_one_wins_and_the_others_learn_who_until_when(
    reviewed: Callable[..., Any],
) -> None:
    async with reviewed() as who:
        run_id = (await start(who["starter"], "file-cleaner"))["runId"]
        people = [f"p{i}" for i in range(10)]
        answers = await asyncio.gather(*(review(who[p], run_id) for p in people))
        kinds = sorted(a["__typename"] for a in answers)
        assert kinds == ["InReviewByOther"] * 9 + ["ReviewStarted"]
        winner = next(a["run"] for a in answers if a["__typename"] == "ReviewStarted")
        assert winner["inReviewBy"].startswith("key:p")
        for lost in (a for a in answers if a["__typename"] == "InReviewByOther"):
            assert (lost["inReviewBy"], lost["inReviewUntil"]) == (
                winner["inReviewBy"],
                winner["inReviewUntil"],
            )
            assert winner["inReviewBy"] in lost["message"]


async def test_a_review_holds_off_others_decisions_unless_they_force_them(
    reviewed: Callable[..., Any],
) -> None:
    async with reviewed() as who:
        run_id = (await start(who["starter"], "file-cleaner"))["runId"]
        started = await review(who["alice"], run_id, minutes=5)
        until = datetime.fromisoformat(started["run"]["inReviewUntil"])
        assert timedelta(minutes=4) < until - datetime.now(UTC) <= timedelta(minutes=5)
        for mutation in (APPROVE, DECLINE):
            held = await act(who["bob"], mutation, runId=run_id)
            assert held["__typename"] == "InReviewByOther", held
            assert "force: true" in held["message"]
        assert (await review(who["alice"], run_id, minutes=30))["__typename"] == "ReviewStarted"
        forced = await act(who["bob"], APPROVE, runId=run_id, force=True)
        assert forced["__typename"] == "RunDecided"

        own = (await start(who["starter"], "file-cleaner"))["runId"]
        await review(who["alice"], own)
        assert (await act(who["alice"], APPROVE, runId=own))["__typename"] == "RunDecided"


async def test_under_a_strict_policy_nobody_forces_and_an_approver_cannot_cancel(
    reviewed: Callable[..., Any],
) -> None:
    async with reviewed({"agentId": "file-cleaner", "strictReviews": True}) as who:
        run_id = (await start(who["starter"], "file-cleaner"))["runId"]
        await review(who["alice"], run_id)
        forced = await act(who["bob"], APPROVE, runId=run_id, force=True)
        assert forced["__typename"] == "InReviewByOther"
        assert "allows no force" in forced["message"]
        cancelled = await act(who["bob"], CANCEL, runId=run_id)
        assert cancelled["__typename"] == "InReviewByOther"
        cancelled = await act(who["starter"], CANCEL, runId=run_id)  # an admin
        assert cancelled["__typename"] == "RunCancelled"


async def test_in_decide_tool_calls_the_rule_applies_per_run(reviewed: Callable[..., Any]) -> None:
    async with reviewed() as who:
        runs = [(await start(who["starter"], "file-cleaner"))["runId"] for _ in range(3)]
        await review(who["alice"], runs[0])
        decisions = [{"runId": r, "action": "APPROVE"} for r in runs[:2]]
        body = await who["bob"](DECIDE_MANY, {"decisions": decisions})
        kinds = [a["__typename"] for a in body["data"]["decideToolCalls"]]
        assert kinds == ["InReviewByOther", "RunDecided"]
        forced = [{"runId": runs[0], "action": "APPROVE", "force": True}]
        body = await who["bob"](DECIDE_MANY, {"decisions": forced})
        assert body["data"]["decideToolCalls"][0]["__typename"] == "RunDecided"


async def test_a_decision_racing_a_review_start_leaves_one_of_two_outcomes(
    reviewed: Callable[..., Any],
) -> None:
    async with reviewed() as who:
        seen = set()
        for _ in range(6):
            run_id = (await start(who["starter"], "file-cleaner"))["runId"]
            decided, started = await asyncio.gather(
                act(who["bob"], APPROVE, runId=run_id), review(who["alice"], run_id)
            )
            pair = (decided["__typename"], started["__typename"])
            assert pair in {("RunDecided", "RunNotSuspended"), ("InReviewByOther", "ReviewStarted")}
            seen.add(pair)
        assert seen  # which wins is the database's to say


async def test_a_run_that_no_longer_waits_is_not_reviewed(reviewed: Callable[..., Any]) -> None:
    async with reviewed() as who:
        run_id = (await start(who["starter"], "file-cleaner"))["runId"]
        assert (await act(who["bob"], APPROVE, runId=run_id))["__typename"] == "RunDecided"
        refused = await review(who["alice"], run_id)
        assert refused["__typename"] == "RunNotSuspended"
        assert (await act(who["alice"], END, runId=run_id))["__typename"] == "ReviewEnded"


async def test_an_expired_review_holds_nothing(reviewed: Callable[..., Any], db) -> None:
    async with reviewed() as who:
        run_id = (await start(who["starter"], "file-cleaner"))["runId"]
        await review(who["alice"], run_id)
        past = datetime.now(UTC) - timedelta(seconds=1)  # as its minutes pass
        await db[RUNS_COLLECTION].update_one({"runId": run_id}, {"$set": {"review.until": past}})
        assert await listed(who["bob"], inReview=True) == ([], 0)
        assert await listed(who["bob"], inReview=False) == ([run_id], 1)
        assert (await act(who["bob"], APPROVE, runId=run_id))["__typename"] == "RunDecided"


async def test_a_review_ends_by_its_reviewer_or_an_admin(reviewed: Callable[..., Any]) -> None:
    async with reviewed() as who:
        run_id = (await start(who["starter"], "file-cleaner"))["runId"]
        await review(who["alice"], run_id)
        refused = await act(who["bob"], END, runId=run_id)
        assert refused["__typename"] == "InReviewByOther"
        ended = await act(who["alice"], END, runId=run_id)
        assert ended == {"__typename": "ReviewEnded", "run": {"inReviewBy": None}}
        await review(who["bob"], run_id)
        assert (await act(who["starter"], END, runId=run_id))["__typename"] == "ReviewEnded"
        log = """query($id: ID!) { decisionLog(runId: $id) { action decidedBy reason } }"""
        actions = [r["action"] for r in (await who["starter"](log, {"id": run_id}))["data"]
                   ["decisionLog"]]  # fmt: skip
        assert actions == ["START_REVIEW", "END_REVIEW", "START_REVIEW", "END_REVIEW"]


async def test_bad_minutes_and_callers_who_may_not_review_are_refused(
    reviewed: Callable[..., Any],
) -> None:
    policy = {"agentId": "file-cleaner", "reviewers": ["key:alice"]}
    async with reviewed(policy, review_max_minutes=30) as who:
        run_id = (await start(who["starter"], "file-cleaner"))["runId"]
        for minutes in (0, 31):
            body = await who["alice"](START, {"input": {"runId": run_id, "minutes": minutes}})
            assert body["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
        assert (await review(who["bob"], run_id))["__typename"] == "NotAReviewer"
        assert (await review(who["alice"], run_id, minutes=30))["__typename"] == "ReviewStarted"


async def test_in_review_filters_list_whose_reviews_they_are(reviewed: Callable[..., Any]) -> None:
    async with reviewed() as who:
        runs = [(await start(who["starter"], "file-cleaner"))["runId"] for _ in range(3)]
        await review(who["alice"], runs[0])
        await review(who["bob"], runs[1])
        alice = who["alice"]
        assert await listed(alice, inReviewByMe=True) == ([runs[0]], 1)
        assert await listed(alice, inReview=True) == (sorted(runs[:2]), 2)
        assert await listed(alice, inReview=False) == ([runs[2]], 1)
        assert await listed(alice, inReviewByMe=False) == (sorted(runs[1:]), 2)
        assert await listed(alice, inReview=True, inReviewByMe=False) == ([runs[1]], 1)
        webhook = """mutation { createWebhook(input: {url: "https://example.com/h",
          events: [RUN_IN_REVIEW], filter: {inReview: true}}) {
          __typename ... on InvalidWebhook { field } } }"""
        made = (await who["starter"](webhook))["data"]["createWebhook"]
        assert made == {"__typename": "InvalidWebhook", "field": "filter.inReview"}


async def test_a_review_reaches_another_reviewer_s_subscription(
    settings: Settings, keys: tuple[Path, dict[str, str]]
) -> None:
    rules = settings.model_copy(update={"api_keys_file": keys[0]})
    page = "{ suspendedRuns { runs { runId inReviewBy inReviewUntil } } }"
    with ThreadedServer(rules) as url:
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            starter = make_gql(client, {"x-api-key": keys[1]["starter"]})
            run_id = (await start(starter, "file-cleaner"))["runId"]
            ws = await open_session(url, {"apiKey": keys[1]["bob"]})
            first = await subscribe(ws, "1", f"subscription {page}")
            assert first["payload"]["data"]["suspendedRuns"]["runs"][0]["inReviewBy"] is None
            alice = make_gql(client, {"x-api-key": keys[1]["alice"]})
            await review(alice, run_id)
            async with asyncio.timeout(5):
                pushed = (await next_for(ws, "1"))["payload"]["data"]["suspendedRuns"]
            assert pushed["runs"][0]["inReviewBy"] == "key:alice"
            await act(alice, END, runId=run_id)
            async with asyncio.timeout(5):
                pushed = (await next_for(ws, "1"))["payload"]["data"]["suspendedRuns"]
            assert pushed["runs"][0]["inReviewBy"] is None
            await ws.close()


async def test_another_tenant_s_approver_finds_no_run(tenants: dict[str, Any]) -> None:
    client = tenants["client"]
    other = make_gql(client, {"x-api-key": tenants["keys"]["b-approver"]})
    assert (await review(other, "a-0"))["__typename"] == "RunNotFound"
    assert (await act(other, END, runId="a-0"))["__typename"] == "RunNotFound"
    assert json.dumps(await listed(other, inReview=False)) == json.dumps((["b-0", "b-1"], 2))
