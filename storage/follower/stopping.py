"""Stopping the follower's tasks: a driver call may finish what it was doing first."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

log = logging.getLogger(__name__)

_STOP_SECONDS = 10.0


async def stopped(task: asyncio.Task[Any]) -> None:
    """Cancel `task` and wait for it to end, cancelling again while it does not, for
    `_STOP_SECONDS` at most."""
    for _ in range(int(_STOP_SECONDS)):
        task.cancel()
        done, _ = await asyncio.wait([task], timeout=1.0)
        if done:
            return
    log.warning("the snapshot follower did not stop within %s s", _STOP_SECONDS)
