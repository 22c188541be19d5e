"""`/healthz` (the process answers) and `/readyz` (it can serve: its database answers and
its lists are caught up), for load balancers and orchestrators."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import pymongo
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from suspended_runs.storage import Storage

log = logging.getLogger(__name__)

_READY_PING_TIMEOUT = 2.0


async def healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


async def readyz(request: Request) -> Response:
    storage: Storage = request.app.state.storage
    follower_task: asyncio.Task[None] = request.app.state.follower_task
    low_on_space: Callable[[], bool] = request.app.state.low_on_space
    try:
        with pymongo.timeout(_READY_PING_TIMEOUT):  # within the request's deadline
            await storage.ping()
    except Exception as exc:
        log.warning("not ready: database", extra={"reason": type(exc).__name__})
        reason = "storage_full" if low_on_space() else "database"
        return JSONResponse({"status": "unavailable", "reason": reason}, status_code=503)
    follower = storage.follower
    if follower_task.done() or follower.ready_mode is None:
        if follower.catching_up:  # applying what was written while this instance was down
            behind = follower.behind_seconds
            return JSONResponse({"status": "catching_up", "behindSeconds": behind}, 503)
        progress = follower.progress  # of the start-up reconcile: snapshots looked at
        starting = {"status": "starting", "reason": "sync", "indexed": progress.indexed}
        return JSONResponse(starting | {"of": progress.of}, status_code=503)
    if not follower.healthy:  # the follower failed and is retrying: lists may lag
        reason = "storage_full" if low_on_space() else "sync"
        return JSONResponse({"status": "unavailable", "reason": reason}, status_code=503)
    # Once caught up, ready whatever the lag (`sync` in GraphQL and /metrics show it).
    return JSONResponse({"status": "ready", "sync": follower.ready_mode.value})
