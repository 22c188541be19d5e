"""`subscription { suspendedRuns }` (schema/subscription.py) as the npm `graphql-ws` client
sees it, against a real Mastra server: what Mastra writes, and what another instance
decides, is pushed to the subscriber without any polling of its own."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.helpers import APPROVE, CLIENTS_DIR, ThreadedServer, act, make_gql
from tests.mastra_peer import MastraPeer, delete, settings_for

WATCH = """subscription($thread: String) {
  suspendedRuns(filter: {threadId: $thread}) {
    total runs { runId status toolCalls { toolName args requiresApproval } } } }"""


class Subscriber:
    """The `graphql-ws` client (tests/graphql_clients/subscribe.mjs) as a process."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    @classmethod
    async def start(cls, node: Path, url: str, query: str, **variables: Any) -> Subscriber:
        process = await asyncio.create_subprocess_exec(
            str(node),
            str(CLIENTS_DIR / "subscribe.mjs"),
            url.replace("http", "ws") + "/graphql",
            query,
            json.dumps(variables),
            cwd=CLIENTS_DIR,
            stdout=asyncio.subprocess.PIPE,
        )
        return cls(process)

    async def until(self, holds: Callable[[dict[str, Any]], bool], within: float = 10) -> Any:
        """The first page pushed that `holds`; fails on an error or a close."""
        assert self.process.stdout is not None
        async with asyncio.timeout(within):
            while True:
                event = json.loads(await self.process.stdout.readline() or b'{"eof": 1}')
                assert "next" in event, event
                page = event["next"]["data"]["suspendedRuns"]
                if holds(page):
                    return page

    def stop(self) -> None:
        if self.process.returncode is None:
            self.process.terminate()


async def test_graphql_ws_gets_what_mastra_writes_and_what_another_instance_decides(
    mongo_uri: str, peer: MastraPeer, clients_node: Path, start_app
) -> None:
    thread = f"th-{uuid.uuid4().hex[:8]}"
    elsewhere = make_gql(await start_app(settings_for(mongo_uri, peer)))
    with ThreadedServer(settings_for(mongo_uri, peer)) as url:
        subscriber = await Subscriber.start(clients_node, url, WATCH, thread=thread)
        try:
            first = await subscriber.until(lambda page: True)
            assert first == {"total": 0, "runs": []}
            run_id = await peer.start_run("approver", [delete(f"/tmp/{thread}")], thread=thread)
            shown = await subscriber.until(lambda page: page["total"] == 1)
            assert shown["runs"][0]["runId"] == run_id
            assert shown["runs"][0]["toolCalls"] == [
                {
                    "toolName": "deleteFile",
                    "args": {"path": f"/tmp/{thread}"},
                    "requiresApproval": True,
                }
            ]
            decided = await act(elsewhere, APPROVE, runId=run_id)
            assert decided["__typename"] == "RunDecided", decided
            assert await subscriber.until(lambda page: page["total"] == 0) == {
                "total": 0,
                "runs": [],
            }
        finally:
            subscriber.stop()
