"""Approvals recorded before a quorum is reached: who approved which arguments, and when.

A collection of its own, not fields of the run index: a rebuild of the index, or a Mastra
snapshot written again, keeps them. One document per pending call; an approval is added
by one conditional update, so the same credential approving twice (or twice at once) is
recorded once. An approval records the credential (`by`); who the person behind it is,
is read when they are counted, so that one person's keys and tokens count once.
Arguments an approver edited under a quorum replace the model's here, and void what was
approved before.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pymongo import ASCENDING
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import DuplicateKeyError

from suspended_runs.storage.types import Document


@dataclass(frozen=True, slots=True)
class Approval:
    by: str
    at: datetime
    args_hash: str

    def to_document(self) -> Document:
        return {"by": self.by, "at": self.at, "argsHash": self.args_hash}


@dataclass(frozen=True, slots=True)
class CallApprovals:
    """What was approved of one pending call, and the arguments approved (if edited)."""

    run_id: str
    tool_call_id: str
    args_hash: str
    """The hash of the arguments now to be approved: the model's, or the edited ones."""
    approvals: tuple[Approval, ...] = ()
    edited: bool = False
    args: Any = None
    """The edited arguments (when `edited`)."""

    def counted(self, person_of: Callable[[str], str]) -> tuple[Approval, ...]:
        """The approvals of the arguments as they are now, each person once (`person_of`
        tells the person behind a credential)."""
        seen: set[str] = set()
        kept = []
        for approval in self.approvals:
            person = person_of(approval.by)
            if approval.args_hash == self.args_hash and person not in seen:
                seen.add(person)
                kept.append(approval)
        return tuple(kept)

    @classmethod
    def from_document(cls, doc: Document) -> CallApprovals:
        return cls(
            run_id=doc["runId"],
            tool_call_id=doc["toolCallId"],
            args_hash=doc["argsHash"],
            approvals=tuple(
                Approval(a["by"], a["at"], a["argsHash"]) for a in doc.get("approvals") or ()
            ),
            edited="args" in doc,
            args=doc.get("args"),
        )


def _key(run_id: str, tool_call_id: str) -> str:
    return f"{run_id}|{tool_call_id}"


class ApprovalStore:
    def __init__(self, collection: AsyncCollection[Document], retention: timedelta) -> None:
        self.collection = collection
        self.retention = retention
        """Kept as long as the audit log: a pending call older than that has expired."""

    async def ensure_indexes(self) -> None:
        await self.collection.create_index([("runId", ASCENDING)])
        await self.collection.create_index("expiresAt", expireAfterSeconds=0)

    async def get(self, run_id: str, tool_call_id: str) -> CallApprovals | None:
        doc = await self.collection.find_one({"_id": _key(run_id, tool_call_id)})
        return CallApprovals.from_document(doc) if doc else None

    async def of_runs(self, run_ids: Iterable[str]) -> dict[tuple[str, str], CallApprovals]:
        """Every call's approvals of these runs, by (run id, tool call id)."""
        found = {}
        async for doc in self.collection.find({"runId": {"$in": sorted(set(run_ids))}}):
            approvals = CallApprovals.from_document(doc)
            found[(approvals.run_id, approvals.tool_call_id)] = approvals
        return found

    async def add(
        self, run_id: str, tool_call_id: str, approval: Approval, model_args_hash: str
    ) -> CallApprovals:
        """Record `approval` (once per person); the call's approvals after it.

        `model_args_hash` is the hash a call without edited arguments has; an approval of
        another hash is kept, and not counted."""
        doc_id = _key(run_id, tool_call_id)
        # A DuplicateKeyError: the upsert met the document, with this person's approval.
        with contextlib.suppress(DuplicateKeyError):
            await self.collection.update_one(
                {"_id": doc_id, "approvals.by": {"$ne": approval.by}},
                {
                    "$push": {"approvals": approval.to_document()},
                    "$setOnInsert": {
                        "runId": run_id,
                        "toolCallId": tool_call_id,
                        "argsHash": model_args_hash,
                        "expiresAt": approval.at + self.retention,
                    },
                },
                upsert=True,
            )
        doc = await self.collection.find_one({"_id": doc_id})
        assert doc is not None
        return CallApprovals.from_document(doc)

    async def replace_args(
        self,
        run_id: str,
        tool_call_id: str,
        seen: CallApprovals | None,
        args: Any,
        approval: Approval,
    ) -> bool:
        """Replace the arguments to approve with `args` (hashed as `approval.args_hash`),
        `approval` being its editor's: the approvals recorded are void. Conditional on the
        approvals as they were `seen` (None: none yet); False when they changed meanwhile."""
        fields = {
            "runId": run_id,
            "toolCallId": tool_call_id,
            "argsHash": approval.args_hash,
            "args": args,
            "approvals": [approval.to_document()],
            "expiresAt": approval.at + self.retention,
        }
        doc_id = _key(run_id, tool_call_id)
        if seen is None:
            try:
                await self.collection.insert_one({"_id": doc_id, **fields})
            except DuplicateKeyError:
                return False
            return True
        result = await self.collection.update_one(
            {
                "_id": doc_id,
                "argsHash": seen.args_hash,
                "approvals": {"$size": len(seen.approvals)},
            },
            {"$set": fields},
        )
        return result.modified_count == 1
