"""What people reviewing runs write on an entry: a review, a hand-over, the count of notes.

A review is a person looking at a waiting run for a while (docs/reviews.md, "Reviewing
together"); it is kept in a field of its own (`review`), never in the claim, which is a
decision's hold on the run (storage/index/claims.py). A start is one conditional update on
the entry as it was seen (`status == SUSPENDED and version == v`, then `version + 1`): of
two reviewers starting at once exactly one wins, and the other looks again and finds the
winner's review; a decision that saw the entry before the review started loses its own
conditional update the same way, and looks again. Hand-overs (`assignees`) are written the
same way. Each write goes through the tracked writes, so versions, ETags and
subscriptions see it, and announces its event with the change (claims.py, `hold`).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from pymongo.asynchronous.collection import AsyncCollection

from suspended_runs.storage.events import outbox as events
from suspended_runs.storage.index.claims import ClaimWrites
from suspended_runs.storage.index.counts import STAMP
from suspended_runs.storage.index.entry import Review, RunEntry
from suspended_runs.storage.index.writes import TrackedWrites
from suspended_runs.storage.types import Document, RunStatus

REVIEW_INDEX = "review.until"
"""A sparse index: only entries ever reviewed are in it (storage/index/marked.py)."""
ASSIGNEES_INDEX = "assignees"
"""A sparse index: only entries ever handed over are in it."""


class ReviewWrites:
    def __init__(
        self,
        collection: AsyncCollection[Document],
        writes: TrackedWrites,
        claims: ClaimWrites,
    ) -> None:
        self.collection = collection
        self._writes = writes
        self._claims = claims

    async def start(self, seen: RunEntry, review: Review, *, announced: bool) -> bool:
        """Put `review` on the waiting run as it was `seen` (over any review it had);
        `announced`: a new reviewer, not one who extends their own (`run.in_review`)."""
        update: Document = {
            "$set": {"review": review.to_document()},
            "$inc": {"version": 1},
            **STAMP,
        }
        happened = [events.in_review(replace(seen, review=review), review.at)] if announced else []
        return await self._seen_waiting(seen, update, happened)

    async def end(self, seen: RunEntry) -> bool:
        """End the review of the run as it was `seen`."""
        update: Document = {"$unset": {"review": ""}, "$inc": {"version": 1}, **STAMP}
        return await self._seen_waiting(seen, update, [])

    async def hand_over(
        self, seen: RunEntry, assignees: tuple[str, ...], at: datetime, *, end_review: bool
    ) -> bool:
        """Make `assignees` the waiting run's (as it was `seen`) hand-over (`run.assigned`);
        `end_review`: its reviewer handed it over, and no longer reviews it."""
        update: Document = {"$set": {"assignees": list(assignees)}, "$inc": {"version": 1}, **STAMP}
        if end_review:
            update["$unset"] = {"review": ""}
        handed = replace(seen, assignees=assignees, review=None if end_review else seen.review)
        happened = [events.assigned(handed, at)]
        return await self._seen_waiting(seen, update, happened)

    async def count_note(self, run_id: str, step: int) -> None:
        """A note added (1) or deleted (-1): the entry changes, so a page that shows the
        run's notes changes too (a new version, and a subscription's page differs). No
        stamp: no count of runs depends on notes."""
        await self._writes.update_one({"runId": run_id}, {"$inc": {"noteCount": step}})

    async def _seen_waiting(
        self, seen: RunEntry, update: Document, happened: list[events.RunEvent]
    ) -> bool:
        """`update` on the entry, only if it is still waiting as it was `seen`."""
        held = await self._claims.hold(update, happened)
        result = await self._writes.update_one(
            {"runId": seen.run_id, "status": RunStatus.SUSPENDED.value, "version": seen.version},
            update,
        )
        if result.modified_count != 1:
            return False
        await self._claims.announce(seen.run_id, held)
        return True
