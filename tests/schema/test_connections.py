"""Relay connections (schema/connections.py) beside the pages: the same runs in the same
order with the same cursors, `totalCount` as `total`, the log and deliveries paged as
their lists, and `subscription { suspendedRunsConnection }` pushed as the page is."""

from __future__ import annotations

import json
from typing import Any

from suspended_runs.storage import RunIndex
from tests.builders import calls_of
from tests.graphql_ws import next_for, open_session
from tests.helpers import (
    APPROVE,
    RESUME,
    Gql,
    ThreadedServer,
    act,
    eventually,
    start_run,
    suspended_doc,
)

EDGES = """edges { cursor node { id runId status } }
  pageInfo { hasNextPage hasPreviousPage startCursor endCursor }"""
CONNECTION = f"""query($filter: SuspendedRunsFilter, $first: Int, $after: String) {{
  suspendedRunsConnection(filter: $filter, first: $first, after: $after) {{
    totalCount {EDGES} }} }}"""
PAGE = """query($filter: SuspendedRunsFilter, $first: Int, $after: String) {
  suspendedRuns(filter: $filter, first: $first, after: $after) {
    total hasMore nextCursor runs { runId } } }"""
RUNS = f"""query($first: Int, $after: String) {{
  runsConnection(filter: {{status: [COMPLETED]}}, first: $first, after: $after) {{
    totalCount {EDGES} }} }}"""
LOG = """query($run: ID!, $first: Int, $after: String) {
  decisionLogConnection(runId: $run, first: $first, after: $after) {
    totalCount edges { cursor node { id action toolCallId } }
    pageInfo { hasNextPage endCursor } } }"""
DELIVERIES = """query($id: ID!, $first: Int, $after: String) {
  webhookDeliveriesConnection(webhookId: $id, first: $first, after: $after) {
    totalCount edges { cursor node { id runId } } pageInfo { hasNextPage endCursor } } }"""


async def ask(gql: Gql, query: str, **variables: Any) -> Any:
    body = await gql(query, variables)
    assert "errors" not in body, body
    return next(iter(body["data"].values()))


async def test_a_connection_pages_the_runs_of_the_list_with_its_cursors(gql, snapshots) -> None:
    await snapshots.insert_many([suspended_doc(f"run-{i}", resourceId="r") for i in range(5)])
    run_filter = {"resourceId": "r"}
    await eventually(lambda: _total(gql, run_filter), within=5)
    pages = await keyset_pages(gql, run_filter)
    listed = [r["runId"] for page in pages for r in page["runs"]]
    seen, after = [], None
    for page in pages:
        shown = await ask(gql, CONNECTION, filter=run_filter, first=2, after=after)
        assert shown["totalCount"] == page["total"] == 5
        assert [e["node"]["runId"] for e in shown["edges"]] == [r["runId"] for r in page["runs"]]
        info = shown["pageInfo"]
        assert info["hasNextPage"] == page["hasMore"] and not info["hasPreviousPage"]
        assert (info["startCursor"], info["endCursor"]) == (
            shown["edges"][0]["cursor"],
            shown["edges"][-1]["cursor"],
        )
        if page["nextCursor"]:
            assert info["endCursor"] == page["nextCursor"]
        seen += shown["edges"]
        after = info["endCursor"]
    assert [e["node"]["runId"] for e in seen] == listed
    # Any edge's cursor pages on from it.
    rest = await ask(gql, CONNECTION, filter=run_filter, first=10, after=seen[1]["cursor"])
    assert [e["node"]["runId"] for e in rest["edges"]] == listed[2:]
    empty = await ask(gql, CONNECTION, filter={"resourceId": "nobody"})
    assert empty == {
        "totalCount": 0,
        "edges": [],
        "pageInfo": {
            "hasNextPage": False,
            "hasPreviousPage": False,
            "startCursor": None,
            "endCursor": None,
        },
    }


