"""A graphql-transport-ws client for tests, on the `websockets` package: a connection past
`connection_ack`, subscriptions, and how a connection was closed."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

PROTOCOL = "graphql-transport-ws"
SUBSCRIBE = "subscription { suspendedRuns { total runs { runId } } }"


async def open_session(
    url: str, payload: dict[str, Any] | None = None, *, origin: str | None = None
) -> ClientConnection:
    """A connection past `connection_ack` (fails the test if none comes)."""
    ws = await connect(
        url.replace("http", "ws") + "/graphql",
        subprotocols=[PROTOCOL],  # type: ignore[list-item]
        origin=origin,  # type: ignore[arg-type]
    )
    await ws.send(json.dumps({"type": "connection_init", "payload": payload or {}}))
    answer = json.loads(await ws.recv())
    assert answer["type"] == "connection_ack", answer
    return ws


async def subscribe(ws: ClientConnection, op_id: str, query: str = SUBSCRIBE) -> dict[str, Any]:
    """Subscribes; the first message the server answers for it."""
    await ws.send(json.dumps({"id": op_id, "type": "subscribe", "payload": {"query": query}}))
    return await next_for(ws, op_id)


async def next_for(ws: ClientConnection, op_id: str) -> dict[str, Any]:
    while True:
        message = json.loads(await ws.recv())
        if message.get("id") == op_id:
            return dict(message)


async def closed_with(ws: ClientConnection, within: float) -> tuple[int | None, str]:
    with pytest.raises(ConnectionClosed) as closed:
        async with asyncio.timeout(within):
            while True:
                await ws.recv()
    frame = closed.value.rcvd
    return (frame.code, frame.reason) if frame else (None, "")


async def page_of(ws: ClientConnection, op_id: str, message: dict[str, Any], total: int) -> Any:
    """The page of `message`, or of the next ones for `op_id`, once it lists `total` runs
    (the follower may not have applied what was written yet)."""
    page = message["payload"]["data"]["suspendedRuns"]
    while page["total"] != total:
        page = (await next_for(ws, op_id))["payload"]["data"]["suspendedRuns"]
    return page
