"""Keeping a claim: the lease of a run being continued is renewed while the work goes on,
so only a run whose process died (and stopped renewing) shows as STALLED."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from datetime import datetime, timedelta

from storage import RunIndex


@contextlib.asynccontextmanager
async def kept_claim(
    runs: RunIndex,
    run_id: str,
    holder: str,
    lease: timedelta,
    clock: Callable[[], datetime],
) -> AsyncIterator[None]:
    async def renew() -> None:
        while True:
            await asyncio.sleep(lease.total_seconds() / 3)
            with contextlib.suppress(Exception):  # a missed renewal is retried next beat
                await runs.renew_claim(run_id, holder, clock() + lease)

    beat = asyncio.create_task(renew())
    try:
        yield
    finally:
        beat.cancel()