async def test_total_count_is_counted_only_when_selected(gql, snapshots, monkeypatch) -> None:
    await snapshots.insert_many([suspended_doc(f"run-{i}", resourceId="r") for i in range(3)])
    run_filter = {"resourceId": "r"}
    await eventually(lambda: _total(gql, run_filter, 3), within=5)
    counts = calls_of(monkeypatch, RunIndex, "count")
    for field in ("suspendedRunsConnection", "runsConnection"):
        edges = f'{field}(filter: {{resourceId: "r"}}, first: 2) {{ edges {{ cursor }} }}'
        assert len((await ask(gql, f"{{ {edges} }}"))["edges"]) == 2
    assert counts == []
    counted = await ask(
        gql,
        '{ suspendedRunsConnection(filter: {resourceId: "r"}, first: 2) { ...C } }'
        " fragment C on AgentRunConnection { totalCount }",
    )
    assert counted == {"totalCount": 3} and len(counts) == 1


async def keyset_pages(gql: Gql, run_filter: dict[str, Any]) -> list[Any]:
    """`suspendedRuns` pages of 2, by cursor, to the last."""
    cursor, pages = None, []
    while True:
        page = await ask(gql, PAGE, filter=run_filter, first=2, after=cursor)
        pages.append(page)
        if not (cursor := page["nextCursor"]):
            return pages


async def _total(gql: Gql, run_filter: dict[str, Any], total: int = 5) -> bool:
    return bool((await ask(gql, PAGE, filter=run_filter))["total"] == total)


async def test_runs_and_a_runs_log_page_as_connections(gql) -> None:
    run = await start_run(gql, "trip-planner")
    approval = next(c for c in run["toolCalls"] if c["requiresApproval"])
    await act(gql, APPROVE, runId=run["runId"], toolCallId=approval["toolCallId"])
    resumed = await act(gql, RESUME, runId=run["runId"], resumeData={"name": "Oslo"})
    assert resumed["run"]["status"] == "COMPLETED", resumed
    first = await ask(gql, LOG, run=run["runId"], first=1)
    assert first["totalCount"] == 2 and first["pageInfo"]["hasNextPage"]
    rest = await ask(gql, LOG, run=run["runId"], first=5, after=first["pageInfo"]["endCursor"])
    actions = [e["node"]["action"] for e in first["edges"] + rest["edges"]]
    assert actions == ["APPROVE", "RESUME"] and not rest["pageInfo"]["hasNextPage"]
    done = await ask(gql, RUNS, first=1)
    assert done["totalCount"] == 1
    assert [e["node"]["runId"] for e in done["edges"]] == [run["runId"]]


async def test_deliveries_page_as_a_connection(gql) -> None:
    made = await gql(
        'mutation { createWebhook(input: {url: "http://127.0.0.1:9/hook", '
        "events: [RUN_SUSPENDED]}) { ... on WebhookCreated { webhook { id } } } }"
    )
    webhook_id = made["data"]["createWebhook"]["webhook"]["id"]
    runs = [(await start_run(gql, "file-cleaner"))["runId"] for _ in range(3)]

    async def three() -> bool:
        return bool((await ask(gql, DELIVERIES, id=webhook_id))["totalCount"] == 3)

    await eventually(three, within=15)
    first = await ask(gql, DELIVERIES, id=webhook_id, first=2)
    assert first["pageInfo"]["hasNextPage"]
    rest = await ask(gql, DELIVERIES, id=webhook_id, after=first["pageInfo"]["endCursor"])
    shown = [e["node"]["runId"] for e in first["edges"] + rest["edges"]]
    assert sorted(shown) == sorted(runs) and not rest["pageInfo"]["hasNextPage"]
    assert [e["cursor"] for e in first["edges"]] == [e["node"]["id"] for e in first["edges"]]


WATCH = f"""subscription {{ suspendedRunsConnection(filter: {{agentId: "file-cleaner"}}) {{
  totalCount {EDGES} }} }}"""


async def test_the_connection_is_pushed_again_when_it_changes(settings, gql) -> None:
    with ThreadedServer(settings) as url:
        ws = await open_session(url)
        try:
            await ws.send(_subscribe(WATCH))
            first = await next_for(ws, "c")
            assert first["payload"]["data"]["suspendedRunsConnection"]["totalCount"] == 0
            run = await start_run(gql, "file-cleaner")
            pushed = (await next_for(ws, "c"))["payload"]["data"]["suspendedRunsConnection"]
            assert pushed["totalCount"] == 1
            assert [e["node"]["runId"] for e in pushed["edges"]] == [run["runId"]]
        finally:
            await ws.close()


def _subscribe(query: str) -> str:
    return json.dumps({"id": "c", "type": "subscribe", "payload": {"query": query}})
