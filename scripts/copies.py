"""Copies of real Mastra snapshot documents under new run ids and agent ids, for demos and
benchmarks: each copy is a run as Mastra writes it, with its `executionWorkflow` sibling."""

from __future__ import annotations

import re
import uuid
from collections import defaultdict
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta
from pathlib import Path

from bson import json_util
from pymongo.collection import Collection
from pymongo.errors import OperationFailure

from suspended_runs.storage import Document

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "mastra"
_AGENT = re.compile(r'"__agentId": "[^"]*"')


class RunTemplate:
    """The documents of one fixture run, as extended JSON text, ready to copy."""

    def __init__(self, run_id: str, text: str) -> None:
        self.run_id = run_id
        self.text = text

    def copy(self, run_id: str, agent_id: str, created_at: datetime) -> list[Document]:
        text = _AGENT.sub(f'"__agentId": "{agent_id}"', self.text.replace(self.run_id, run_id))
        docs: list[Document] = json_util.loads(text)
        for offset, doc in enumerate(docs):
            doc.pop("_id", None)
            doc["createdAt"] = created_at + timedelta(milliseconds=offset)
            doc["updatedAt"] = created_at + timedelta(milliseconds=50 + offset)
        return docs


def suspended_templates(name: str = "snapshots.extjson") -> list[RunTemplate]:
    groups: dict[str, list[Document]] = defaultdict(list)
    for doc in json_util.loads((FIXTURES / name).read_text()):
        groups[doc["run_id"]].append(doc)
    return [RunTemplate(run_id, json_util.dumps(docs)) for run_id, docs in groups.items()]


def fixture_documents() -> list[Document]:
    docs: list[Document] = []
    for name in ("snapshots.extjson", "durable_snapshots.extjson"):
        docs += json_util.loads((FIXTURES / name).read_text())
    return docs


def copies(count: int, agents: int, start: datetime) -> Iterator[list[Document]]:
    """`count` suspended runs over `agents` agents, one a second from `start`."""
    templates = suspended_templates()
    for i in range(count):
        template = templates[i % len(templates)]
        yield template.copy(
            str(uuid.uuid4()), f"agent-{i % agents:02d}", start + timedelta(seconds=i)
        )


_INDEX_EXISTS_OTHERWISE = (85, 86)  # IndexOptionsConflict, IndexKeySpecsConflict
MASTRA_INDEXES: list[tuple[list[tuple[str, int]], bool]] = [
    ([("workflow_name", 1), ("run_id", 1)], True),
    ([("run_id", 1)], False),
    ([("workflow_name", 1)], False),
    ([("resourceId", 1)], False),
    ([("createdAt", -1)], False),
    ([("snapshot.status", 1)], False),
]
"""The indexes (keys, unique) @mastra/mongodb 1.19 makes on its snapshot collection at
`init()`, before its first write (`WorkflowsStorageMongoDB.getDefaultIndexDefinitions`)."""


def insert_runs(collection: Collection[Document], runs: Iterable[list[Document]]) -> None:
    """Insert runs' documents a thousand at a time, into a collection indexed as Mastra's is."""
    for keys, unique in MASTRA_INDEXES:
        try:
            collection.create_index(keys, unique=unique)
        except OperationFailure as exc:
            # A server of an earlier version made (workflow_name, run_id) without `unique`:
            # Mastra's init leaves it as it is too (it warns and goes on).
            if exc.code not in _INDEX_EXISTS_OTHERWISE:
                raise
    batch: list[Document] = []
    for docs in runs:
        batch += docs
        if len(batch) >= 1000:
            collection.insert_many(batch)
            batch.clear()
    if batch:
        collection.insert_many(batch)
