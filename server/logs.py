"""Structured logs: one JSON object a line, and one line per HTTP request.

A log line never holds a stack trace or an exception's message (either may carry
document content or a credential): an exception is written as its type and the place
that raised it, which is what an operator needs to find it.
"""

from __future__ import annotations

import json
import logging
import sys
import time
import traceback
from datetime import UTC, datetime
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

_TRACEBACK = "Traceback (most recent call last):"
_STANDARD = set(logging.makeLogRecord({}).__dict__) | {"message", "asctime", "color_message"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": _without_traceback(record.getMessage()),
        }
        line.update({k: v for k, v in record.__dict__.items() if k not in _STANDARD})
        if record.exc_info and record.exc_info[1] is not None:
            line.update(describe_exception(record.exc_info[1]))
        return json.dumps(line, default=str)


def _without_traceback(message: str) -> str:
    """A message that carries a formatted traceback (Starlette hands uvicorn one when the
    lifespan fails) keeps its first line and the exception's type only."""
    if _TRACEBACK not in message:
        return message
    head, _, trace = message.partition(_TRACEBACK)
    last = trace.strip().splitlines()[-1] if trace.strip() else ""
    return f"{head.strip() or 'error'} ({last.partition(':')[0] or 'traceback withheld'})"


def describe_exception(exc: BaseException) -> dict[str, str]:
    described = {"errorType": type(exc).__name__}
    frames = traceback.extract_tb(exc.__traceback__) if exc.__traceback__ else []
    if frames:
        frame = frames[-1]
        described["raisedAt"] = f"{frame.filename}:{frame.lineno} in {frame.name}"
    return described


def configure_logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True
    logging.getLogger("uvicorn.access").disabled = True  # RequestLog writes the request line
    logging.getLogger("pymongo").setLevel(logging.WARNING)


class RequestLog:
    """ASGI middleware: method, path, status and duration of every HTTP request."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.log = logging.getLogger("suspended_runs.server.requests")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_with_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_with_status)
        finally:
            self.log.info(
                "request",
                extra={
                    "method": scope["method"],
                    "path": scope["path"],
                    "status": status,
                    "durationMs": round((time.perf_counter() - started) * 1000, 2),
                },
            )
