"""`assignedToMe` on the real server (resolvers/assignment.py): exactly the runs whose
pending calls a review policy assigns the caller, by subject, by group, and by escalation."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from suspended_runs.resolvers.access import Principal, Role, Scope
from suspended_runs.resolvers.assignment import assigned_bands
from suspended_runs.resolvers.review_policies import ReviewPolicies
from suspended_runs.server import Settings
from suspended_runs.storage import AssignedBand
from tests.graphql_ws import next_for, open_session, page_of, subscribe
from tests.helpers import (
    APPROVE,
    Gql,
    ThreadedServer,
    act,
    eventually,
    make_gql,
    suspended_doc,
)
from tests.helpers import start_run as start

POLICIES = [
    {"agentId": "file-cleaner", "toolName": "delete_file", "reviewers": ["key:alice"]},
    {
        "agentId": "billing",
        "reviewers": ["group:ops"],
        "escalateAfterSeconds": 3600,
        "escalateTo": ["key:carol"],
    },
    {"agentId": "open-desk"},  # any approver: assigned to nobody
    {"toolName": "deleteFile", "reviewers": ["key:bob"]},
]
MINE = """query($filter: SuspendedRunsFilter) {
  suspendedRuns(filter: $filter, first: 50) { total runs { runId toolCalls { assignedTo } } } }"""
HISTORY = """query { runs(filter: {assignedToMe: true, status: [SUSPENDED, COMPLETED]}) {
  total runs { runId } } }"""


async def mine(gql: Gql, **narrower: Any) -> tuple[set[str], int]:
    """The caller's runs, and their total; each listed run has a call assigned to it."""
    body = await gql(MINE, {"filter": {"assignedToMe": True, **narrower}})
    page = body["data"]["suspendedRuns"]
    return {run["runId"] for run in page["runs"]}, page["total"]


async def test_a_caller_lists_exactly_the_runs_assigned_to_it(
    reviewed: Callable[..., Any], snapshots: Any
) -> None:
    now = datetime.now(UTC)
    await snapshots.insert_many(
        [
            suspended_doc("billing-old", agent_id="billing"),  # waiting since the fixture's day
            suspended_doc("billing-new", agent_id="billing", updatedAt=now),
            suspended_doc("approver-1", agent_id="approver"),
            suspended_doc("nobodys", agent_id="open-desk"),
        ]
    )
    async with reviewed(*POLICIES) as who:
        python_run = (await start(who["starter"], "file-cleaner"))["runId"]

        async def indexed() -> bool:
            return (await mine(who["p3"]))[1] == 2

        await eventually(indexed, within=10)
        assert await mine(who["alice"]) == ({python_run}, 1)
        assert await mine(who["bob"]) == ({"approver-1"}, 1)
        assert await mine(who["p3"]) == ({"billing-old", "billing-new"}, 2)  # by group:ops
        assert await mine(who["carol"]) == ({"billing-old"}, 1)  # escalated after an hour
        assert await mine(who["mallory"]) == (set(), 0)
        assert await mine(who["bob"], agentId="approver", resourceId="nowhere") == (set(), 0)
        assert await mine(who["carol"], agentId="file-cleaner") == (set(), 0)

        page = (await who["p3"](MINE, {"filter": {"assignedToMe": True}}))["data"]
        assigned = [
            call["assignedTo"] for run in page["suspendedRuns"]["runs"] for call in run["toolCalls"]
        ]
        assert all("group:ops" in names for names in assigned)

        history = (await who["alice"](HISTORY))["data"]["runs"]
        assert ([run["runId"] for run in history["runs"]], history["total"]) == ([python_run], 1)
        decided = await act(who["alice"], APPROVE, runId=python_run)
        assert decided["__typename"] == "RunDecided"
        assert await mine(who["alice"]) == (set(), 0)  # decided: no longer waiting for alice
        unfiltered = await who["mallory"](MINE, {"filter": {"assignedToMe": False}})
        assert unfiltered["data"]["suspendedRuns"]["total"] == 4


