"""What runs under a request's deadline (storage/deadlines.py, DATABASE_DEADLINE_SECONDS):
every HTTP request whole (GraphQL, /readyz, /metrics), and each WebSocket operation up to
its first answer, which for a query or a mutation is its only one. A subscription's later
pages are read by the process's watcher (resolvers/live_pages.py), each round under a
deadline of its own, while the subscription itself lasts as long as its connection.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from typing import TypeVar

from starlette.types import ASGIApp, Receive, Scope, Send

from suspended_runs.storage.deadlines import request_deadline

T = TypeVar("T")


class RequestDeadline:
    """ASGI middleware: an HTTP request's database work under one deadline."""

    def __init__(self, app: ASGIApp, seconds: float) -> None:
        self.app, self.seconds = app, seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # a WebSocket's operations each get one (`first_answer`)
            await self.app(scope, receive, send)
            return
        with request_deadline(self.seconds):
            await self.app(scope, receive, send)


async def first_answer(results: AsyncIterator[T], seconds: float) -> AsyncGenerator[T, None]:
    """An operation's results: the first read under a deadline of `seconds`, the rest as
    they come."""
    with request_deadline(seconds):
        first = await anext(results, None)
    if first is None:
        return
    yield first
    async for result in results:
        yield result
