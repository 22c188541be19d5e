"""Every query and mutation, asked by a caller scoped to one tenant about another tenant's
runs: it learns nothing, not their ids, counts, existence or audit entries.

The walk covers the schema's whole root: a field added without a case here fails the test.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest

from suspended_runs.schema import build_schema
from tests.builders import key, post


def _node_id(run_id: str) -> str:
    """A run's global id (resolvers/nodes.py), written here as a client would hold it."""
    return base64.urlsafe_b64encode(f"R{run_id}".encode()).rstrip(b"=").decode()


RESULT = "__typename ... on Problem { message }"
BY_RUN: dict[str, str] = {
    "agentRun": "query($id: ID!) { agentRun(runId: $id) { runId status } }",
    "decisionLog": "query($id: ID!) { decisionLog(runId: $id) { action decidedBy } }",
    "decisionLogConnection": "query($id: ID!) { decisionLogConnection(runId: $id) "
    "{ totalCount edges { cursor node { id action } } pageInfo { endCursor } } }",
    "approveToolCall": f"mutation($id: ID!) {{ approveToolCall(input: {{runId: $id}}) "
    f"{{ {RESULT} }} }}",
    "declineToolCall": f"mutation($id: ID!) {{ declineToolCall(input: {{runId: $id}}) "
    f"{{ {RESULT} }} }}",
    "resumeRun": "mutation($id: ID!) { resumeRun(input: {runId: $id, resumeData: {}}) "
    f"{{ {RESULT} }} }}",
    "decideToolCalls": "mutation($id: ID!) { decideToolCalls(decisions: "
    f"[{{runId: $id, action: APPROVE}}]) {{ {RESULT} }} }}",
    "releaseRun": f"mutation($id: ID!) {{ releaseRun(input: {{runId: $id}}) {{ {RESULT} }} }}",
    "cancelRun": f"mutation($id: ID!) {{ cancelRun(input: {{runId: $id}}) {{ {RESULT} }} }}",
    "startReview": f"mutation($id: ID!) {{ startReview(input: {{runId: $id}}) {{ {RESULT} }} }}",
    "endReview": f"mutation($id: ID!) {{ endReview(input: {{runId: $id}}) {{ {RESULT} }} }}",
    "assignRun": 'mutation($id: ID!) { assignRun(input: {runId: $id, to: ["key:x"]}) '
    f"{{ {RESULT} }} }}",
    "addRunNote": 'mutation($id: ID!) { addRunNote(input: {runId: $id, body: "x"}) '
    f"{{ {RESULT} }} }}",
}
"""Fields that take a run id: the other tenant's run must answer as a run that does not exist."""
OTHERS: dict[str, tuple[str, Any]] = {
    "suspendedRuns": (
        '{ suspendedRuns(filter: {resourceId: "tenant-b"}) { total runs { runId } } }',
        {"suspendedRuns": {"total": 0, "runs": []}},
    ),
    "runs": (
        '{ runs(filter: {resourceId: "tenant-b"}) { total runs { runId } } }',
        {"runs": {"total": 0, "runs": []}},
    ),
    "suspendedRunsConnection": (
        '{ suspendedRunsConnection(filter: {resourceId: "tenant-b"}) '
        "{ totalCount edges { node { runId } } } }",
        {"suspendedRunsConnection": {"totalCount": 0, "edges": []}},
    ),
    "runsConnection": (
        '{ runsConnection(filter: {resourceId: "tenant-b"}) '
        "{ totalCount edges { node { runId } } } }",
        {"runsConnection": {"totalCount": 0, "edges": []}},
    ),
    # The other tenant's runs by their global ids: null, as an unknown id.
    "node": (
        f'{{ node(id: "{_node_id("b-0")}") {{ id ... on AgentRun {{ runId }} }} }}',
        {"node": None},
    ),
    "nodes": (
        f'{{ nodes(ids: ["{_node_id("b-0")}", "{_node_id("b-1")}"]) {{ id }} }}',
        {"nodes": [None, None]},
    ),
    "agents": ("{ agents { id suspendedRuns } }", None),
    "viewer": ("{ viewer { subject } }", None),
    "sync": ("{ sync { caughtUp behindSeconds } }", None),
    "startRun": (
        'mutation { startRun(input: {agentId: "file-cleaner", prompt: "x", '
        f'resourceId: "tenant-b"}}) {{ {RESULT} }} }}',
        None,
    ),
    "reconcileRuns": (f"mutation {{ reconcileRuns {{ {RESULT} }} }}", None),
    # A scoped admin's webhook is narrowed to their scope (tests/resolvers/test_webhooks.py).
    "createWebhook": (
        'mutation { createWebhook(input: {url: "http://127.0.0.1:9/x", events: [RUN_SUSPENDED], '
        f'filter: {{resourceId: "tenant-b"}}}}) {{ {RESULT} }} }}',
        None,
    ),
    "webhooks": ("{ webhooks { id url } }", None),
    # Counted within the scope (tests/resolvers/test_decision_stats.py): tenant-b's are none.
    "decisionStats": (
        '{ decisionStats(filter: {resourceId: "tenant-b"}) { approved declined resumed '
        "expired times { decisions } } }",
        {
            "decisionStats": {
                "approved": 0,
                "declined": 0,
                "resumed": 0,
                "expired": 0,
                "times": {"decisions": 0},
            }
        },
    ),
    "webhookDeliveries": (
        '{ webhookDeliveries(webhookId: "wh_x") { deliveries { runId } } }',
        None,
    ),
    "webhookDeliveriesConnection": (
        '{ webhookDeliveriesConnection(webhookId: "wh_x") { edges { node { runId } } } }',
        None,
    ),
    "deleteWebhook": (f'mutation {{ deleteWebhook(input: {{id: "wh_x"}}) {{ {RESULT} }} }}', None),
    "rotateWebhookSecret": (
        f'mutation {{ rotateWebhookSecret(input: {{id: "wh_x"}}) {{ {RESULT} }} }}',
        None,
    ),
    "takeOverWebhook": (
        f'mutation {{ takeOverWebhook(input: {{id: "wh_x"}}) {{ {RESULT} }} }}',
        None,
    ),
    # A note of another tenant's run answers as one that does not exist (test_notes.py).
    "deleteRunNote": (
        'mutation { deleteRunNote(input: {noteId: "0123456789abcdef01234567"}) '
        f"{{ {RESULT} }} }}",
        None,
    ),
    "redeliverWebhookEvent": (
        f'mutation {{ redeliverWebhookEvent(input: {{deliveryId: "dlv_x"}}) {{ {RESULT} }} }}',
        None,
    ),
}
"""The other fields, with what they must answer (None: checked below, or only for leaks)."""


