"""Deadlines: how long a request waits for the database, and the work it hands on, which
does not wait under it (docs/operating.md, "A hung database").

A stalled database (a frozen disk, a network partition) keeps its connections open and
answers nothing; the driver gives up on it only once its monitor does. So a request runs
its database work under one deadline, `pymongo.timeout()` (the driver's client-side
operation timeout: server selection, a connection's checkout, the command and its reply),
and answers DATABASE_UNAVAILABLE within about that deadline.

The deadline is a context variable, and a task copies the context it is made in: work a
request starts that outlives it (a continuation, a claim's renewal, the subscriptions'
watcher) is made `detached`, under no deadline, since `pymongo.timeout()` can only
shorten one. A request that waits on something other than the database (an agent, a
Mastra server, a twin request under its idempotency key, its turn among bulk decisions)
`restart`s its deadline when the wait ends: the deadline bounds the request's own
database work, not the time others take. Work that no request starts (the follower, the
deliverer, expiry) runs under none, with its own limits.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import time
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

import pymongo

# pymongo.timeout() keeps its deadline in these; only they can lift or renew one.
from pymongo import _csot

T = TypeVar("T")

_LENGTH: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "suspended_runs_deadline", default=None
)
"""The length of the deadline of the request this context serves (None: no request's)."""


@contextlib.contextmanager
def request_deadline(seconds: float) -> Iterator[None]:
    """Run one request's database work under a deadline of `seconds`."""
    length = _LENGTH.set(seconds)
    try:
        with pymongo.timeout(seconds):
            yield
    finally:
        _LENGTH.reset(length)


def restart() -> None:
    """The request's database work from now on gets its whole deadline again (its wait
    on others is over); outside a request, nothing changes. The `request_deadline` block
    restores what was there before it when it ends."""
    seconds = _LENGTH.get()
    if seconds is not None:
        _csot.TIMEOUT.set(seconds)
        _csot.DEADLINE.set(time.monotonic() + seconds)
        _csot.RTT.set(0.0)


def detached() -> contextvars.Context:
    """A copy of the current context under no deadline, for a task that outlives the
    request it is made in (a step of its own may still `restart` the request's length)."""
    context = contextvars.copy_context()
    context.run(_csot.reset_all)
    return context


def spawn(work: Coroutine[Any, Any, T], name: str | None = None) -> asyncio.Task[T]:
    """`work` as a task of its own, under no request's deadline."""
    return asyncio.create_task(work, name=name, context=detached())


async def handed_on(work: Coroutine[Any, Any, T], *, shielded: bool = False) -> T:
    """`await work`, work of others (a runtime's, a reconcile's), under none of this
    request's deadline; the request's database work after it gets a deadline of its own.
    `shielded`: a request that ends meanwhile (its client hung up) does not stop it."""
    task = spawn(work)
    try:
        return await (asyncio.shield(task) if shielded else task)
    finally:
        restart()
