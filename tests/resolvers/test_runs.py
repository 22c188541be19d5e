"""`suspendedRuns` and `agentRun` over HTTP (resolvers/runs.py): parity, paging, arguments."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from bson import json_util

from suspended_runs.storage import RunIndex
from tests.builders import calls_of
from tests.helpers import (
    Gql,
    as_mastra,
    eventually,
    load_json,
    load_snapshots,
    make_gql,
    suspended_doc,
)

RUN_FIELDS = """
  runId agentId status runtime threadId resourceId createdAt suspendedAt
  toolCalls { toolCallId toolName args requiresApproval suspendPayload }
"""
LIST = f"""
query List($filter: SuspendedRunsFilter, $page: Int, $perPage: Int, $first: Int, $after: String) {{
  suspendedRuns(filter: $filter, page: $page, perPage: $perPage, first: $first, after: $after) {{
    total hasMore nextCursor runs {{ {RUN_FIELDS} }}
  }}
}}
"""


async def list_runs(gql: Gql, **variables: Any) -> dict[str, Any]:
    body = await gql(LIST, variables)
    assert "errors" not in body, body
    page: dict[str, Any] = body["data"]["suspendedRuns"]
    return page


ORACLE = load_json("list_suspended_runs.json")
CASES = [
    (agent, name, ORACLE["queries"][name], listing)
    for agent, listings in ORACLE["listings"].items()
    for name, listing in listings.items()
]


@pytest.mark.parametrize("stored_as", ["object", "json-string"])
@pytest.mark.parametrize(
    ("agent", "query_name", "query", "expected"),
    CASES,
    ids=[f"{a}-{q}" for a, q, _, _ in CASES],
)
async def test_listing_matches_what_mastra_returned(
    snapshots, settings, start_app, stored_as, agent, query_name, query, expected
) -> None:
    docs = load_snapshots()
    if stored_as == "json-string":  # what older writers stored
        docs = [dict(d, snapshot=json_util.dumps(d["snapshot"])) for d in docs]
    await snapshots.insert_many(docs)
    gql = make_gql(await start_app(settings))
    run_filter = {k: query[k] for k in ("threadId", "resourceId") if k in query}
    paging = {k: query[k] for k in ("page", "perPage") if k in query}
    page = await list_runs(gql, filter={"agentId": agent, **run_filter}, **paging)
    assert page["total"] == expected["total"]
    assert [as_mastra(r) for r in page["runs"]] == expected["runs"]
    assert {r["agentId"] for r in page["runs"]} <= {agent}


async def test_durable_run_is_listed_as_an_approval_with_args(snapshots, settings, start_app):
    await snapshots.insert_many(load_snapshots("durable_snapshots.extjson"))
    gql = make_gql(await start_app(settings))
    oracle = load_json("durable_list_suspended_runs.json")
    page = await list_runs(gql, filter={"agentId": oracle["agentId"]})
    assert page["total"] == oracle["expected"]["total"]
    assert [as_mastra(r) for r in page["runs"]] == oracle["expected"]["runs"]


def at(second: int) -> datetime:
    return datetime(2026, 11, 1, 12, 0, second % 60, tzinfo=UTC) + timedelta(minutes=second // 60)


async def seed_runs(snapshots, count: int, agent: str = "approver", **fields: Any) -> list[str]:
    """`count` suspended runs, two per createdAt second (ties exercise the runId order)."""
    docs = [
        suspended_doc(f"run-{agent}-{i:03d}", agent, createdAt=at(i // 2), updatedAt=at(i // 2))
        | fields
        for i in range(count)
    ]
    await snapshots.insert_many(docs)
    return [d["run_id"] for d in docs]


async def listed_ids(gql: Gql, **variables: Any) -> list[str]:
    return [r["runId"] for r in (await list_runs(gql, **variables))["runs"]]


async def test_runs_come_newest_first_with_run_id_breaking_ties(snapshots, gql, client) -> None:
    ids = await seed_runs(snapshots, 6)
    await eventually(lambda: has_total(gql, 6), within=2)
    expected = sorted(ids, key=lambda i: (-(int(i[-3:]) // 2), i))
    assert await listed_ids(gql) == expected


async def has_total(gql: Gql, total: int, **variables: Any) -> bool:
    return bool((await list_runs(gql, **variables))["total"] == total)


async def test_offset_paging_pages_and_counts_before_paging(snapshots, gql) -> None:
    ids = await seed_runs(snapshots, 7)
    await eventually(lambda: has_total(gql, 7), within=2)
    everything = await listed_ids(gql)
    assert sorted(everything) == sorted(ids)
    page = await list_runs(gql, page=1, perPage=3)
    assert page["total"] == 7
    assert [r["runId"] for r in page["runs"]] == everything[3:6]
    assert page["hasMore"] is True
    last = await list_runs(gql, page=2, perPage=3)
    assert ([r["runId"] for r in last["runs"]], last["hasMore"]) == (everything[6:], False)
    beyond = await list_runs(gql, page=9, perPage=3)
    assert (beyond["runs"], beyond["total"], beyond["hasMore"]) == ([], 7, False)


async def test_default_page_size_is_50_and_has_more_says_so(snapshots, gql) -> None:
    await seed_runs(snapshots, 51)
    await eventually(lambda: has_total(gql, 51), within=10)  # paging, not sync latency
    page = await list_runs(gql)
    assert (len(page["runs"]), page["hasMore"]) == (50, True)
    assert page["nextCursor"]
    rest = await list_runs(gql, first=50, after=page["nextCursor"])
    assert (len(rest["runs"]), rest["hasMore"], rest["nextCursor"]) == (1, False, None)


async def test_keyset_paging_neither_skips_nor_repeats_while_runs_come_and_go(
    snapshots, gql
) -> None:
    ids = await seed_runs(snapshots, 30)
    await eventually(lambda: has_total(gql, 30), within=10)
    order = await listed_ids(gql)
    seen: list[str] = []
    removed: set[str] = set()
    cursor = None
    round_ = 0
    while True:
        page = await list_runs(gql, first=7, after=cursor)
        seen += [r["runId"] for r in page["runs"]]
        if not page["hasMore"]:
            break
        cursor = page["nextCursor"]
        round_ += 1
        # Between pages: a newer run arrives, one already seen and one not yet seen leave.
        await snapshots.insert_one(
            suspended_doc(f"new-{round_}", createdAt=at(3600 + round_), updatedAt=at(3600))
        )
        unseen = [i for i in order if i not in seen and i not in removed]
        for gone in (seen[0 + round_], unseen[-1]):
            await snapshots.delete_one({"run_id": gone, "workflow_name": "agentic-loop"})
            removed.add(gone)
        expected_total = 30 + round_ - len(removed)

        async def settled(total: int = expected_total) -> bool:
            return await has_total(gql, total)

        await eventually(settled, within=3)
    assert len(seen) == len(set(seen)), "a run was listed twice"
    assert seen == [i for i in order if i in seen], "the order changed"
    # Every run that stayed is listed; none listed was deleted before its page was read.
    assert set(order) - removed <= set(seen)
    assert not any(i.startswith("new-") for i in seen)
    assert set(ids) == set(order)


async def test_filters_combine_and_date_bounds_are_inclusive(snapshots, gql) -> None:
    await seed_runs(snapshots, 6, "approver", resourceId="user-a")
    await seed_runs(snapshots, 4, "asker", resourceId="user-b")
    await eventually(lambda: has_total(gql, 10), within=2)
    assert await has_total(gql, 6, filter={"agentId": "approver"})
    assert await has_total(gql, 4, filter={"resourceId": "user-b"})
    assert await has_total(gql, 0, filter={"agentId": "approver", "resourceId": "user-b"})
    assert await has_total(gql, 6, filter={"threadId": "thread-1", "agentId": "approver"})
    bounds = {"fromDate": "2026-11-01T12:00:01.000Z", "toDate": "2026-11-01T12:00:02Z"}
    page = await list_runs(gql, filter={"agentId": "approver", **bounds})
    assert page["total"] == 4  # seconds 1 and 2, two runs each
    assert {r["createdAt"] for r in page["runs"]} == {
        "2026-11-01T12:00:01.000Z",
        "2026-11-01T12:00:02.000Z",
    }


async def test_agent_run_finds_one_run_and_null_for_unknown(snapshots, gql) -> None:
    [run_id] = await seed_runs(snapshots, 1)
    await eventually(lambda: has_total(gql, 1), within=2)
    query = f"query($id: ID!) {{ agentRun(runId: $id) {{ {RUN_FIELDS} }} }}"
    run = (await gql(query, {"id": run_id}))["data"]["agentRun"]
    assert (run["runId"], run["status"], run["agentId"]) == (run_id, "SUSPENDED", "approver")
    assert (await gql(query, {"id": "no-such-run"}))["data"]["agentRun"] is None


@pytest.mark.parametrize(
    ("variables", "argument"),
    [
        ({"perPage": 0, "page": 0}, "perPage"),
        ({"perPage": -1, "page": 0}, "perPage"),
        ({"perPage": 10, "page": -1}, "page"),
        ({"perPage": 501}, "perPage"),
        ({"first": 0}, "first"),
        ({"first": 501}, "first"),
        ({"first": 5, "page": 0}, "first"),
        ({"after": "not-a-cursor"}, "after"),
        ({"after": "WzEsMl0"}, "after"),  # base64 of [1,2]: well-formed, not ours
        (
            {"filter": {"fromDate": "2026-11-02T00:00:00Z", "toDate": "2026-11-01T00:00:00Z"}},
            "filter.fromDate",
        ),
    ],
)
async def test_bad_paging_arguments_are_bad_user_input(gql, variables, argument) -> None:
    body = await gql(LIST, variables)
    assert body["data"] is None
    [error] = body["errors"]
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert error["extensions"]["argument"] == argument
    assert error["message"]


@pytest.mark.parametrize(
    "variables",
    [
        {"page": "one"},
        {"filter": {"fromDate": "yesterday"}},
        {"filter": {"fromDate": "2026-11-01T00:00:00"}},  # no time zone
        {"filter": {"nope": 1}},
    ],
)
async def test_badly_typed_variables_are_bad_user_input(gql, variables) -> None:
    body = await gql(LIST, variables)
    assert body.get("data") is None
    assert {e["extensions"]["code"] for e in body["errors"]} == {"BAD_USER_INPUT"}


async def test_total_is_counted_only_when_selected(snapshots, gql, monkeypatch) -> None:
    await seed_runs(snapshots, 3)
    await eventually(lambda: has_total(gql, 3), within=2)
    counts = calls_of(monkeypatch, RunIndex, "count")
    body = await gql("{ suspendedRuns { hasMore runs { runId } } }")
    assert len(body["data"]["suspendedRuns"]["runs"]) == 3
    assert len(counts) == 0
    body = await gql("{ suspendedRuns { ...P } } fragment P on SuspendedRunsPage { total }")
    assert body["data"]["suspendedRuns"]["total"] == 3
    assert len(counts) == 1


async def test_keyset_pages_within_a_date_range_equal_the_offset_listing(snapshots, gql) -> None:
    await seed_runs(snapshots, 20)  # two runs a second: ties at every cursor
    await eventually(lambda: has_total(gql, 20), within=10)
    window = {"fromDate": "2026-11-01T12:00:02Z", "toDate": "2026-11-01T12:00:07Z"}
    everything = await listed_ids(gql, filter=window)
    assert len(everything) == 12
    walked: list[str] = []
    cursor = None
    while True:
        page = await list_runs(gql, filter=window, first=5, after=cursor)
        walked += [r["runId"] for r in page["runs"]]
        if not page["hasMore"]:
            break
        cursor = page["nextCursor"]
    assert walked == everything


HISTORY = """query($filter: RunsFilter, $first: Int, $after: String) {
  runs(filter: $filter, first: $first, after: $after) {
    total hasMore nextCursor runs { runId status } } }"""


async def history(gql: Gql, statuses: list[str] | None, **paging: Any) -> dict[str, Any]:
    body = await gql(HISTORY, {"filter": {"status": statuses}, **paging})
    assert "errors" not in body, body
    page: dict[str, Any] = body["data"]["runs"]
    return page


async def _claimed(db, run_id: str, expires: datetime) -> None:
    """A RUNNING entry whose claim expires at `expires` (in the past: STALLED).

    A Python run: the follower settles a STALLED Mastra run with no snapshot as COMPLETED
    (Mastra deletes a finished run's snapshot), which would race with the lists below."""
    now = datetime.now(UTC)
    await db["suspended_runs_index"].insert_one(
        {
            "runId": run_id,
            "workflowName": "suspended-runs.python-agent",
            "runtime": "python",
            "agentId": "a",
            "status": "RUNNING",
            "createdAt": now,
            "suspendedAt": now,
            "toolCalls": [],
            "version": 1,
            "claim": {"by": "gone", "at": now, "expiresAt": expires},
        }
    )


async def test_runs_lists_the_states_asked_for_newest_first(gql, db) -> None:
    from tests.helpers import APPROVE, act, start_run

    done = (await start_run(gql, "file-cleaner"))["runId"]
    await act(gql, APPROVE, runId=done)
    waiting = (await start_run(gql, "file-cleaner"))["runId"]
    await _claimed(db, "stalled-1", datetime.now(UTC) - timedelta(minutes=1))
    await _claimed(db, "running-1", datetime.now(UTC) + timedelta(hours=1))
    for statuses, expected in [
        (["COMPLETED"], [done]),
        (["STALLED"], ["stalled-1"]),
        (["RUNNING"], ["running-1"]),
        (["RUNNING", "STALLED"], ["running-1", "stalled-1"]),
        (["SUSPENDED", "COMPLETED"], [waiting, done]),
    ]:
        page = await history(gql, statuses)
        assert [r["runId"] for r in page["runs"]] == expected, statuses
        assert page["total"] == len(expected)
        assert {r["status"] for r in page["runs"]} == set(statuses)
    everything = [r["runId"] for r in (await history(gql, None))["runs"]]
    assert set(everything) == {done, waiting, "stalled-1", "running-1"}
    one_by_one, after = [], None
    while True:  # keyset pages through the merge of several states give the same order
        page = await history(gql, None, first=1, after=after)
        one_by_one += [r["runId"] for r in page["runs"]]
        if not page["hasMore"]:
            break
        after = page["nextCursor"]
    assert one_by_one == everything


async def test_runs_with_an_empty_status_list_is_a_bad_argument(gql) -> None:
    body = await gql(HISTORY, {"filter": {"status": []}})
    assert body["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"


def _cursor(millis: int, run_id: str = "r") -> str:
    return base64.urlsafe_b64encode(json.dumps([millis, run_id]).encode()).decode().rstrip("=")


FIRST_MS, LAST_MS = -62135596800000, 253402300799999
"""0001-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z in epoch milliseconds."""


async def test_dates_and_cursors_at_the_ends_of_the_calendar_answer_as_bounds(
    snapshots, gql
) -> None:
    ids = await seed_runs(snapshots, 3)
    await eventually(lambda: has_total(gql, 3), within=2)
    start, end = "0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999Z"
    for window, listed in (
        ({"fromDate": start}, 3),
        ({"toDate": end}, 3),
        ({"fromDate": start, "toDate": end}, 3),
        ({"fromDate": end}, 0),
        ({"toDate": start}, 0),
        ({"fromDate": "9999-12-31T23:59:59.9995Z"}, 0),
    ):
        page = await list_runs(gql, filter=window)
        assert (page["total"], len(page["runs"])) == (listed, listed), window
    for after, listed in ((_cursor(FIRST_MS), 0), (_cursor(LAST_MS), 3)):
        page = await list_runs(gql, first=10, after=after)
        assert sorted(r["runId"] for r in page["runs"]) == (sorted(ids) if listed else [])
    for beyond in (_cursor(FIRST_MS - 1), _cursor(LAST_MS + 1), _cursor(10**30)):
        body = await gql(LIST, {"after": beyond})
        assert body["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    before_the_calendar = await gql(LIST, {"filter": {"fromDate": "0001-01-01T00:00:00+01:00"}})
    assert before_the_calendar["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"


async def test_rows_an_offset_skips_are_counted_in_the_budget(gql) -> None:
    body = await gql(LIST, {"page": 100, "perPage": 20})  # 2,000 skipped + 20 listed
    assert body["data"] is None
    [error] = body["errors"]
    assert error["extensions"] == {"code": "BAD_USER_INPUT", "limit": "MAX_ROWS_PER_REQUEST"}
    assert (await gql(LIST, {"page": 98, "perPage": 20}))["data"] is not None
