"""No stored document breaks a list (storage/snapshots/fields.py): wrong types in what
discovery reads are listed as null with `problems`, structural damage is left out and
counted; over GraphQL, through the real follower."""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from bson import ObjectId

from suspended_runs.storage import PYTHON_RUN_WORKFLOW, Document, extract_entry
from tests.builders import key, post
from tests.helpers import eventually, suspended_doc

RUN = """
  runId threadId resourceId problems
  toolCalls { toolCallId toolName args requiresApproval suspendPayload }
"""
LIST = f"{{ suspendedRuns(first: 50) {{ total runs {{ {RUN} }} }} }}"
WITH_PROBLEMS = "{ runs(filter: {hasProblems: true}, first: 50) { runs { runId } } }"
WITHOUT = "{ runs(filter: {hasProblems: false}, first: 50) { runs { runId } } }"
ONE = f"query($id: ID!) {{ agentRun(runId: $id) {{ {RUN} }} }}"


def _approval(doc: Document) -> Document:
    """The pending approval extraction reads: the suspended foreach entry's."""
    step: Document = doc["snapshot"]["context"]["executionWorkflow"]["suspendPayload"]
    approval: Document = step["__workflow_meta"]["foreachOutput"][0]["suspendPayload"]
    pending: Document = approval["requireToolApproval"]
    return pending


def _memory(doc: Document) -> Document:
    step = doc["snapshot"]["context"]["executionWorkflow"]["suspendPayload"]
    info: Document = step["__streamState"]["messageList"]["memoryInfo"]
    return info


DAMAGE: dict[str, tuple[Callable[[Document], object], str | None]] = {
    "toolName-object": (lambda d: _approval(d).update(toolName={"evil": 1}), "toolName"),
    "toolCallId-list": (lambda d: _approval(d).update(toolCallId=["a", "b"]), "toolCallId"),
    "threadId-object": (lambda d: _memory(d).update(threadId={"$x": 1}), "threadId"),
    "resourceId-list": (
        lambda d: (d.pop("resourceId", None), _memory(d).update(resourceId=["tenant-a"])),
        "resourceId",
    ),
    "args-ObjectId": (lambda d: _approval(d).update(args={"id": ObjectId()}), None),
    "args-deep": (lambda d: _approval(d).update(args=_deep(80)), "args"),
}


def _deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = {"a": value}
    return value


@pytest.mark.parametrize("damage", list(DAMAGE), ids=list(DAMAGE))
async def test_a_wrongly_typed_field_is_read_as_null_and_named(snapshots, gql, damage) -> None:
    spoil, field = DAMAGE[damage]
    bad = suspended_doc("bad-run")
    spoil(bad)
    await snapshots.insert_many([bad, suspended_doc("good-run")])

    async def both_listed() -> bool:
        body = await gql(LIST)
        return bool(body.get("data") and body["data"]["suspendedRuns"]["total"] == 2)

    await eventually(both_listed, within=5)
    body = await gql(LIST)
    assert "errors" not in body, body
    runs = {run["runId"]: run for run in body["data"]["suspendedRuns"]["runs"]}
    assert runs["good-run"]["problems"] == []
    if field is None:  # a BSON type JSON has no place for: its usual JSON form
        assert isinstance(runs["bad-run"]["toolCalls"][0]["args"]["id"], str)
        assert runs["bad-run"]["problems"] == []
        return
    assert any(field in problem for problem in runs["bad-run"]["problems"])
    call = runs["bad-run"]["toolCalls"][0]
    read_back = {**runs["bad-run"], **call}
    assert read_back[field] is None
    assert [r["runId"] for r in (await gql(WITH_PROBLEMS))["data"]["runs"]["runs"]] == ["bad-run"]
    assert "bad-run" not in {r["runId"] for r in (await gql(WITHOUT))["data"]["runs"]["runs"]}
    one = await gql(ONE, {"id": "bad-run"})
    assert "errors" not in one and one["data"]["agentRun"]["runId"] == "bad-run"


def _python_doc(run_id: str, **snapshot: Any) -> Document:
    now = datetime.now(UTC)
    call = {"toolCallId": "c1", "toolName": "t", "args": {}, "requiresApproval": True}
    return {
        "workflow_name": PYTHON_RUN_WORKFLOW,
        "run_id": run_id,
        "createdAt": now,
        "updatedAt": now,
        "snapshot": {
            "layout": 1,
            "status": "suspended",
            "agentId": "py-agent",
            "toolCalls": [call],
            "messages": [],
            **snapshot,
        },
    }


async def test_a_python_run_with_a_list_resource_breaks_no_scope_check(snapshots, tenants) -> None:
    client = tenants["client"]
    await snapshots.insert_one(_python_doc("py-bad", resourceId=["tenant-a"]))
    admin = tenants["admin"]

    async def listed() -> bool:
        body = (await post(client, WITH_PROBLEMS, admin)).json()
        return [r["runId"] for r in body["data"]["runs"]["runs"]] == ["py-bad"]

    await eventually(listed, within=5)
    for who in (admin, key(tenants, "a-viewer"), key(tenants, "b-approver")):
        body = (await post(client, ONE, who, id="py-bad")).json()
        assert "errors" not in body, body
        run = body["data"]["agentRun"]
        # No resource could be read: only a caller whose scope is every run sees it.
        assert run is None if who is not admin else run["resourceId"] is None
    approve = """mutation($id: ID!) {
        approveToolCall(input: {runId: $id, toolCallId: "c1"}) { __typename } }"""
    body = (await post(client, approve, key(tenants, "b-approver"), id="py-bad")).json()
    assert "errors" not in body, body
    assert body["data"]["approveToolCall"]["__typename"] == "RunNotFound"


@pytest.mark.parametrize(
    "spoil",
    [
        lambda d: d.update(createdAt=["2026"]),
        lambda d: d.update(run_id={"x": 1}),
        lambda d: d["snapshot"].update(context="nope"),
        lambda d: d.update(snapshot=12),
    ],
    ids=["createdAt-list", "run_id-object", "context-string", "snapshot-number"],
)
async def test_structural_damage_leaves_the_document_out_and_counts_it(
    snapshots, gql, client, spoil
) -> None:
    bad = suspended_doc("broken-run")
    spoil(bad)
    await snapshots.insert_many([bad, suspended_doc("good-run")])

    async def good_listed() -> bool:
        body = await gql(LIST)
        return bool(body.get("data") and body["data"]["suspendedRuns"]["total"] == 1)

    await eventually(good_listed, within=5)
    body = await gql(LIST)
    assert "errors" not in body
    assert [r["runId"] for r in body["data"]["suspendedRuns"]["runs"]] == ["good-run"]
    metrics = (await client.get("/metrics")).text
    [line] = [
        m for m in metrics.splitlines() if m.startswith("suspended_runs_unreadable_snapshots")
    ]
    assert float(line.split()[-1]) >= 1


def test_problems_name_the_field_and_its_kind() -> None:
    doc = suspended_doc("r")
    _approval(doc).update(toolName=7, args=float("inf"))
    entry = extract_entry(copy.deepcopy(doc))
    assert entry is not None
    assert entry.tool_calls[0].tool_name is None and entry.tool_calls[0].args is None
    assert entry.problems == (
        "executionWorkflow[0].toolName: a number, not a string",
        "executionWorkflow[0].args: a number JSON cannot hold, read as null",
    )
