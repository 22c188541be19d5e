"""How errors leave the server (schema/errors.py): a code on each, internal ones masked."""

from __future__ import annotations

import json
import logging

import httpx

from suspended_runs.server.embedded_mongodb import EmbeddedMongoDB
from suspended_runs.server.logs import JsonFormatter
from suspended_runs.storage import RunIndex
from tests.helpers import Server


async def test_internal_errors_are_masked_and_logged(gql, monkeypatch, caplog) -> None:
    async def broken(*args, **kwargs):
        raise RuntimeError("connection string mongodb://secret@db")

    monkeypatch.setattr(RunIndex, "page", broken)
    with caplog.at_level(logging.ERROR, logger="suspended_runs.schema.errors"):
        body = await gql("{ suspendedRuns { runs { runId } } }")
    [error] = body["errors"]
    assert error["message"] == "Internal server error."
    assert error["extensions"]["code"] == "INTERNAL_SERVER_ERROR"
    assert set(error["extensions"]) == {"code", "requestId"}  # the id finds the log line
    assert "secret" not in str(body)
    [record] = [r for r in caplog.records if r.getMessage() == "internal error"]
    line = json.loads(JsonFormatter().format(record))
    # The operator learns what and where, never the message or the trace.
    assert line["errorType"] == "RuntimeError"
    assert "test_errors.py" in line["raisedAt"] and "broken" in line["raisedAt"]
    assert "secret" not in json.dumps(line) and "Traceback" not in json.dumps(line)


async def test_syntax_errors_are_parse_failures(gql) -> None:
    body = await gql("{ suspendedRuns { ")
    assert body["errors"][0]["extensions"]["code"] == "GRAPHQL_PARSE_FAILED"


async def test_unknown_fields_are_validation_failures(gql) -> None:
    body = await gql("{ suspendedRuns { nope } }")
    [error] = body["errors"]
    assert error["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"
    assert "nope" in error["message"]


async def test_bad_literal_arguments_are_bad_user_input(gql) -> None:
    body = await gql('{ suspendedRuns(filter: { fromDate: "soon" }) { total } }')
    assert body["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"


LIST = "{ suspendedRuns { total runs { runId } } }"


def test_a_read_while_the_database_is_killed_answers_database_unavailable(
    own_database: EmbeddedMongoDB, server: Server
) -> None:
    # A database no `serve` supervises: it stays down (tests/server/test_supervisor.py).
    server.env["MONGODB_URI"] = own_database.uri
    server.start()
    assert httpx.post(f"{server.url}/graphql", json={"query": LIST}).status_code == 200
    own_database.kill()
    posted = httpx.post(f"{server.url}/graphql", json={"query": LIST}, timeout=60)
    assert posted.status_code == 200  # a POST of application/json: the error says it
    [error] = posted.json()["errors"]
    assert error["extensions"] == {"code": "DATABASE_UNAVAILABLE", "retryAfterSeconds": 5}
    assert error["message"] == "the database is unavailable; try again"
    got = httpx.get(f"{server.url}/graphql", params={"query": LIST}, timeout=60)
    assert (got.status_code, got.headers["retry-after"]) == (503, "5")
    assert got.json()["errors"][0]["extensions"]["code"] == "DATABASE_UNAVAILABLE"
    ready = httpx.get(f"{server.url}/readyz", timeout=60)
    assert (ready.status_code, ready.json()) == (
        503,
        {"status": "unavailable", "reason": "database"},
    )
    assert "Traceback" not in server.log.read_text()
