"""Subscriptions over WebSocket (server/websocket.py), against a real uvicorn server: who
may connect, and how a connection ends. The npm `graphql-ws` client's test is in
tests/schema/test_subscription.py."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from pathlib import Path

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import InvalidStatus

from suspended_runs.server import Settings
from suspended_runs.server.auth import new_api_key
from suspended_runs.server.persisted_queries import MANIFEST_FORMAT
from tests.builders import SECRET_SETTING, token
from tests.graphql_ws import PROTOCOL, closed_with, next_for, open_session, page_of, subscribe
from tests.helpers import ThreadedServer, suspended_doc


async def subscribe_when_free(ws: ClientConnection, within: float = 5.0) -> bool:
    """Subscribes again and again until the server takes one (a complete is async)."""
    deadline = time.monotonic() + within
    for attempt in range(1000):
        if (await subscribe(ws, f"again-{attempt}"))["type"] == "next":
            return True
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.05)
    return False


@pytest.fixture
def key_file(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    keys: dict[str, str] = {}
    entries = []
    for name, role in (("watcher", "viewer"), ("other", "viewer"), ("roleless", "none")):
        key, digest = new_api_key()
        keys[name] = key
        entries.append({"name": name, "sha256": digest, "role": role, "scope": "all"})
    path = tmp_path / "keys.json"
    path.write_text(json.dumps(entries))
    return path, keys


@pytest.fixture
def secured(settings: Settings, key_file: tuple[Path, dict[str, str]]) -> Settings:
    return settings.model_copy(
        update={
            "api_keys_file": key_file[0],
            "api_keys_reload_seconds": 0.2,
            "jwt_secret": SECRET_SETTING,
            "jwt_leeway_seconds": 0.0,
            "cors_origins": "https://dashboard.example",
            "max_subscriptions_per_caller": 3,
        }
    )


async def test_a_subscriber_gets_the_page_at_once_and_again_when_it_changes(
    settings: Settings, snapshots
) -> None:
    await snapshots.insert_one(suspended_doc("ws-1"))
    with ThreadedServer(settings) as url:
        ws = await open_session(url)
        assert (await page_of(ws, "1", await subscribe(ws, "1"), 1))["total"] == 1
        await snapshots.insert_one(suspended_doc("ws-2"))
        pushed = await next_for(ws, "1")
        runs = [r["runId"] for r in pushed["payload"]["data"]["suspendedRuns"]["runs"]]
        assert sorted(runs) == ["ws-1", "ws-2"]
        await ws.close()


async def test_credentials_come_in_connection_init_and_a_refused_key_gets_4403(
    secured: Settings, key_file: tuple[Path, dict[str, str]]
) -> None:
    keys = key_file[1]
    with ThreadedServer(secured) as url:
        by_key = await open_session(url, {"apiKey": keys["watcher"]})
        assert (await subscribe(by_key, "1"))["type"] == "next"
        by_token = await open_session(url, {"authorization": f"Bearer {token()}"})
        assert (await subscribe(by_token, "1"))["type"] == "next"
        for payload in ({"apiKey": "sr_not-a-key"}, {}, {"authorization": "Bearer x.y.z"}):
            ws = await connect(url.replace("http", "ws") + "/graphql", subprotocols=[PROTOCOL])  # type: ignore[list-item]
            await ws.send(json.dumps({"type": "connection_init", "payload": payload}))
            assert await closed_with(ws, within=5) == (4403, "Forbidden"), payload
        await by_key.close()
        await by_token.close()


async def test_a_foreign_origin_is_refused_at_the_handshake(
    secured: Settings, key_file: tuple[Path, dict[str, str]]
) -> None:
    keys = key_file[1]
    with ThreadedServer(secured) as url:
        with pytest.raises(InvalidStatus) as refused:
            await open_session(url, {"apiKey": keys["watcher"]}, origin="https://evil.example")
        assert refused.value.response.status_code == 403
        for origin in ("https://dashboard.example", url):  # allowed, and its own origin
            ws = await open_session(url, {"apiKey": keys["watcher"]}, origin=origin)
            await ws.close()


async def test_beyond_the_callers_limit_a_subscription_ends_with_an_error_naming_it(
    secured: Settings, key_file: tuple[Path, dict[str, str]]
) -> None:
    keys = key_file[1]
    with ThreadedServer(secured) as url:
        first = await open_session(url, {"apiKey": keys["watcher"]})
        second = await open_session(url, {"apiKey": keys["watcher"]})
        for op_id in ("1", "2"):
            assert (await subscribe(first, op_id))["type"] == "next"
        assert (await subscribe(second, "1"))["type"] == "next"
        over = await subscribe(second, "2")
        assert over["type"] == "error", over
        assert over["payload"][0]["extensions"]["code"] == "SUBSCRIPTION_LIMIT"
        assert "MAX_SUBSCRIPTIONS_PER_CALLER" in over["payload"][0]["message"]
        other = await open_session(url, {"apiKey": keys["other"]})  # another caller's own
        assert (await subscribe(other, "1"))["type"] == "next"
        await first.send(json.dumps({"id": "1", "type": "complete"}))
        assert await subscribe_when_free(second), "the place of a completed one came free"
        for ws in (first, second, other):
            await ws.close()


async def test_an_expiring_token_ends_its_connection_with_4401(secured: Settings) -> None:
    with ThreadedServer(secured) as url:
        ws = await open_session(url, {"authorization": f"Bearer {token(exp=int(time.time()) + 2)}"})
        assert (await subscribe(ws, "1"))["type"] == "next"
        assert await closed_with(ws, within=10) == (4401, "the token has expired")


async def test_a_revoked_key_ends_its_connection_at_the_next_reload(
    secured: Settings, key_file: tuple[Path, dict[str, str]]
) -> None:
    path, keys = key_file
    with ThreadedServer(secured) as url:
        revoked = await open_session(url, {"apiKey": keys["watcher"]})
        kept = await open_session(url, {"apiKey": keys["other"]})
        assert (await subscribe(revoked, "1"))["type"] == "next"
        assert (await subscribe(kept, "1"))["type"] == "next"
        entries = [e for e in json.loads(path.read_text()) if e["name"] != "watcher"]
        path.write_text(json.dumps(entries))
        assert await closed_with(revoked, within=10) == (4401, "the API key was revoked")
        await kept.ping()
        await kept.close()


async def test_the_legacy_graphql_ws_protocol_is_off(settings: Settings) -> None:
    with ThreadedServer(settings) as url:
        ws = await connect(url.replace("http", "ws") + "/graphql", subprotocols=["graphql-ws"])  # type: ignore[list-item]
        assert ws.subprotocol is None
        assert (await closed_with(ws, within=5))[0] == 4406


async def test_a_message_of_the_wrong_shape_closes_with_4400(settings: Settings) -> None:
    with ThreadedServer(settings) as url:
        ws = await open_session(url)
        await ws.send(json.dumps([{"type": "ping"}]))
        assert (await closed_with(ws, within=5))[0] == 4400
        ws = await open_session(url)
        await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": {"query": 5}}))
        assert (await closed_with(ws, within=5))[0] == 4400


async def test_a_message_holding_a_lone_surrogate_closes_with_4400_saying_so(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    """Valid JSON, but no text: refused where it comes in, as over HTTP, with no error."""
    query = "subscription($a: ID) { suspendedRuns(filter: {agentId: $a}) { total } }"
    message = json.dumps(
        {"id": "1", "type": "subscribe", "payload": {"query": query, "variables": {"a": "LONE"}}}
    ).replace("LONE", "\\ud800")
    with caplog.at_level(logging.ERROR), ThreadedServer(settings) as url:
        ws = await open_session(url)
        await ws.send(message)
        code, reason = await closed_with(ws, within=5)
    assert code == 4400 and "lone surrogate" in reason, reason
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []


async def test_queries_run_over_a_connection_and_errors_read_as_over_http(
    secured: Settings, key_file: tuple[Path, dict[str, str]]
) -> None:
    keys = key_file[1]
    with ThreadedServer(secured) as url:
        ws = await open_session(url, {"apiKey": keys["watcher"]})
        answer = await subscribe(ws, "q", "{ viewer { subject role } }")
        assert answer["payload"] == {
            "data": {"viewer": {"subject": "key:watcher", "role": "VIEWER"}}
        }
        assert (await next_for(ws, "q"))["type"] == "complete"
        bad = await subscribe(ws, "bad", "subscription { suspendedRuns(first: 0) { total } }")
        assert bad["payload"][0]["extensions"]["code"] == "BAD_USER_INPUT", bad
        roleless = await open_session(url, {"apiKey": keys["roleless"]})
        refused = await subscribe(roleless, "1")
        assert refused["type"] == "error", refused
        assert refused["payload"][0]["extensions"]["code"] == "FORBIDDEN"
        for open_ws in (ws, roleless):
            await open_ws.close()


async def test_a_server_of_trusted_documents_runs_no_other_document_over_a_connection(
    settings: Settings, tmp_path: Path
) -> None:
    trusted = "subscription Mine { suspendedRuns { total } }"
    operation = {"id": hashlib.sha256(trusted.encode()).hexdigest(), "body": trusted}
    manifest = tmp_path / "manifest.json"
    manifest.write_text(
        json.dumps({"format": MANIFEST_FORMAT, "version": 1, "operations": [operation]})
    )
    update = {"persisted_queries_only": True, "persisted_queries_file": manifest}
    with ThreadedServer(settings.model_copy(update=update)) as url:
        ws = await open_session(url)
        assert (await subscribe(ws, "1", trusted))["type"] == "next"
        refused = await subscribe(ws, "2", "subscription { suspendedRuns { total } }")
        assert refused["type"] == "error", refused
        assert refused["payload"][0]["extensions"]["code"] == "PERSISTED_QUERY_NOT_ALLOWED"
        await ws.close()
