"""`DateTime` and `JSON` (schema/scalars.py): exact in both directions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from bson import Decimal128, ObjectId

from suspended_runs.schema.scalars import json_value, parse_datetime, serialize_datetime
from tests.helpers import eventually, suspended_doc


@pytest.mark.parametrize(
    "text",
    ["2026-11-30T06:54:00.816Z", "2026-11-30T06:54:00.000Z", "2026-11-30T06:54:00.123456Z"],
)
def test_utc_datetimes_round_trip_exactly(text: str) -> None:
    assert serialize_datetime(parse_datetime(text)) == text


def test_offsets_are_read_and_returned_in_utc() -> None:
    parsed = parse_datetime("2026-11-30T08:54:00.816+02:00")
    assert parsed == datetime(2026, 11, 30, 6, 54, 0, 816000, tzinfo=UTC)
    assert serialize_datetime(parsed) == "2026-11-30T06:54:00.816Z"


@pytest.mark.parametrize("bad", ["2026-11-30T06:54:00", "yesterday", 1796021640, None])
def test_datetimes_without_zone_or_form_are_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="DateTime"):
        parse_datetime(bad)


def test_json_values_from_bson_become_plain_json() -> None:
    oid = ObjectId()
    when = datetime(2026, 1, 2, 3, 4, 5, 6000, tzinfo=timezone(timedelta(hours=1)))
    value = {"a": [1, 2.5, None, True, "x"], "when": when, "id": oid, "n": Decimal128("1.5")}
    assert json_value(value) == {
        "a": [1, 2.5, None, True, "x"],
        "when": "2026-01-02T02:04:05.006Z",
        "id": str(oid),
        "n": "1.5",
    }


async def test_json_and_dates_round_trip_over_http(snapshots, gql) -> None:
    args = {"path": "/tmp/ü.txt", "nested": {"list": [1, {"deep": None}], "n": 1.25}, "ok": False}
    doc = suspended_doc("json-1")
    approval = doc["snapshot"]["context"]["executionWorkflow"]["suspendPayload"]
    approval["requireToolApproval"]["args"] = args
    approval["__workflow_meta"]["foreachOutput"][0]["suspendPayload"]["requireToolApproval"][
        "args"
    ] = args
    await snapshots.insert_one(doc)
    query = """query($id: ID!) { agentRun(runId: $id) { createdAt toolCalls { args } } }"""

    async def shown() -> bool:
        return (await gql(query, {"id": "json-1"}))["data"]["agentRun"] is not None

    await eventually(shown, within=2)
    run = (await gql(query, {"id": "json-1"}))["data"]["agentRun"]
    assert run["toolCalls"][0]["args"] == args
    assert run["createdAt"] == "2026-11-30T06:54:00.753Z"
    # The date a client read back is accepted as an inclusive bound and finds the run.
    body = await gql(
        "query($d: DateTime) { suspendedRuns(filter: {fromDate: $d, toDate: $d}) { total } }",
        {"d": run["createdAt"]},
    )
    assert body["data"]["suspendedRuns"]["total"] == 1
