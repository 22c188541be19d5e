"""A thread is read by bounded queries only: a new interrupt in a thread of 10,000
checkpoints costs the database what it costs in a thread of 3, counted by the commands
sent and the documents they return; a state of 5 MB is read once, for a batch's ids."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base.id import uuid6
from pymongo import AsyncMongoClient, monitoring

from suspended_runs.storage import Document
from suspended_runs.storage.follower.thread_reads import Hint, ThreadReader
from suspended_runs.storage.snapshots.langgraph.threads import ThreadReading
from tests.langgraph_documents import Threads, checkpoint, interrupted, write


class Commands(monitoring.CommandListener):
    """The reads a client sent, and how many documents they returned."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.returned = 0

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if event.command_name in ("find", "aggregate", "getMore"):
            self.sent.append(event.command_name)

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        cursor = event.reply.get("cursor") if isinstance(event.reply, dict) else None
        if isinstance(cursor, dict):
            self.returned += len(cursor.get("firstBatch") or cursor.get("nextBatch") or [])

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


@pytest.fixture
def threads(mongo_uri: str, db: Any) -> Iterator[Threads]:
    written = Threads(mongo_uri, f"{db.name}_lg")
    yield written
    written.client.drop_database(f"{db.name}_lg")
    written.close()


@pytest.fixture
async def counted(mongo_uri: str, db: Any) -> AsyncIterator[tuple[ThreadReader, Commands]]:
    commands = Commands()
    client: AsyncMongoClient[Document] = AsyncMongoClient(mongo_uri, event_listeners=[commands])
    saver = client[f"{db.name}_lg"]
    yield ThreadReader(saver["checkpoints"], saver["checkpoint_writes"], ThreadReading()), commands
    await client.close()


def long_thread(threads: Threads, thread_id: str, earlier: int) -> str:
    """`earlier` checkpoints of ten-step invocations, then one of three interrupted at its
    end; the interrupted checkpoint's id."""
    ids = [str(uuid6(clock_seq=i)) for i in range(earlier + 3)]
    docs = [
        checkpoint(
            thread_id,
            cid,
            ids[i - 1] if i else None,
            source="input" if i % 10 == 0 or i == earlier else "loop",
        )
        for i, cid in enumerate(ids)
    ]
    for i in range(0, len(docs), 2000):
        threads.db.checkpoints.insert_many(docs[i : i + 2000])
    threads.interrupt(thread_id, ids[-1], {"question": "?"})
    return ids[-1]


async def test_a_new_interrupt_costs_what_it_costs_in_a_short_thread(threads, counted) -> None:
    reader, commands = counted
    short = long_thread(threads, "short", 0)
    long = long_thread(threads, "long", 10_000)
    costs = []
    for thread_id, at in (("short", short), ("long", long)):
        commands.sent, commands.returned = [], 0
        look = await reader.look(thread_id, Hint(at))
        assert look.run is not None and look.run.entry.suspended_at is not None
        costs.append((list(commands.sent), commands.returned))
    assert costs[0] == costs[1], costs
    assert costs[1][1] <= 5  # the checkpoint, its write, two parents on the walk


async def test_a_thread_moved_past_the_checkpoint_looked_at_is_one_read(threads, counted) -> None:
    reader, commands = counted
    at = long_thread(threads, "moved", 30)
    threads.db.checkpoints.insert_one(checkpoint("moved", str(uuid6()), at))
    look = await reader.look("moved", Hint(at))
    assert look.run is None and not look.gone
    assert commands.sent == ["find"] and commands.returned == 2  # it, and one newer


async def test_a_state_of_megabytes_is_read_once_for_a_batchs_call_ids(threads, counted) -> None:
    reader, commands = counted
    call = {"name": "refund", "args": {"order": "A-1"}, "id": "call_big", "type": "tool_call"}
    history = [HumanMessage(content="x" * 5_000_000), AIMessage(content="", tool_calls=[call])]
    here = str(uuid6())
    state = {"channel_values": {"messages": history}}
    threads.db.checkpoints.insert_one(checkpoint("big", here, None, source="input", state=state))
    ask = {"action_requests": [{"name": "refund", "args": {"order": "A-1"}}], "review_configs": []}
    threads.db.checkpoint_writes.insert_one(write("big", here, "__interrupt__", interrupted(ask)))
    look = await reader.look("big", Hint(here))
    assert look.run is not None
    assert [c.tool_call_id for c in look.run.entry.tool_calls] == ["call_big"]
    assert commands.sent.count("find") == 2  # the checkpoint (and any newer), its state
