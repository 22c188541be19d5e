"""Live pages: what subscriptions push, evaluated once per change for everyone who asks.

A subscription to a list is a page that is sent again whenever it changes. Evaluating it
once per subscriber per change would make a hundred dashboards a hundred readers of the
database; here every distinct key (what the page selects, with its arguments, and the
caller's scope and role) is one feed, evaluated once per new version of the run index and
shared by every subscriber of that key. One watcher per process reads the index's version
(one small read, however many subscribers); a version written by another instance is seen
the same way, so a decision made anywhere reaches every subscriber.

A subscriber always gets the feed's latest page, never a queue of old ones: a slow client
skips pages it had no time to read, and costs no memory for them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from suspended_runs.resolvers.errors import SubscriptionLimit
from suspended_runs.runtime.metrics import SUBSCRIPTION_EVALUATIONS as EVALUATIONS
from suspended_runs.runtime.metrics import SUBSCRIPTIONS as SUBSCRIBERS
from suspended_runs.storage import Storage, deadlines
from suspended_runs.storage.follower.stopping import cancelled_meanwhile

log = logging.getLogger(__name__)

T = TypeVar("T")
_UNREAD = object()

DEFAULT_MAX_PER_CALLER = 20
WATCH_INTERVAL = 0.1
"""Seconds between reads of the index's version while anyone subscribes."""


@dataclass(eq=False)
class _Feed(Generic[T]):
    evaluate: Callable[[], Awaitable[T]]
    same: Callable[[T, T], bool]
    value: T | None = None
    number: int = 0
    """How many distinct pages this feed has held: a subscriber waits for a higher one."""
    token: Any = _UNREAD
    """The index's version the value was read at (or its last evaluation started at)."""
    subscribers: int = 0
    ticking: bool = False
    """Its page also changes with the clock alone (an escalation): evaluated every second
    as well as on every new version."""
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)
    evaluating: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def refresh(self, token: Any) -> None:
        """Evaluate once at the index's version `token` (read before it: a change made while
        it reads gives a newer version, and another evaluation); a page equal to the last
        one wakes nobody."""
        async with self.evaluating:
            if self.token == token:
                return
            self.token = token
            EVALUATIONS.inc()
            try:
                value = await self.evaluate()
            except BaseException:
                self.token = _UNREAD
                raise
            if self.value is None or not self.same(self.value, value):
                async with self.changed:
                    self.value, self.number = value, self.number + 1
                    self.changed.notify_all()


class LivePages:
    """The feeds of one process, and the watcher that refreshes them on every change."""

    def __init__(self, storage: Storage, *, max_per_caller: int = DEFAULT_MAX_PER_CALLER) -> None:
        self.storage = storage
        self.max_per_caller = max_per_caller
        self._feeds: dict[Hashable, _Feed[Any]] = {}
        self._callers: dict[str, int] = {}
        self._watcher: asyncio.Task[None] | None = None

    def subscribe(
        self,
        key: Hashable,
        caller: str,
        evaluate: Callable[[], Awaitable[T]],
        same: Callable[[T, T], bool],
        *,
        ticking: bool = False,
    ) -> AsyncIterator[T]:
        """The pages of `key`, the current one first; `evaluate` reads one (for the first
        subscriber of a key; later ones share its feed), on every new version and, when
        `ticking`, every second. Raises SubscriptionLimit when `caller` already holds
        `max_per_caller` subscriptions here."""
        held = self._callers.get(caller, 0)
        if held >= self.max_per_caller:
            raise SubscriptionLimit(self.max_per_caller)
        self._callers[caller] = held + 1
        feed = self._feeds.get(key)
        if feed is None:
            feed = self._feeds[key] = _Feed(evaluate, same, ticking=ticking)
        feed.subscribers += 1
        SUBSCRIBERS.inc()
        self._ensure_watcher()
        return _Subscription(self, key, caller, feed)

    def _leave(self, key: Hashable, caller: str, feed: _Feed[Any]) -> None:
        SUBSCRIBERS.dec()
        self._callers[caller] -= 1
        if not self._callers[caller]:
            del self._callers[caller]
        feed.subscribers -= 1
        if not feed.subscribers and self._feeds.get(key) is feed:
            del self._feeds[key]

    def _ensure_watcher(self) -> None:
        if self._watcher is None or self._watcher.done():
            # The process's, not the first subscriber's: under no deadline of its request.
            self._watcher = deadlines.spawn(self._watch(), name="live-pages")

    async def close(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher

    async def _watch(self) -> None:
        """Until nobody subscribes: on every new version, each feed evaluated once."""
        while self._feeds:
            deadlines.restart()  # each round reads as a request would (a subscriber's pages)
            try:
                version = (await self.storage.runs.version()).token
                tokens = [(feed, _token(feed, version)) for feed in self._feeds.values()]
                results = await asyncio.gather(
                    *(feed.refresh(token) for feed, token in tokens if feed.token != token),
                    return_exceptions=True,
                )
                for failed in (r for r in results if isinstance(r, Exception)):
                    log.warning("a subscribed page could not be read; retrying", exc_info=failed)
            except Exception as exc:
                if cancelled_meanwhile():
                    raise asyncio.CancelledError from exc
                log.warning("the run index's version could not be read; retrying", exc_info=True)
            await asyncio.sleep(WATCH_INTERVAL)


class _Subscription(AsyncIterator[T]):
    """One subscriber's pages. Closing it (or never starting it) frees its place: the
    caller's count and, with the last subscriber, the feed."""

    def __init__(self, pages: LivePages, key: Hashable, caller: str, feed: _Feed[T]) -> None:
        self._pages, self._key, self._caller, self._feed = pages, key, caller, feed
        self._seen = 0
        self._closed = False

    async def __anext__(self) -> T:
        if self._closed:
            raise StopAsyncIteration
        feed = self._feed
        try:
            if feed.value is None:  # the first page at once, not at the next change
                await feed.refresh(_token(feed, (await self._pages.storage.runs.version()).token))
            async with feed.changed:
                await feed.changed.wait_for(lambda: feed.number > self._seen)
                self._seen = feed.number
                assert feed.value is not None
                return feed.value
        except BaseException:
            await self.aclose()
            raise

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            self._pages._leave(self._key, self._caller, self._feed)


def _token(feed: _Feed[Any], version: Any) -> Any:
    """What a feed's page is read as of: the index's version, and for a ticking feed the
    second too."""
    return with_the_second(version) if feed.ticking else version


def with_the_second(version: Any) -> tuple[Any, int]:
    """A version of an answer that also changes with the clock (an escalation): it is read
    afresh each second (ETags too, server/etag.py)."""
    return version, int(time.time())
