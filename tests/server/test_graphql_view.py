"""GraphQL over HTTP (server/graphql_view.py): media types and their status codes,
request errors as GraphQL JSON, batches; graphql-http's audit suite and Apollo Client's
BatchHttpLink against a served instance."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from suspended_runs.server import Settings
from tests.helpers import START, ThreadedServer, node_client

GRAPHQL_RESPONSE = "application/graphql-response+json"
NEW = {"accept": GRAPHQL_RESPONSE}
APOLLO_ACCEPT = {"accept": f"{GRAPHQL_RESPONSE},application/json;q=0.9"}
START_ONE = {"input": {"agentId": "file-cleaner", "prompt": "delete /tmp/a.txt"}}


def test_graphql_https_audit_suite_passes_every_audit(
    clients_node: Path, settings: Settings
) -> None:
    with ThreadedServer(settings) as url:
        results = node_client(clients_node, "audit.mjs", f"{url}/graphql")
    assert len(results) >= 61
    assert [r for r in results if r["status"] != "ok"] == []


async def test_graphql_response_json_says_400_without_data_for_what_was_not_executed(
    client,
) -> None:
    refused = {
        "parse": {"query": "{"},
        "validation": {"query": "{ nope }"},
        "coercion": {
            "query": "query($n: Int!) { runs(first: $n) { total } }",
            "variables": {"n": "x"},
        },
    }
    for kind, body in refused.items():
        answer = await client.post("/graphql", json=body, headers=APOLLO_ACCEPT)
        assert answer.status_code == 400, kind
        assert answer.headers["content-type"].startswith(GRAPHQL_RESPONSE), kind
        assert "data" not in answer.json() and answer.json()["errors"], kind
        legacy = await client.post("/graphql", json=body)
        assert legacy.status_code == 200 and legacy.json()["data"] is None, kind
        assert legacy.headers["content-type"].startswith("application/json"), kind
    ran = await client.post("/graphql", json={"query": "{ __typename }"}, headers=APOLLO_ACCEPT)
    assert (ran.status_code, ran.json()) == (200, {"data": {"__typename": "Query"}})


async def test_request_errors_are_graphql_json_in_the_negotiated_type(client) -> None:
    cases: list[tuple[str, dict[str, Any], int]] = [
        (
            "malformed JSON",
            {"content": b'{"query": ', "headers": {"content-type": "application/json"}},
            400,
        ),
        ("no query", {"json": {"variables": {}}}, 400),
        (
            "unknown operationName",
            {"json": {"query": "query A { __typename }", "operationName": "B"}},
            400,
        ),
        ("wrong content type", {"content": b"{}", "headers": {"content-type": "text/plain"}}, 400),
        ("a subscription", {"json": {"query": "subscription { suspendedRuns { total } }"}}, 400),
    ]
    for media in ("application/json", GRAPHQL_RESPONSE):
        for name, request, status in cases:
            headers = {**request.get("headers", {}), "accept": media}
            answer = await client.post("/graphql", **{**request, "headers": headers})
            assert answer.status_code == status, name
            assert answer.headers["content-type"].startswith(media), name
            [error] = answer.json()["errors"]
            assert error["extensions"]["code"] == "BAD_REQUEST" and error["message"], name
    mutation = await client.get(
        "/graphql", params={"query": "mutation { __typename }"}, headers=NEW
    )
    assert mutation.status_code == 405
    assert mutation.json()["errors"][0]["extensions"]["code"] == "METHOD_NOT_ALLOWED"
    unacceptable = await client.post(
        "/graphql", json={"query": "{ __typename }"}, headers={"accept": "text/plain"}
    )
    assert unacceptable.status_code == 406
    assert unacceptable.json()["errors"][0]["extensions"]["code"] == "NOT_ACCEPTABLE"


async def test_a_batch_is_answered_in_order_and_a_mutation_runs_before_what_follows_it(
    client,
) -> None:
    batch = [
        {"query": START, "variables": START_ONE},
        {"query": "{ suspendedRuns { total } }"},
        {"query": "{ nope }"},
        {"query": "query Who { viewer { role } }", "operationName": "Who"},
    ]
    answer = await client.post("/graphql", json=batch, headers=APOLLO_ACCEPT)
    assert answer.status_code == 200
    started, listed, invalid, who = answer.json()
    assert started["data"]["startRun"]["__typename"] == "RunStarted"
    assert listed == {"data": {"suspendedRuns": {"total": 1}}}
    assert "data" not in invalid and invalid["errors"][0]["extensions"]["code"] == (
        "GRAPHQL_VALIDATION_FAILED"
    )
    assert who == {"data": {"viewer": {"role": "ADMIN"}}}


async def test_a_batch_over_the_limit_is_one_400_and_runs_nothing(settings, start_app) -> None:
    client = await start_app(settings.model_copy(update={"max_batch_operations": 3}))
    batch = [{"query": START, "variables": START_ONE}] * 4
    answer = await client.post("/graphql", json=batch)
    assert answer.status_code == 400
    [error] = answer.json()["errors"]
    assert error["extensions"]["code"] == "BATCH_TOO_LARGE" and "at most 3" in error["message"]
    listed = await client.post("/graphql", json={"query": "{ runs { total } }"})
    assert listed.json()["data"]["runs"]["total"] == 0
    assert (await client.post("/graphql", json=[])).status_code == 400


async def test_a_batch_shares_one_requests_budget(settings, start_app) -> None:
    client = await start_app(settings.model_copy(update={"max_rows_per_request": 100}))
    page = {"query": "{ runs(first: 40) { total } }"}
    answers = (await client.post("/graphql", json=[page, page, page])).json()
    limited = [a for a in answers if "errors" in a]
    assert len(limited) == 1, answers
    assert limited[0]["errors"][0]["extensions"]["limit"] == "MAX_ROWS_PER_REQUEST"


def test_apollos_batch_http_link_gets_each_answer_from_one_request(
    clients_node: Path, settings: Settings
) -> None:
    with ThreadedServer(settings) as url:
        got = node_client(clients_node, "apollo.mjs", f"{url}/graphql", "batch")
    assert "error" not in got, got
    [request] = got["requests"]
    assert request["method"] == "POST" and len(request["body"]) == 3
    assert [set(data) for data in got["data"]] == [{"viewer"}, {"agents"}, {"__typename"}]
