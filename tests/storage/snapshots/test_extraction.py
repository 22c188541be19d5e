"""Discovery rules of storage/snapshots/extraction.py, one document at a time (no database)."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime

import pytest
from bson import json_util

from suspended_runs.storage import (
    Document,
    MalformedSnapshot,
    RunStatus,
    Runtime,
    ToolCall,
    extract_entry,
)
from suspended_runs.storage.snapshots import extraction
from tests.helpers import load_json, load_snapshots, suspended_doc

SCENARIOS = load_json("list_suspended_runs.json")["scenarios"]


def by_run(run_id: str, workflow: str = "agentic-loop") -> Document:
    docs = load_snapshots() + load_snapshots("durable_snapshots.extjson")
    return next(d for d in docs if d["run_id"] == run_id and d["workflow_name"] == workflow)


def test_approval_suspension_gives_args_and_memory_info() -> None:
    entry = extract_entry(by_run(SCENARIOS["approval"]))
    assert entry is not None
    assert entry.agent_id == "approver"
    assert entry.runtime is Runtime.MASTRA
    assert entry.status is RunStatus.SUSPENDED
    assert (entry.thread_id, entry.resource_id) == ("thread-1", "user-1")
    assert entry.suspended_at == datetime(2026, 11, 30, 6, 54, 0, 816000, tzinfo=UTC)
    assert entry.tool_calls == (
        ToolCall("call_1_deleteFile", "deleteFile", True, args={"path": "/tmp/a.txt"}),
    )


def test_suspend_call_gives_its_payload_and_no_args() -> None:
    entry = extract_entry(by_run(SCENARIOS["suspend"]))
    assert entry is not None
    assert entry.agent_id == "asker"
    assert entry.tool_calls == (
        ToolCall("call_2_askCity", "askCity", False, suspend_payload={"question": "Which city?"}),
    )


def test_execution_workflow_documents_are_not_runs() -> None:
    assert extract_entry(by_run(SCENARIOS["approval"], "executionWorkflow")) is None
    durable = "32725051-c58a-4276-a799-f6a83eae5b1a"
    assert extract_entry(by_run(durable, "durable-agentic-execution")) is None


def test_durable_loop_takes_agent_and_memory_from_its_input() -> None:
    entry = extract_entry(by_run("32725051-c58a-4276-a799-f6a83eae5b1a", "durable-agentic-loop"))
    assert entry is not None
    assert entry.agent_id == "durable-approver"
    assert (entry.thread_id, entry.resource_id) == ("dt-1", "du-1")
    # An approval with its args (Mastra 1.71 reports it as requiresApproval false, without args).
    assert entry.tool_calls == (ToolCall("dcall_1", "deleteFile", True, args={"path": "/d"}),)


def test_snapshot_stored_as_json_string_reads_the_same() -> None:
    doc = by_run(SCENARIOS["suspend"])
    as_string = dict(doc, snapshot=json_util.dumps(doc["snapshot"]))
    assert extract_entry(as_string) == extract_entry(doc)


def test_resource_id_falls_back_to_memory_info() -> None:
    doc = by_run(SCENARIOS["approval"])
    del doc["resourceId"]
    entry = extract_entry(doc)
    assert entry is not None and entry.resource_id == "user-1"


def test_foreach_output_gives_one_call_per_suspended_entry() -> None:
    doc = suspended_doc("r-foreach")
    payload = doc["snapshot"]["context"]["executionWorkflow"]["suspendPayload"]
    first = payload["__workflow_meta"]["foreachOutput"][0]
    second = copy.deepcopy(first)
    second["suspendPayload"]["requireToolApproval"]["toolCallId"] = "call_b"
    done = {"status": "success", "output": {}}
    # Keyed by index, as some writers store it, out of order on purpose.
    payload["__workflow_meta"]["foreachOutput"] = {"2": second, "0": first, "1": done}
    entry = extract_entry(doc)
    assert entry is not None
    assert [c.tool_call_id for c in entry.tool_calls] == ["call_1_deleteFile", "call_b"]


def test_suspend_call_without_id_takes_its_resume_label() -> None:
    doc = by_run(SCENARIOS["suspend"])
    step = doc["snapshot"]["context"]["executionWorkflow"]
    step["suspendPayload"].pop("toolCallId")
    step["suspendPayload"]["__workflow_meta"]["foreachOutput"][0]["suspendPayload"].pop(
        "toolCallId"
    )
    entry = extract_entry(doc)
    assert entry is not None
    assert entry.tool_calls[0].tool_call_id == "call_2_askCity"  # from snapshot.resumeLabels


def test_run_without_agent_id_belongs_to_no_agent() -> None:
    doc = suspended_doc("r-anon")
    step = doc["snapshot"]["context"]["executionWorkflow"]
    del step["suspendPayload"]["__agentId"]
    assert extract_entry(doc) is None


def test_run_that_is_not_suspended_is_none() -> None:
    doc = suspended_doc("r-done")
    doc["snapshot"]["status"] = "success"
    assert extract_entry(doc) is None


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda d: d.update(snapshot="{not json"), "not JSON"),
        (lambda d: d.update(snapshot=42), "not an object"),
        (lambda d: d.update(run_id=None), "run_id"),
        (lambda d: d.update(createdAt="yesterday"), "createdAt"),
        (lambda d: d["snapshot"].update(context=[]), "context"),
    ],
)
def test_malformed_documents_raise_a_reason(change, reason: str) -> None:
    doc = suspended_doc("r-bad")
    change(doc)
    with pytest.raises(MalformedSnapshot, match=reason):
        extract_entry(doc)


def test_string_snapshot_matches_fixture_json() -> None:
    doc = by_run(SCENARIOS["approval"])
    text = json.dumps(json.loads(json_util.dumps(doc["snapshot"])))
    assert extract_entry(dict(doc, snapshot=text)) is not None


def test_a_mastra_runs_starter_is_read_from_its_request_context(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """REVIEW_STARTER_CONTEXT_KEY names where; unset, or not a string there, not known."""
    doc = suspended_doc("started")
    doc["snapshot"]["requestContext"] = {"userId": "token:alice", "tenant": 7}
    assert (entry := extract_entry(doc)) is not None and entry.started_by is None
    monkeypatch.setattr(extraction, "_starter_key", "userId")
    assert (entry := extract_entry(doc)) is not None and entry.started_by == "token:alice"
    monkeypatch.setattr(extraction, "_starter_key", "tenant")
    entry = extract_entry(doc)
    assert entry is not None and entry.started_by is None
    assert entry.problems == ("requestContext.tenant: a number, not a string",)