async def test_assigned_to_me_names_a_caller_so_webhooks_and_stats_refuse_it(
    reviewed: Callable[..., Any],
) -> None:
    webhook = """mutation { createWebhook(input: {url: "https://example.com/h",
      events: [RUN_SUSPENDED], filter: {assignedToMe: true}}) {
      __typename ... on InvalidWebhook { field } } }"""
    stats = "query { decisionStats(filter: {assignedToMe: true}) { approved } }"
    async with reviewed(*POLICIES) as who:
        made = (await who["starter"](webhook))["data"]["createWebhook"]
        assert made == {"__typename": "InvalidWebhook", "field": "filter.assignedToMe"}
        refused = await who["alice"](stats)
        assert refused["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"


def test_tools_escalated_after_different_delays_make_disjoint_bands() -> None:
    policies = ReviewPolicies.parse(
        [
            {"agentId": "a", "toolName": "x", "reviewers": ["group:ops"]},
            {"agentId": "a", "toolName": "y", "escalateAfterSeconds": 60, "escalateTo": ["key:me"]},
            {
                "agentId": "a",
                "toolName": "z",
                "escalateAfterSeconds": 600,
                "escalateTo": ["key:me"],
            },
            {"agentId": "b", "reviewers": ["key:someone"]},
        ]
    )
    tools = {("a", "x"), ("a", "y"), ("a", "z"), ("b", "x"), ("c", "x")}
    me = Principal("key:me", Role.APPROVER, Scope.ALL, groups=frozenset({"ops"}))
    now = datetime(2026, 12, 1, tzinfo=UTC)
    minute, ten = now - timedelta(seconds=60), now - timedelta(seconds=600)
    assert assigned_bands(policies, tools, me, now) == (
        AssignedBand("a", ("x",), suspended_after=minute),
        AssignedBand("a", ("x", "y"), suspended_after=ten, suspended_upto=minute),
        AssignedBand("a", ("x", "y", "z"), suspended_upto=ten),
    )
    anonymous = Principal("anonymous", Role.ADMIN, Scope.ALL, authenticated=False)
    assert assigned_bands(policies, tools, anonymous, now) == ()


async def test_an_escalation_reaches_polls_and_subscriptions_without_a_write(
    settings: Settings, keys: tuple[Path, dict[str, str]]
) -> None:
    policy = {
        "agentId": "file-cleaner",
        "reviewers": ["key:alice"],
        "escalateAfterSeconds": 4,
        "escalateTo": ["key:carol"],
    }
    rules = settings.model_copy(
        update={"api_keys_file": keys[0], "review_policies": json.dumps([policy])}
    )
    mine = "{ suspendedRuns(filter: {assignedToMe: true}) { total runs { runId } } }"
    carol = {"x-api-key": keys[1]["carol"]}
    with ThreadedServer(rules) as url:
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            run_id = (
                await start(make_gql(client, {"x-api-key": keys[1]["starter"]}), "file-cleaner")
            )["runId"]
            ws = await open_session(url, {"apiKey": keys[1]["carol"]})
            first = await subscribe(ws, "1", f"subscription {mine}")
            assert first["payload"]["data"]["suspendedRuns"]["total"] == 0
            polled = await client.get("/graphql", params={"query": mine}, headers=carol)
            assert polled.json()["data"]["suspendedRuns"]["total"] == 0
            tag = {**carol, "if-none-match": polled.headers["etag"]}
            assert (
                await client.get("/graphql", params={"query": mine}, headers=tag)
            ).status_code == 304
            async with asyncio.timeout(15):  # escalated four seconds after it suspended
                pushed = await page_of(ws, "1", await next_for(ws, "1"), 1)
            assert [run["runId"] for run in pushed["runs"]] == [run_id]
            again = await client.get("/graphql", params={"query": mine}, headers=tag)
            assert again.status_code == 200, "an ETag'd poll answered as before the escalation"
            assert again.json()["data"]["suspendedRuns"]["runs"] == [{"runId": run_id}]
            await ws.close()
