"""`GET /metrics` (server/metrics.py, runtime/metrics.py): the Prometheus exposition, behind
the API's credentials."""

from __future__ import annotations

import json
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from suspended_runs.runtime.metrics import DECISIONS, OperationLabels
from suspended_runs.server import Settings
from suspended_runs.server.auth import API_KEY_HEADER, new_api_key
from tests.helpers import APPROVE, act, eventually, listed, make_gql, start_run, suspended_doc


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


async def test_metrics_tell_the_index_the_follower_requests_and_decisions(
    snapshots, client
) -> None:
    gql = make_gql(client)
    await snapshots.insert_many([suspended_doc(f"m-{i}") for i in range(3)])
    await eventually(lambda: listed(gql, "m-2"), within=2)
    done = (await start_run(gql, "file-cleaner"))["runId"]
    await act(gql, APPROVE, runId=done)
    await gql("query Inbox { suspendedRuns { total } }")
    DECISIONS.labels(outcome="RunDecided").inc()  # resolvers/decisions.py counts each
    answer = await client.get("/metrics")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain")
    seen = samples(answer.text)
    assert seen[("suspended_runs_index_entries", (("status", "SUSPENDED"),))] == 3
    assert seen[("suspended_runs_index_entries", (("status", "COMPLETED"),))] == 1
    assert seen[("suspended_runs_index_entries", (("status", "RUNNING"),))] == 0
    assert seen[("suspended_runs_stalled_runs", ())] == 0
    assert seen[("suspended_runs_outcome_unknown_runs", ())] == 0
    assert seen[("suspended_runs_follower", ())] == 1
    assert seen[("suspended_runs_sync_healthy", ())] == 1
    assert seen[("suspended_runs_sync_lag_seconds", ())] >= 0
    assert seen[("suspended_runs_graphql_request_seconds_count", (("operation", "Inbox"),))] >= 1
    assert seen[("suspended_runs_decisions_total", (("outcome", "RunDecided"),))] >= 1
    assert seen[("process_resident_memory_bytes", ())] > 0

    async def counted_in_memory() -> bool:
        scraped = samples((await client.get("/metrics")).text)
        return scraped[("suspended_runs_counts_in_memory", ())] == 1

    await eventually(counted_in_memory, within=5)  # the first counts started their read


def test_operation_names_are_a_bounded_label() -> None:
    labels = OperationLabels(most=2)
    assert labels.label(None, executed=True) == "anonymous"
    assert labels.label("Inbox", executed=False) == "other"  # not yet executed well
    assert labels.label("Inbox", executed=True) == "Inbox"
    assert labels.label("Inbox", executed=False) == "Inbox"  # a label once known
    assert labels.label("not a name", executed=True) == "other"
    assert labels.label("x" * 65, executed=True) == "other"
    assert labels.label(["Inbox"], executed=True) == "other"
    assert labels.label("Second", executed=True) == "Second"
    assert labels.label("Third", executed=True) == "other"  # past `most`


async def test_metrics_need_a_viewer_of_all_runs(
    settings: Settings, start_app, tmp_path: Path
) -> None:
    keys: dict[str, dict[str, str]] = {}
    entries: list[dict[str, object]] = []
    grants: list[tuple[str, str, dict[str, object]]] = [
        ("ops", "viewer", {"scope": "all"}),
        ("tenant", "admin", {"resourceIds": ["tenant-a"]}),
    ]
    for name, role, scope in grants:
        key, digest = new_api_key()
        keys[name] = {API_KEY_HEADER: key}
        entries.append({"name": name, "role": role, "sha256": digest, **scope})
    key_file = tmp_path / "keys.json"
    key_file.write_text(json.dumps(entries))
    client = await start_app(settings.model_copy(update={"api_keys_file": key_file}))
    assert (await client.get("/metrics")).status_code == 401
    refused = await client.get("/metrics", headers=keys["tenant"])
    assert refused.status_code == 403
    assert refused.json()["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    assert (await client.get("/metrics", headers=keys["ops"])).status_code == 200


async def test_only_operations_executed_well_by_a_caller_with_a_role_become_labels(
    tenants,
) -> None:
    client, keys = tenants["client"], tenants["keys"]
    guest, viewer = {API_KEY_HEADER: keys["guest"]}, {API_KEY_HEADER: keys["everything"]}
    for i in range(20):  # `viewer` needs no role: these execute without errors
        body = {"query": f"query Junk{i} {{ viewer {{ role }} }}"}
        assert "errors" not in (await client.post("/graphql", json=body, headers=guest)).json()
    failing = {"query": "query Failing { agentRun(runId: 1) { nope } }"}
    await client.post("/graphql", json=failing, headers=viewer)
    mistaken = {"query": "query Listed { viewer { role } }", "operationName": ["Listed"]}
    assert (await client.post("/graphql", json=mistaken, headers=viewer)).status_code == 400
    good = {"query": "query LabelledOnce { suspendedRuns { total } }"}
    assert "errors" not in (await client.post("/graphql", json=good, headers=viewer)).json()
    scraped = samples((await client.get("/metrics", headers=viewer)).text)
    labels = {
        dict(labels).get("operation")
        for (name, labels) in scraped
        if name == "suspended_runs_graphql_request_seconds_count"
    }
    assert "LabelledOnce" in labels and "other" in labels
    assert not {label for label in labels if label and label.startswith(("Junk", "Failing"))}
