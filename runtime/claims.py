"""Claims held by this process: one keeper for every runtime.

A decision that completes a run's pending calls claims it (storage/index/run_index.py); the
holder continues it. The lease is renewed while the work goes on, so only a run whose
process died (and stopped renewing) shows as STALLED, and is reported, never re-run.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from suspended_runs.storage import Claim, RunEntry, RunIndex, deadlines


def now_ms() -> datetime:
    """Now, at BSON's precision, so what is written compares equal to what is read back."""
    now = datetime.now(UTC)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


@dataclass(frozen=True, slots=True)
class ClaimKeeper:
    runs: RunIndex
    instance_id: str
    """Names this process in every claim it holds."""
    lease: timedelta
    clock: Callable[[], datetime] = now_ms

    def new_claim(self, now: datetime) -> Claim:
        return Claim(self.instance_id, now, now + self.lease)

    def kept(self, run_id: str) -> contextlib.AbstractAsyncContextManager[None]:
        """Renew the claim of `run_id` every third of the lease while the block runs."""
        return self.renewing(
            lambda: self.runs.claims.renew_claim(
                run_id, self.instance_id, self.clock() + self.lease
            )
        )

    @contextlib.asynccontextmanager
    async def renewing(self, renew: Callable[[], Awaitable[object]]) -> AsyncIterator[None]:
        """Call `renew` every third of the lease while the block runs (a lease on anything:
        a claim, an idempotency key)."""

        async def beat() -> None:
            while True:
                await asyncio.sleep(self.lease.total_seconds() / 3)
                with contextlib.suppress(Exception):  # a missed renewal is retried next beat
                    await renew()

        task = deadlines.spawn(beat())  # however long the block runs: not the request's
        try:
            yield
        finally:
            task.cancel()

    async def settle(self, entry: RunEntry) -> bool:
        """Write where a claimed run came to rest, if this process still holds its claim."""
        return await self.runs.claims.settle(entry, self.instance_id)
