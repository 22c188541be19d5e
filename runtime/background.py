"""Continuations that answer before they finish (`wait: false`): each task is kept
referenced until it ends (asyncio keeps only weak ones), and drained at shutdown. They
outlive the request that spawned them, so none runs under its deadline."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

from suspended_runs.storage import deadlines

log = logging.getLogger(__name__)


class Background:
    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()

    def spawn(self, work: Coroutine[Any, Any, Any]) -> None:
        task = deadlines.spawn(work)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("a background continuation failed", exc_info=task.exception())

    async def drain(self, within: float) -> None:
        """Let what runs finish, up to `within` seconds."""
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=within)
