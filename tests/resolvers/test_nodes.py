"""Global ids and `node`/`nodes` over HTTP (resolvers/nodes.py): every run, tool call and
decision record (a LangGraph run's too) is fetched again by its id, within the caller's
scope; an id holds through a decision; `nodes` reads the run index once and refuses too
many ids before any read."""

from __future__ import annotations

import base64
import re
from datetime import UTC, datetime
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from suspended_runs.server import Settings
from suspended_runs.storage import RUNS_COLLECTION
from tests.builders import key, post
from tests.helpers import (
    APPROVE,
    RELEASE,
    START,
    Gql,
    act,
    eventually,
    has_status,
    make_gql,
    running_app,
    start_run,
    suspended_doc,
)

NODE_FIELDS = """__typename id
  ... on AgentRun { runId status toolCalls { id toolCallId decision { action } } }
  ... on AgentRunToolCall { toolCallId toolName }
  ... on DecisionRecord { runId action outcome }"""
NODE = f"query($id: ID!) {{ node(id: $id) {{ {NODE_FIELDS} }} }}"
NODES = f"query($ids: [ID!]!) {{ nodes(ids: $ids) {{ {NODE_FIELDS} }} }}"
RUN = """query($run: ID!) {
  agentRun(runId: $run) { id runId status toolCalls { id toolCallId } }
  decisionLog(runId: $run) { id action } }"""
URL_SAFE = re.compile(r"^[A-Za-z0-9_-]+$")


async def node(gql: Gql, node_id: str) -> Any:
    body = await gql(NODE, {"id": node_id})
    assert "errors" not in body, body
    return body["data"]["node"]


async def ids_of(gql: Gql, run_id: str) -> tuple[str, list[str], list[str]]:
    """A run's id, its calls' and its decision records'."""
    body = await gql(RUN, {"run": run_id})
    assert "errors" not in body, body
    run, log = body["data"]["agentRun"], body["data"]["decisionLog"]
    return run["id"], [c["id"] for c in run["toolCalls"]], [r["id"] for r in log]


async def test_runs_calls_and_records_are_fetched_again_by_their_ids(gql) -> None:
    run = await start_run(gql, "trip-planner")
    approval = next(c for c in run["toolCalls"] if c["requiresApproval"])
    await act(gql, APPROVE, runId=run["runId"], toolCallId=approval["toolCallId"])
    run_id, call_ids, record_ids = await ids_of(gql, run["runId"])
    every = [run_id, *call_ids, *record_ids]
    assert len(set(every)) == len(every) == 4 and all(URL_SAFE.match(i) for i in every)
    found = await node(gql, run_id)
    assert (found["__typename"], found["id"], found["runId"]) == ("AgentRun", run_id, run["runId"])
    assert [c["id"] for c in found["toolCalls"]] == call_ids
    calls = [await node(gql, call_id) for call_id in call_ids]
    assert [c["toolCallId"] for c in calls] == [c["toolCallId"] for c in run["toolCalls"]]
    assert {c["__typename"] for c in calls} == {"AgentRunToolCall"}
    record = await node(gql, record_ids[0])
    assert (record["__typename"], record["action"], record["runId"]) == (
        "DecisionRecord",
        "APPROVE",
        run["runId"],
    )
    body = await gql(NODES, {"ids": [record_ids[0], "nonsense", *reversed(call_ids), run_id]})
    answered = body["data"]["nodes"]
    assert [n and n["id"] for n in answered] == [record_ids[0], None, *reversed(call_ids), run_id]


async def stalled_then_released(gql: Gql, db: Any, run_id: str) -> None:
    """What a process that died while continuing the run leaves behind (RUNNING, then
    STALLED), then an operator's releaseRun (SUSPENDED again)."""
    past = datetime(2020, 1, 1, tzinfo=UTC)
    before = await ids_of(gql, run_id)
    await db[RUNS_COLLECTION].update_one(
        {"runId": run_id},
        {"$set": {"status": "RUNNING", "claim": {"by": "dead", "at": past, "expiresAt": past}}},
    )
    assert (await ids_of(gql, run_id))[:2] == before[:2]
    assert (await node(gql, before[1][0]))["id"] == before[1][0]
    released = await act(gql, RELEASE, runId=run_id, reason="checked")
    assert released["run"]["status"] == "SUSPENDED", released


async def test_a_call_keeps_its_id_through_suspended_running_suspended(gql, db) -> None:
    run = await start_run(gql, "file-cleaner")
    run_id, [call_id], _ = await ids_of(gql, run["runId"])
    await stalled_then_released(gql, db, run["runId"])
    assert (await ids_of(gql, run["runId"]))[:2] == (run_id, [call_id])
    found = await node(gql, call_id)
    assert found["toolCallId"] == run["toolCalls"][0]["toolCallId"]
    assert (await node(gql, run_id))["status"] == "SUSPENDED"


def without_call_ids(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_call_ids(v) for k, v in value.items() if k != "toolCallId"}
    if isinstance(value, list):
        return [without_call_ids(v) for v in value]
    return value


async def test_a_call_without_a_tool_call_id_keeps_its_id_too(gql, db, snapshots) -> None:
    doc = without_call_ids(suspended_doc("no-call-id"))
    doc["snapshot"]["resumeLabels"] = {}  # nor a label to take one from
    await snapshots.insert_one(doc)
    await eventually(lambda: has_status(gql, "no-call-id"), within=5)
    run_id, [call_id], _ = await ids_of(gql, "no-call-id")
    assert (await node(gql, call_id))["toolCallId"] is None
    await stalled_then_released(gql, db, "no-call-id")
    assert (await ids_of(gql, "no-call-id"))[:2] == (run_id, [call_id])
    found = await node(gql, call_id)
    assert (found["__typename"], found["id"], found["toolName"]) == (
        "AgentRunToolCall",
        call_id,
        "deleteFile",
    )


