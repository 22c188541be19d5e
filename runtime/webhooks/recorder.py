"""The recorder: where attempts left their deliveries, written a batch at a time by a loop of
its own, beside the deliverer's, so that recording what ended never waits for what starts.

Attempts end whenever their receivers answer; each is written in the next batch, with the
deliveries it releases (due at once: they waited behind it in their run's lane). A batch
the database refuses is kept and written again (each write is conditional on the
attempt's hold, so writing one twice changes nothing); meanwhile its deliveries stay held,
so none is attempted twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from datetime import UTC, datetime

from pymongo.errors import PyMongoError

from suspended_runs.storage import Storage
from suspended_runs.storage.events.deliveries import Finished
from suspended_runs.storage.follower.stopping import cancelled_meanwhile

log = logging.getLogger(__name__)

_RETRY_AFTER = 0.5
"""Seconds before a batch the database refused is written again."""


class Recorder:
    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self._finished: list[Finished] = []
        self._released: list[str] = []
        self._gone: set[str] = set()
        self._ended = asyncio.Event()
        self.released = False
        """Set when a write released deliveries: they are due, to be read."""
        self.listeners: list[Callable[[], None]] = []
        """Told after each write (the deliverer, which posts what waited for one)."""

    def ended(self, finished: Finished, released: list[str], gone: str | None) -> None:
        """An attempt ended: `finished` says where, `released` what waited behind it, and
        `gone` names its webhook when the receiver answered 410 Gone."""
        self._finished.append(finished)
        self._released += released
        if gone is not None:
            self._gone.add(gone)
        self._ended.set()

    def waiting(self) -> int:
        """How many ended attempts are not written yet."""
        return len(self._finished)

    async def forever(self) -> None:
        """Write what ended, a batch at a time, until cancelled (what is left then is
        written once more by `flush`)."""
        while True:
            await self._ended.wait()
            self._ended.clear()
            try:
                await self.flush()
                for listener in self.listeners:
                    listener()
            except Exception as exc:  # the database may be down: the batch waits
                if cancelled_meanwhile():
                    raise asyncio.CancelledError from exc
                log.warning("webhook attempts not recorded yet", extra={"reason": str(exc)})
                await asyncio.sleep(_RETRY_AFTER)
                self._ended.set()

    async def flush(self) -> None:
        finished, released, gone = self._finished, self._released, self._gone
        self._finished, self._released, self._gone = [], [], set()
        try:
            if finished or released:
                await self.storage.deliveries.finish(finished, released, datetime.now(UTC))
                taken_back = any(not f.made for f in finished)
                self.released = self.released or bool(released) or taken_back
            for webhook_id in sorted(gone):
                await self.storage.webhooks.disable(webhook_id, "the receiver answered 410 Gone")
        except BaseException:
            self._finished[:0], self._released[:0] = finished, released
            self._gone |= gone
            raise

    async def close(self) -> None:
        with contextlib.suppress(PyMongoError):
            await self.flush()
