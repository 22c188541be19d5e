"""Conditional polls (server/etag.py): ETag on GET, 304 without executing the operation,
and a change through another instance, or by Mastra, makes the tag stale."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from suspended_runs.schema import build_schema
from suspended_runs.server.etag import ConditionalGets
from suspended_runs.storage import RunIndex
from tests.helpers import APPROVE, act, eventually, make_gql, start_run, suspended_doc

LIST = "{ suspendedRuns(first: 5) { total runs { runId status } } }"


async def poll(
    client: httpx.AsyncClient, tag: str | None = None, query: str = LIST
) -> httpx.Response:
    headers = {"If-None-Match": tag} if tag else {}
    return await client.get("/graphql", params={"query": query}, headers=headers)


async def test_a_repeated_poll_is_304_until_a_change_through_another_instance(
    settings, start_app, monkeypatch
) -> None:
    one = await start_app(settings)
    other = await start_app(settings)  # a second instance on the same database
    run_id = (await start_run(make_gql(other), "file-cleaner"))["runId"]
    await asyncio.sleep(1.5)  # each follower's first look at deadlines makes a new version
    first = await poll(one)
    tag = first.headers["etag"]
    assert first.status_code == 200 and run_id in first.text
    assert first.headers["cache-control"] == "private, no-cache"
    executed = 0
    real_page = RunIndex.page

    async def counting(self: RunIndex, *args: Any, **kwargs: Any) -> Any:
        nonlocal executed
        executed += 1
        return await real_page(self, *args, **kwargs)

    monkeypatch.setattr(RunIndex, "page", counting)
    again = await poll(one, tag)
    assert (again.status_code, again.text, executed) == (304, "", 0)
    assert again.headers["etag"] == tag
    assert again.headers["cache-control"] == "private, no-cache"
    assert "Authorization" in again.headers["vary"]
    assert (await poll(other, tag)).status_code == 304  # the other instance agrees
    assert executed == 1  # by computing the same tag (it had none remembered)
    executed = 0
    await act(make_gql(other), APPROVE, runId=run_id)  # a decision through the other
    answers: list[httpx.Response] = []

    async def stale() -> bool:  # within the version's age (VERSION_AGE, 0.1 s)
        answers.append(await poll(one, tag))
        return answers[-1].status_code == 200

    assert await eventually(stale, within=1) < 1
    changed = answers[-1]
    assert changed.headers["etag"] != tag and executed == 1
    assert run_id not in changed.text  # no longer suspended
    assert (await poll(other, tag)).status_code == 200  # the instance that decided: at once


async def test_a_change_by_mastra_makes_the_tag_stale_within_the_sync_latency(
    settings, start_app, snapshots
) -> None:
    client = await start_app(settings)
    await asyncio.sleep(1.5)
    tag = (await poll(client)).headers["etag"]
    await snapshots.insert_one(suspended_doc("from-mastra"))

    async def stale() -> bool:
        return (await poll(client, tag)).status_code == 200

    assert await eventually(stale, within=2) < 2
    assert "from-mastra" in (await poll(client)).text


async def test_only_reads_of_the_run_index_are_tagged(settings, start_app) -> None:
    client = await start_app(settings)
    decisions = "query($r: ID!) { decisionLog(runId: $r) { action } }"
    answer = await client.get("/graphql", params={"query": decisions, "variables": '{"r": "x"}'})
    assert answer.status_code == 200 and "etag" not in answer.headers
    refused = await poll(client, query="{ suspendedRuns(first: 0) { total } }")
    assert "errors" in refused.text and "etag" not in refused.headers
    posted = await client.post("/graphql", json={"query": LIST})
    assert "etag" not in posted.headers
    tagged = await poll(
        client, query="query Q { agents { id } ...F } fragment F on Query { runs { total } }"
    )
    assert "etag" in tagged.headers


def test_which_operations_are_cacheable() -> None:
    cacheable = ConditionalGets(LIST, build_schema(), deployment="")._cacheable  # type: ignore[arg-type]
    assert cacheable("{ suspendedRuns { total } agentRun(runId: 1) { runId } }", None)
    assert cacheable("query A { agents { id } } mutation B { x }", "A")
    assert not cacheable("query A { agents { id } } mutation B { x }", "B")
    assert not cacheable("query A { agents { id } } query B { agents { id } }", None)
    assert not cacheable("{ decisionLog(runId: 1) { action } }", None)
    assert not cacheable("{ __schema { types { name } } }", None)
    assert not cacheable("{ ...F } fragment F on Query { ...F }", None)
    assert not cacheable("{ ...Missing }", None)
    assert not cacheable("{ not graphql", None)


async def test_a_dashboard_on_another_origin_may_poll_conditionally(settings, start_app) -> None:
    client = await start_app(settings.model_copy(update={"cors_origins": "https://dash.example"}))
    origin = {"origin": "https://dash.example"}
    asking = {"access-control-request-method": "GET"}
    asking["access-control-request-headers"] = "if-none-match"
    preflight = await client.options("/graphql", headers=origin | asking)
    assert preflight.status_code == 204
    assert "if-none-match" in preflight.headers["access-control-allow-headers"].lower()
    answer = await client.get("/graphql", params={"query": LIST}, headers=origin)
    assert "etag" in answer.headers["access-control-expose-headers"].lower()


async def test_a_tenants_tag_does_not_change_when_another_tenant_writes(tenants, snapshots) -> None:
    client, admin = tenants["client"], tenants["admin"]
    viewer = {"x-api-key": tenants["keys"]["a-viewer"]}
    query = "{ suspendedRuns { total runs { runId } } }"

    async def poll_as_a(tag: str | None = None) -> httpx.Response:
        headers = {**viewer, **({"If-None-Match": tag} if tag else {})}
        answer: httpx.Response = await client.get(
            "/graphql", params={"query": query}, headers=headers
        )
        return answer

    first = await poll_as_a()
    tag = first.headers["etag"]
    await snapshots.insert_one(suspended_doc("b-new", resourceId="tenant-b"))

    async def admin_sees(total: int) -> bool:
        body = (await client.get("/graphql", params={"query": query}, headers=admin)).json()
        return bool(body["data"]["suspendedRuns"]["total"] == total)

    await eventually(lambda: admin_sees(6), within=2)
    again = await poll_as_a(tag)
    assert (again.status_code, again.headers["etag"]) == (304, tag)  # nothing of tenant-a's
    await snapshots.insert_one(suspended_doc("a-new", resourceId="tenant-a"))
    await eventually(lambda: admin_sees(7), within=2)
    changed = await poll_as_a(tag)
    assert changed.status_code == 200 and changed.headers["etag"] != tag
    assert "a-new" in changed.text