async def test_a_langgraph_runs_calls_keep_their_ids_as_it_runs_on(
    settings: Settings, langgraph_db: str, start_app: Any
) -> None:
    """A LangGraph run (`lg:<thread>:<checkpoint>`, colons and all) is a Node like the others;
    its waiting call keeps its id while its sibling's approval runs the thread on and it
    suspends again."""
    graphs = {"per-call-refunds": "tests.langgraph_graphs:per_call_refunds"}
    update = {"langgraph_db": langgraph_db, "langgraph_graphs": graphs}
    gql = make_gql(await start_app(settings.model_copy(update=update)))
    started = await act(gql, START, agentId="per-call-refunds", prompt="Refund order A-1")
    run_id = started["run"]["runId"]
    assert run_id.startswith("lg:"), started
    node_id, call_ids, _ = await ids_of(gql, run_id)
    found = await node(gql, node_id)
    assert (found["__typename"], found["runId"]) == ("AgentRun", run_id)
    refund, email = [(await node(gql, call_id))["toolCallId"] for call_id in call_ids]
    assert [refund, email] == [c["toolCallId"] for c in started["run"]["toolCalls"]]
    first = await act(gql, APPROVE, runId=run_id, toolCallId=refund)
    assert first["run"]["status"] == "SUSPENDED", first
    assert (await node(gql, call_ids[1]))["toolCallId"] == email
    assert (await ids_of(gql, run_id))[:2] == (node_id, call_ids[1:])


async def test_another_tenants_objects_are_null_as_unknown_ones(tenants) -> None:
    client = tenants["client"]
    everything, a_viewer = key(tenants, "everything"), key(tenants, "a-viewer")
    refused = await post(client, APPROVE, key(tenants, "b-approver"), input={"runId": "b-0"})
    assert refused.json()["data"]["approveToolCall"]["__typename"] == "ExecutorUnavailable"
    body = (await post(client, RUN, everything, run="b-0")).json()["data"]
    run_id, record_id = body["agentRun"]["id"], body["decisionLog"][0]["id"]
    call_id = body["agentRun"]["toolCalls"][0]["id"]
    own = (await post(client, RUN, a_viewer, run="a-0")).json()["data"]["agentRun"]["id"]
    ids = [run_id, call_id, record_id, own]
    seen = (await post(client, NODES, everything, ids=ids)).json()["data"]["nodes"]
    assert [n["__typename"] for n in seen] == [
        "AgentRun",
        "AgentRunToolCall",
        "DecisionRecord",
        "AgentRun",
    ]
    body = (await post(client, NODES, a_viewer, ids=ids)).json()
    assert [n and n["id"] for n in body["data"]["nodes"]] == [None, None, None, own]
    for other in ids[:3]:
        assert (await post(client, NODE, a_viewer, id=other)).json()["data"]["node"] is None


def _id(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).rstrip(b"=").decode()


@pytest.mark.parametrize(
    "malformed",
    [
        "",
        "!!!",
        "not base64 at all",
        _id("Rno-such-run"),
        _id("X0"),
        _id("C9:short"),
        _id("S3:abc:x"),
        _id("Dnot-an-object-id"),
        _id("Rcc81ae27-d252-416e-8c0c-1d806da4331d") + "=",  # padded: not as written
        base64.b64encode(b"\xff\xfe").decode(),
    ],
)
async def test_a_malformed_or_unknown_id_is_null(gql, malformed: str) -> None:
    assert await node(gql, malformed) is None
    body = await gql(NODES, {"ids": [malformed]})
    assert body == {"data": {"nodes": [None]}}


def index_reads(provider: TracerProvider, exporter: InMemorySpanExporter) -> list[str]:
    """The commands sent to the run index since the exporter was last cleared."""
    provider.force_flush()
    spans = exporter.get_finished_spans()
    exporter.clear()
    return [
        s.name
        for s in spans
        if (s.attributes or {}).get("db.mongodb.collection") == RUNS_COLLECTION
        or RUNS_COLLECTION in s.name
    ]


async def test_nodes_reads_the_run_index_once_and_refuses_too_many_ids_before_any_read(
    settings, traced
) -> None:
    provider, exporter = traced
    limited = settings.model_copy(update={"max_rows_per_request": 100})
    async with running_app(limited, traces=provider) as client:
        gql = make_gql(client)
        body = await gql(
            "mutation { "
            + " ".join(
                f'r{i}: startRun(input: {{agentId: "file-cleaner", prompt: "rm /{i}"}})'
                " { ... on RunStarted { run { id toolCalls { id } } } }"
                for i in range(5)
            )
            + " }"
        )
        assert "errors" not in body, body
        runs = list(body["data"].values())
        ids = [r["run"]["id"] for r in runs] + [r["run"]["toolCalls"][0]["id"] for r in runs]
        ids = (ids * 10)[:100]
        index_reads(provider, exporter)
        answered = await gql(NODES, {"ids": ids})
        assert [n["id"] for n in answered["data"]["nodes"]] == ids
        assert len(index_reads(provider, exporter)) == 1
        refused = await gql(NODES, {"ids": [*ids, ids[0]]})
        assert refused["data"] is None
        assert refused["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
        assert index_reads(provider, exporter) == []
