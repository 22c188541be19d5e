"""Request ids and the JSON log (server/logs.py), over HTTP: every answer carries its
request's id, every log line written while serving it holds the id, and no exception
text reaches a client."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from suspended_runs.schema import MASKED_MESSAGE
from suspended_runs.server.graphql_view import GraphQLApp
from suspended_runs.server.logs import JsonFormatter
from suspended_runs.storage import RunIndex

SECRET_TEXT = "document content that must stay in the server"
NEW_ID = re.compile(r"[0-9a-f]{32}")


@pytest.fixture
def log_lines() -> Iterator[Callable[[], list[dict[str, Any]]]]:
    """The JSON lines that the server's formatter has written so far in the test."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


async def test_every_answer_carries_a_request_id(settings, start_app) -> None:
    client = await start_app(settings.model_copy(update={"max_request_bytes": 2048}))
    answers = [
        await client.get("/healthz"),
        await client.post("/graphql", json={"query": "{ agents { id } }"}),
        await client.post("/graphql", json={"query": "{ nope }"}),  # 200 with an error
        await client.post("/graphql", content=b"x" * 4000),  # 413
        await client.get("/healthz", headers={"host": "evil.example"}),  # 400
    ]
    assert [a.status_code for a in answers] == [200, 200, 200, 413, 400]
    ids = [a.headers["x-request-id"] for a in answers]
    assert all(NEW_ID.fullmatch(i) for i in ids) and len(set(ids)) == len(ids)
    for given, kept in [
        ("client-1.retry_2", True),
        ("a" * 64, True),
        ("a" * 65, False),
        ("has space", False),
        ("line\\nbreak", False),
        ("", False),
    ]:
        answer = await client.get("/healthz", headers={"x-request-id": given})
        assert (answer.headers["x-request-id"] == given) is kept, given
        if not kept:
            assert NEW_ID.fullmatch(answer.headers["x-request-id"])


async def test_a_masked_error_names_its_request_and_its_log_lines_hold_it(
    client, monkeypatch, log_lines
) -> None:
    async def broken(self: RunIndex, run_id: str) -> None:
        raise RuntimeError(SECRET_TEXT)

    monkeypatch.setattr(RunIndex, "get", broken)
    response = await client.post(
        "/graphql",
        json={"query": '{ agentRun(runId: "r-1") { runId } }'},
        headers={"x-request-id": "trace-42"},
    )
    assert response.headers["x-request-id"] == "trace-42"
    [error] = response.json()["errors"]
    assert error["message"] == MASKED_MESSAGE
    assert error["extensions"] == {"code": "INTERNAL_SERVER_ERROR", "requestId": "trace-42"}
    assert SECRET_TEXT not in response.text
    monkeypatch.undo()
    mine = [line for line in log_lines() if line.get("requestId") == "trace-42"]
    assert {line["message"] for line in mine} >= {"internal error", "request"}
    assert SECRET_TEXT not in json.dumps(log_lines())


async def test_an_exception_outside_graphql_is_a_masked_500(client, monkeypatch, log_lines) -> None:
    async def broken(self: GraphQLApp, request: Any, response: Any) -> None:
        raise RuntimeError(SECRET_TEXT)

    monkeypatch.setattr(GraphQLApp, "get_context", broken)
    response = await client.post("/graphql", json={"query": "{ agents { id } }"})
    assert response.status_code == 500
    request_id = response.headers["x-request-id"]
    assert response.json() == {
        "data": None,
        "errors": [
            {
                "message": MASKED_MESSAGE,
                "extensions": {"code": "INTERNAL_SERVER_ERROR", "requestId": request_id},
            }
        ],
    }
    monkeypatch.undo()
    [unhandled] = [line for line in log_lines() if line["message"] == "unhandled error"]
    assert unhandled["requestId"] == request_id and unhandled["errorType"] == "RuntimeError"
    assert SECRET_TEXT not in json.dumps(log_lines())
