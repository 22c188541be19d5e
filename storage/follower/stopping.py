"""Stopping the follower's tasks: a driver call may finish what it was doing first."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

log = logging.getLogger(__name__)

_STOP_SECONDS = 10.0


def cancelled_meanwhile() -> bool:
    """Whether this task was asked to stop while a driver call took the request for its own
    failure: a loop that retries on failure ends then, instead of retrying for ever (and
    holding up the stop of its process)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


async def stopped(task: asyncio.Task[Any]) -> None:
    """Cancel `task` and wait for it to end, cancelling again while it does not, for
    `_STOP_SECONDS` at most."""
    for _ in range(int(_STOP_SECONDS)):
        task.cancel()
        done, _ = await asyncio.wait([task], timeout=1.0)
        if done:
            return
    log.warning("the snapshot follower did not stop within %s s", _STOP_SECONDS)