def _root_fields() -> set[str]:
    schema = build_schema()._schema
    assert schema.query_type is not None and schema.mutation_type is not None
    return {*schema.query_type.fields, *schema.mutation_type.fields}


def test_every_root_field_has_a_case() -> None:
    assert _root_fields() <= set(BY_RUN) | set(OTHERS)


@pytest.mark.parametrize("caller", ["a-admin", "a-viewer"])
async def test_a_scoped_caller_learns_nothing_of_another_tenant(tenants, caller) -> None:
    client, headers = tenants["client"], key(tenants, caller)
    fields = _root_fields()
    for name, document in BY_RUN.items():
        if name not in fields:
            continue
        theirs = (await post(client, document, headers, id="b-0")).json()
        nobodys = (await post(client, document, headers, id="zz-none")).json()
        assert _same(theirs, "b-0") == _same(nobodys, "zz-none"), name  # as if it did not exist
    for name, (document, expected) in OTHERS.items():
        if name not in fields:
            continue
        body = (await post(client, document, headers)).json()
        text = str(body)
        assert "tenant-b" not in text.replace('"tenant-b"', "") and "b-1" not in text, name
        if expected is not None:
            assert body["data"] == expected, name
    agents = (await post(client, OTHERS["agents"][0], headers)).json()["data"]["agents"]
    assert sum(a["suspendedRuns"] for a in agents) == 3  # tenant-a's runs only
    for run_id in ("b-0", "b-1"):  # nothing was written under the other tenant's runs
        log = (await post(client, BY_RUN["decisionLog"], tenants["admin"], id=run_id)).json()
        assert log["data"]["decisionLog"] == [], run_id


def _same(body: dict[str, Any], asked: str) -> str:
    """The answer with the asked id taken out, for comparing two answers."""
    return str(body).replace(asked, "<id>")
