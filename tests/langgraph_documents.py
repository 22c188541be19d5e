"""LangGraph's documents written directly, as `MongoDBSaver` writes them (LangGraph's own
serializer, LangGraph's own ids), for the cases a real graph does not make: long threads,
large states, and every kind of bad value."""

from __future__ import annotations

import uuid
from typing import Any

from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.types import Interrupt
from pymongo import MongoClient
from pymongo.database import Database

from suspended_runs.storage import Document

SERDE = JsonPlusSerializer()
INTERRUPT_TASK_PATH = "~__pregel_pull, ask"


def typed(value: Any) -> tuple[str, bytes]:
    return SERDE.dumps_typed(value)


def checkpoint(
    thread_id: str,
    checkpoint_id: str,
    parent: str | None,
    *,
    source: str = "loop",
    state: Any = None,
    **metadata: Any,
) -> Document:
    kind, blob = typed(state if state is not None else {"channel_values": {}})
    meta = {key: list(typed(value)) for key, value in {"source": source, **metadata}.items()}
    return {
        "thread_id": thread_id,
        "checkpoint_ns": "",
        "checkpoint_id": checkpoint_id,
        "parent_checkpoint_id": parent,
        "type": kind,
        "checkpoint": blob,
        "metadata": meta,
    }


def write(
    thread_id: str,
    checkpoint_id: str,
    channel: str,
    value: Any,
    *,
    task_id: str = "task-1",
    idx: int = -3,
    raw: tuple[str, Any] | None = None,
) -> Document:
    kind, data = raw if raw is not None else typed(value)
    return {
        "thread_id": thread_id,
        "checkpoint_ns": "",
        "checkpoint_id": checkpoint_id,
        "task_id": task_id,
        "task_path": INTERRUPT_TASK_PATH,
        "idx": idx,
        "channel": channel,
        "type": kind,
        "value": data,
    }


def interrupted(value: Any, interrupt_id: str | None = None) -> list[Interrupt]:
    return [Interrupt(value=value, id=interrupt_id or uuid.uuid4().hex)]


class Threads:
    """Writes threads into a saver's two collections (synchronously, as the saver does)."""

    def __init__(self, uri: str, database: str) -> None:
        self.client: MongoClient[Document] = MongoClient(uri)
        self.db: Database[Document] = self.client[database]

    def close(self) -> None:
        self.client.close()

    def chain(self, thread_id: str, length: int, **metadata: Any) -> list[str]:
        """`length` root checkpoints of one invocation (the first its input); their ids."""
        ids = [str(uuid6(clock_seq=i)) for i in range(length)]
        docs = [
            checkpoint(
                thread_id,
                checkpoint_id,
                ids[i - 1] if i else None,
                source="input" if i == 0 else "loop",
                **metadata,
            )
            for i, checkpoint_id in enumerate(ids)
        ]
        for i in range(0, len(docs), 1000):
            self.db.checkpoints.insert_many(docs[i : i + 1000])
        return ids

    def interrupt(
        self, thread_id: str, checkpoint_id: str, value: Any, *, raw: tuple[str, Any] | None = None
    ) -> Document:
        doc = write(thread_id, checkpoint_id, "__interrupt__", interrupted(value), raw=raw)
        self.db.checkpoint_writes.insert_one(doc)
        return doc

    def suspended(self, thread_id: str, value: Any = None, length: int = 3, **metadata: Any) -> str:
        """A thread of `length` checkpoints interrupted at its last; the checkpoint's id."""
        last = self.chain(thread_id, length, **metadata)[-1]
        self.interrupt(thread_id, last, value if value is not None else {"question": "?"})
        return last
