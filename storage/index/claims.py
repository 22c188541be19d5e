"""Decisions and claims on the run index: exactly one continuation per decision.

Each write is one conditional update on the entry as it was seen (its `version`), or on
the claim its holder took, so of any number of concurrent callers exactly one wins
(docs/design.md, "Claims").
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from pymongo.errors import PyMongoError

from suspended_runs.storage.events import outbox as events
from suspended_runs.storage.events.outbox import EventOutbox, RunEvent
from suspended_runs.storage.index.counts import STAMP
from suspended_runs.storage.index.entry import Claim, RunEntry, read_entry
from suspended_runs.storage.index.writes import IndexWriter
from suspended_runs.storage.types import FINISHED, Document, RunStatus

log = logging.getLogger(__name__)


UNANNOUNCED = "unannounced"
"""An entry's events written with its change and not yet moved to the outbox."""
_REVIEW_ENDS: Document = {"review": ""}
"""A claim ends a run's review (storage/index/reviews.py): a review is of a waiting run."""


class ClaimWrites(IndexWriter):
    outbox: EventOutbox | None = None
    """Where the changes made here are announced (storage/events/outbox.py), once made."""

    async def put_started(self, entry: RunEntry) -> None:
        """The entry of a run this server just started.

        An upsert: the follower may have indexed the run's snapshot a moment before.
        """
        await self._version.note_created([entry.created_at])
        await self._agents.note([entry])
        # The whole entry, as a replacement would put it (to_document names every field but
        # expiresAt), stamped.
        update = {"$set": entry.to_document(), "$unset": {"expiresAt": ""}, **STAMP}
        happened = [events.suspended(entry, _now())] if entry.status is RunStatus.SUSPENDED else []
        held = await self.hold(update, happened)
        await self._writes.update_one({"runId": entry.run_id}, update, upsert=True)
        await self.announce(entry.run_id, held)

    async def apply_decision(
        self, seen: RunEntry, decided: RunEntry, claim: Claim | None, *, expired: bool = False
    ) -> bool:
        """Record decisions on the entry as it was seen; with a claim, also take the run.

        One conditional update: of any number of concurrent callers that saw the same
        version, exactly one wins; the others find the version moved on and look again.
        Its events travel in it (`toolcall.decided`, and `approval.expired` for a
        decision an approval's `expired` deadline made), so a crash at any point after
        it loses none of them.
        """
        update: Document = {
            "$set": {
                "toolCalls": [call.to_document() for call in decided.tool_calls],
                "decidedAt": decided.decided_at,
                "decidedBy": decided.decided_by,
            },
            "$inc": {"version": 1},
            **STAMP,
        }
        if claim is not None:
            update["$set"] |= {"status": RunStatus.RUNNING.value, "claim": claim.to_document()}
            update["$unset"] = _REVIEW_ENDS  # the run no longer waits: nobody reviews it
        held = await self.hold(update, _decision_events(seen, decided, expired))
        result = await self._writes.update_one(
            {"runId": seen.run_id, "status": RunStatus.SUSPENDED.value, "version": seen.version},
            update,
        )
        if result.modified_count != 1:
            return False
        await self.announce(seen.run_id, held)
        return True

    async def settle(self, after: RunEntry, claimed_by: str) -> bool:
        """Write where a continued run came to rest; only the holder of its claim may."""
        return await self._rest(
            {"runId": after.run_id, "status": RunStatus.RUNNING.value, "claim.by": claimed_by},
            after,
        )

    async def settle_seen(self, seen: RunEntry, after: RunEntry) -> bool:
        """Write where a run came to rest over the entry exactly as it was `seen` (its
        version): a run whose outcome was unknown, settled from its snapshot; a run an
        operator released or cancelled."""
        return await self._rest({"runId": seen.run_id, "version": seen.version}, after)

    async def take_over(self, seen: RunEntry, claim: Claim) -> bool:
        """Claim a run as it was `seen` (SUSPENDED, or STALLED: its holder died), so that
        an operator's action on it runs once."""
        result = await self._writes.update_one(
            {"runId": seen.run_id, "version": seen.version},
            {
                "$set": {"status": RunStatus.RUNNING.value, "claim": claim.to_document()},
                "$unset": _REVIEW_ENDS,
                "$inc": {"version": 1},
                **STAMP,
            },
        )
        return result.modified_count == 1

    async def mark_outcome_unknown(self, run_id: str, claimed_by: str) -> bool:
        """Keep the claim of a run whose decision may have been applied, and say so."""
        result = await self._writes.update_one(
            {"runId": run_id, "status": RunStatus.RUNNING.value, "claim.by": claimed_by},
            {"$set": {"claim.outcomeUnknown": True}, "$inc": {"version": 1}, **STAMP},
        )
        return result.modified_count == 1

    async def renew_claim(self, run_id: str, claimed_by: str, expires_at: datetime) -> bool:
        """Extend the lease of a claim its holder still holds."""
        result = await self._writes.update_one(
            {"runId": run_id, "status": RunStatus.RUNNING.value, "claim.by": claimed_by},
            {"$set": {"claim.expiresAt": expires_at}},
        )
        return result.modified_count == 1

    async def claimed(self) -> list[RunEntry]:
        """Every RUNNING entry (few: the runs being continued, stalled or in doubt)."""
        cursor = self.collection.find({"status": RunStatus.RUNNING.value}, {"_id": 0})
        return [entry async for doc in cursor if (entry := read_entry(doc)) is not None]

    async def suspended_before(
        self,
        cutoff: datetime,
        *,
        agent_ids: list[str] | None = None,
        exclude_agent_ids: list[str] | None = None,
        since: datetime | None = None,
        limit: int = 100,
    ) -> list[RunEntry]:
        """SUSPENDED runs that have waited since before `cutoff` (and after `since`, when
        given), for expiry; oldest first."""
        waited: Document = {"$lte": cutoff} | ({"$gt": since} if since else {})
        query: Document = {"status": RunStatus.SUSPENDED.value, "suspendedAt": waited}
        if agent_ids is not None:
            query["agentId"] = {"$in": agent_ids}
        elif exclude_agent_ids:
            query["agentId"] = {"$nin": exclude_agent_ids}
        cursor = self.collection.find(query, {"_id": 0}, sort=[("suspendedAt", 1)], limit=limit)
        return [entry async for doc in cursor if (entry := read_entry(doc)) is not None]

    async def _rest(self, condition: Document, after: RunEntry) -> bool:
        doc = {k: v for k, v in after.to_document().items() if k not in ("version", "runId")}
        update: Document = {"$set": doc, "$inc": {"version": 1}, **STAMP}
        if after.status in FINISHED and after.ended_at:
            doc["expiresAt"] = after.ended_at + self._retention.period
        else:
            update["$unset"] = {"expiresAt": ""}
        happened = []
        if after.status is RunStatus.SUSPENDED:
            await self._agents.note([after])  # its calls' tools, which assignedToMe asks by
            happened = [events.suspended(after, _now())]
        elif after.status in FINISHED:
            happened = [events.settled(after, _now())]
        held = await self.hold(update, happened)
        result = await self._writes.update_one(condition, update)
        if result.modified_count != 1:
            return False
        await self.announce(after.run_id, held)
        return True

    async def relay_unannounced(
        self, changed_since: datetime | None, limit: int = 100
    ) -> tuple[int, bool]:
        """Move to the outbox the events a process wrote with its change but died (or lost
        the database) before moving: of the entries changed since `changed_since` (a
        change stamps `changedAt`, whose index serves this), or of all (None: a scan, as a
        new leader makes once). How many were new there, and whether all were seen."""
        if self.outbox is None:
            return 0, True
        query: Document = {UNANNOUNCED + "._id": {"$exists": True}}
        if changed_since is not None:
            query = {"changedAt": {"$gte": changed_since}, **query}
        cursor = self.collection.find(query, {"runId": 1, UNANNOUNCED: 1}, limit=limit)
        moved = seen = 0
        async for doc in cursor:
            seen += 1
            held = doc.get(UNANNOUNCED)
            if isinstance(held, list):
                moved += await self._move(doc.get("runId"), held)
        return moved, seen < limit

    async def hold(self, update: Document, happened: list[RunEvent]) -> list[Document]:
        """Put the change's events in its own update, so they are written with it or not
        at all (MongoDB's one-document atomicity; no transaction needed); the events put."""
        if not happened or self.outbox is None or not await self.outbox.active():
            return []
        held = [event.to_document(self.outbox.retention) for event in happened]
        update["$push"] = {UNANNOUNCED: {"$each": held}}
        return held

    async def announce(self, run_id: str, held: list[Document]) -> None:
        """The change is made: its events go to the outbox now. One that cannot is logged,
        not raised (the caller's answer must say what was done): `relay_unannounced` finds
        it in the entry."""
        try:
            await self._move(run_id, held)
        except PyMongoError as exc:
            log.warning("an event was left for the relay", extra={"reason": str(exc)})

    async def _move(self, run_id: object, held: list[Document]) -> int:
        if not held or self.outbox is None:
            return 0
        moved = await self.outbox.add_documents(held)
        await self._writes.unseen_update_one(
            {"runId": run_id}, {"$pull": {UNANNOUNCED: {"_id": {"$in": [e["_id"] for e in held]}}}}
        )
        return moved


def _decision_events(seen: RunEntry, decided: RunEntry, expired: bool) -> list[RunEvent]:
    """Each call decided since `seen` is `toolcall.decided`, and `approval.expired` too when
    its approval's deadline decided it."""
    before = {call.tool_call_id for call in seen.tool_calls if call.decision is not None}
    newly = [
        call.tool_call_id
        for call in decided.tool_calls
        if call.decision is not None and call.tool_call_id not in before
    ]
    now = _now()
    happened = [events.decided(decided, call_id, now) for call_id in newly]
    if expired:
        happened += [events.expired(decided, call_id, now) for call_id in newly]
    return happened


def _now() -> datetime:
    return datetime.now(UTC)
