"""A request's JSON (server/json_body.py), as the endpoint answers it: text that is no
Unicode (a lone surrogate, valid JSON but not encodable as UTF-8) is a bad request
wherever it sits, with no error logged; a batch holds operations, not arrays."""

from __future__ import annotations

import json
import logging

import httpx
import pytest

from tests.helpers import START

LONE = "\\ud800"
"""A lone surrogate as JSON escapes it: the text `\\ud800` in the body."""


def _body(query: str, spelled: str = LONE, **variables: object) -> bytes:
    """A request body with `spelled` (JSON text) wherever `LONE` stands in it."""
    text = json.dumps({"query": query, "variables": variables})
    return text.replace("LONE", spelled).encode()


CASES = {
    "a filter": _body("query($a: ID) { suspendedRuns(filter: {agentId: $a}) { total } }", a="LONE"),
    "a literal in the query": _body('{ suspendedRuns(filter: {agentId: "LONE"}) { total } }'),
    "startRun's prompt": _body(START, input={"agentId": "file-cleaner", "prompt": "LONE"}),
    "startRun's resourceId": _body(
        START, input={"agentId": "file-cleaner", "prompt": "go", "resourceId": "LONE"}
    ),
    "declineToolCall's reason": _body(
        "mutation($i: DeclineToolCallInput!) { declineToolCall(input: $i) { __typename } }",
        i={"runId": "r", "toolCallId": "t", "reason": "LONE"},
    ),
    "createWebhook's description": _body(
        "mutation($i: CreateWebhookInput!) { createWebhook(input: $i) { __typename } }",
        i={"url": "http://127.0.0.1:9/hook", "events": ["RUN_SUSPENDED"], "description": "LONE"},
    ),
    "a key": _body("{ __typename }", LONE="x"),
    "the operation name": json.dumps({"query": "{ __typename }"}).encode()[:-1]
    + f', "operationName": "{LONE}"}}'.encode(),
}


@pytest.mark.parametrize("case", CASES)
async def test_text_that_is_no_unicode_is_a_bad_request_and_logs_no_error(
    client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture, case: str
) -> None:
    with caplog.at_level(logging.ERROR):
        answer = await client.post(
            "/graphql", content=CASES[case], headers={"content-type": "application/json"}
        )
    assert answer.status_code == 400, answer.text
    [error] = answer.json()["errors"]
    assert error["extensions"]["code"] == "BAD_REQUEST"
    assert "surrogate" in error["message"]
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []


async def test_get_variables_that_are_no_unicode_are_a_bad_request(
    client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    query = "query($a: ID) { suspendedRuns(filter: {agentId: $a}) { total } }"
    with caplog.at_level(logging.ERROR):
        answer = await client.get(
            "/graphql", params={"query": query, "variables": f'{{"a": "{LONE}"}}'}
        )
    assert answer.status_code == 400, answer.text
    assert answer.json()["errors"][0]["extensions"]["code"] == "BAD_REQUEST"
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []


async def test_a_surrogate_pair_is_a_character_and_is_served(client: httpx.AsyncClient) -> None:
    query = "query($a: ID) { suspendedRuns(filter: {agentId: $a}) { total } }"
    body = _body(query, "\\ud83d\\ude00", a="LONE")
    answer = await client.post(
        "/graphql", content=body, headers={"content-type": "application/json"}
    )
    assert answer.json() == {"data": {"suspendedRuns": {"total": 0}}}


async def test_a_nested_batch_is_told_that_a_batch_holds_operations(
    client: httpx.AsyncClient,
) -> None:
    answer = await client.post("/graphql", json=[[{"query": "{ __typename }"}]])
    assert answer.status_code == 400
    [error] = answer.json()["errors"]
    assert error == {
        "message": "a batch holds operations, not arrays",
        "extensions": {"code": "BAD_REQUEST"},
    }
    mixed = await client.post("/graphql", json=[{"query": "{ __typename }"}, 1])
    assert mixed.status_code == 400
    assert mixed.json()["errors"][0]["message"] == "a batch holds operations (JSON objects)"
