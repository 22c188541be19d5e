"""No stored document breaks a list (storage/snapshots/fields.py): wrong types in what
discovery reads are listed as null with `problems`, structural damage is left out and
counted; over GraphQL, through the real follower."""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from bson import ObjectId, encode
from bson.errors import InvalidDocument
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from pymongo.errors import PyMongoError

from suspended_runs.storage import (
    PYTHON_RUN_WORKFLOW,
    SNAPSHOTS_COLLECTION,
    Document,
    MalformedSnapshot,
    RunEntry,
    extract_entry,
)
from tests.builders import key, post
from tests.helpers import eventually, make_gql, running_app, suspended_doc

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


async def _once_listed(gql: Any, total: int) -> dict[str, Any]:
    """`LIST`'s answer once it counts `total` runs; it carries no errors."""

    async def listed() -> bool:
        body = await gql(LIST)
        return bool(body.get("data") and body["data"]["suspendedRuns"]["total"] == total)

    await eventually(listed, within=5)
    body: dict[str, Any] = await gql(LIST)
    assert "errors" not in body, body
    return body


@pytest.mark.parametrize("damage", list(DAMAGE), ids=list(DAMAGE))
async def test_a_wrongly_typed_field_is_read_as_null_and_named(snapshots, gql, damage) -> None:
    spoil, field = DAMAGE[damage]
    bad = suspended_doc("bad-run")
    spoil(bad)
    await snapshots.insert_many([bad, suspended_doc("good-run")])
    body = await _once_listed(gql, 2)
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
    body = await _once_listed(gql, 1)
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


# -- every field discovery reads, as every JSON type ----------------------------------------

_APPROVAL = (
    "snapshot", "context", "executionWorkflow", "suspendPayload", "__workflow_meta",
    "foreachOutput", 0, "suspendPayload", "requireToolApproval",
)  # fmt: skip
_STEP = ("snapshot", "context", "executionWorkflow", "suspendPayload")
_MEMORY = (*_STEP, "__streamState", "messageList", "memoryInfo")
READ: list[tuple[Any, ...]] = [
    ("run_id",),
    ("resourceId",),
    ("createdAt",),
    ("updatedAt",),
    ("snapshot",),
    ("snapshot", "status"),
    ("snapshot", "context"),
    ("snapshot", "resumeLabels"),
    (*_STEP,),
    (*_STEP, "__agentId"),
    (*_STEP, "__workflow_meta"),
    (*_STEP, "__workflow_meta", "foreachOutput"),
    (*_STEP, "__workflow_meta", "foreachOutput", 0),
    (*_STEP, "__workflow_meta", "foreachOutput", 0, "status"),
    (*_APPROVAL,),
    (*_APPROVAL, "toolCallId"),
    (*_APPROVAL, "toolName"),
    (*_APPROVAL, "args"),
    (*_MEMORY,),
    (*_MEMORY, "threadId"),
    (*_MEMORY, "resourceId"),
]
"""The paths of a Mastra approval snapshot that discovery reads."""

_KEYS = st.text(alphabet="abcdefghij_", min_size=1, max_size=6)
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3),
    max_leaves=8,
) | st.sampled_from(["big", "deep"])
"""Any JSON value, and two sizes: a string of megabytes, nesting near BSON's limit."""


def _sized(value: Any) -> Any:
    if value == "big":
        return "x" * 3_000_000
    if value == "deep":
        return _deep(90)
    return value


def _put(doc: Document, path: tuple[Any, ...], value: Any) -> Document:
    target: Any = doc
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = _sized(value)
    return doc


def _readable(entry: RunEntry) -> None:
    """What the schema serializes, as it must be: strings or null, JSON that encodes."""
    texts = [entry.thread_id, entry.resource_id]
    texts += [text for call in entry.tool_calls for text in (call.tool_call_id, call.tool_name)]
    assert all(text is None or isinstance(text, str) for text in texts)
    for call in entry.tool_calls:
        json.dumps([call.args, call.suspend_payload], allow_nan=False)
    encode(entry.to_document())


@given(path=st.sampled_from(READ), value=JSON)
@hypothesis_settings(max_examples=300, deadline=None)
def test_any_value_anywhere_is_read_or_refused_as_malformed(path, value) -> None:
    doc = _put(suspended_doc("r"), path, value)
    try:
        entry = extract_entry(doc)
    except MalformedSnapshot:
        return
    if entry is not None:
        _readable(entry)
        _readable(RunEntry.from_document(entry.to_document()))


PAGES = """query($after: String, $page: Int) {
  byCursor: suspendedRuns(first: 7, after: $after) { total hasMore nextCursor runs { runId } }
  byPage: suspendedRuns(page: $page, perPage: 7) { total runs { runId threadId resourceId
    toolCalls { toolCallId toolName args suspendPayload } problems } }
  all: runs(first: 50) { runs { runId problems } }
  flagged: runs(filter: {hasProblems: true}, first: 50) { runs { runId } }
}"""


async def _every_shape_answers(gql: Any, ids: list[str]) -> set[str]:
    """Every page of every shape answered without errors; the run ids listed."""
    listed: set[str] = set()
    after, page = None, 0
    while True:
        body = await gql(PAGES, {"after": after, "page": page})
        assert "errors" not in body, body.get("errors")
        cursor = body["data"]["byCursor"]
        listed |= {run["runId"] for run in cursor["runs"]}
        if not cursor["hasMore"]:
            break
        after, page = cursor["nextCursor"], page + 1
    for run_id in (i for i in ids if len(i) < 4096):  # a longer id is over MAX_TEXT_BYTES
        body = await gql(ONE, {"id": run_id})
        assert "errors" not in body, body.get("errors")
    return listed


async def _write(collection: Any, docs: list[Document], good: Document) -> list[str]:
    """Each document that the database takes (some values it refuses); their run ids."""
    taken = []
    for doc in docs:
        try:
            await collection.insert_one(doc)
        except (InvalidDocument, OverflowError, PyMongoError):
            continue
        if isinstance(doc.get("run_id"), str):
            taken.append(doc["run_id"])
    await collection.insert_one(good)
    return taken


async def _listed_once_good(gql: Any, good: Document) -> None:
    async def listed() -> bool:
        body = await gql(ONE, {"id": good["run_id"]})
        return bool((body.get("data") or {}).get("agentRun"))

    await eventually(listed, within=15)


@given(damage=st.lists(st.tuples(st.sampled_from(READ), JSON), min_size=1, max_size=6))
@hypothesis_settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
async def test_damaged_documents_break_no_list_through_the_change_stream_and_a_reconcile(
    snapshots, settings, damage
) -> None:
    """Each example on fresh databases: the damaged documents and a well-formed one
    written while a server follows, then a server that starts on them (a first
    reconcile)."""
    mongo = snapshots.database.client
    for phase in ("followed", "reconciled"):
        name = f"p_{uuid.uuid4().hex[:10]}"
        docs = [_put(suspended_doc(f"d{i}"), path, value) for i, (path, value) in enumerate(damage)]
        good = suspended_doc("good")
        collection = mongo[name][SNAPSHOTS_COLLECTION]
        try:
            if phase == "reconciled":
                ids = await _write(collection, docs, good)
            async with running_app(settings.model_copy(update={"mongodb_db": name})) as client:
                gql = make_gql(client)
                if phase == "followed":
                    ids = await _write(collection, docs, good)
                await _listed_once_good(gql, good)
                assert "good" in await _every_shape_answers(gql, ids)
        finally:
            await mongo.drop_database(name)
