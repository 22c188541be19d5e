"""Structured logs: one JSON object a line, and one line per HTTP request.

A log line never holds a stack trace or an exception's message (either may carry
document content or a credential): an exception is written as its type and the place
that raised it, which is what an operator needs to find it.

Every HTTP request has an id: the request's own `X-Request-ID` when it is well-formed
(1 to 64 of `A-Z a-z 0-9 . _ -`), else a new one. The answer carries it in
`X-Request-ID`, and every log line written while the request is served holds it
(`requestId`), so a client quoting it finds the lines.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time
import traceback
import uuid
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from suspended_runs.schema import MASKED_MESSAGE

_TRACEBACK = "Traceback (most recent call last):"
_STANDARD = set(logging.makeLogRecord({}).__dict__) | {"message", "asctime", "color_message"}

REQUEST_ID_HEADER = "X-Request-ID"
_WELL_FORMED_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
_request_id: ContextVar[str | None] = ContextVar("request_id", default=None)


def current_request_id() -> str | None:
    """The id of the HTTP request being served, or None outside one."""
    return _request_id.get()


def request_id_from(header: str | None) -> str:
    """The client's id when it is well-formed, else a new one (uuid4, hex)."""
    if header is not None and _WELL_FORMED_ID.fullmatch(header):
        return header
    return uuid.uuid4().hex


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": _without_traceback(record.getMessage()),
        }
        if (request_id := _request_id.get()) is not None:
            line["requestId"] = request_id
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
    """ASGI middleware, outermost: gives every HTTP request its id (in the answer's
    `X-Request-ID` and in every log line written meanwhile), writes one line per request
    (method, path, status, duration), and answers an exception that escaped the app with
    a masked 500: no exception text ever reaches a client."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.log = logging.getLogger("suspended_runs.server.requests")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = request_id_from(Headers(scope=scope).get(REQUEST_ID_HEADER))
        reset = _request_id.set(request_id)
        started = time.perf_counter()
        status: int | None = None

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                MutableHeaders(scope=message)[REQUEST_ID_HEADER] = request_id
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except Exception:
            if status is not None:
                raise  # the answer has begun: the server closes the connection
            self.log.exception("unhandled error")
            await _masked_500(request_id)(scope, receive, send_with_id)
        finally:
            self._line(scope, status, started)
            _request_id.reset(reset)

    def _line(self, scope: Scope, status: int | None, started: float) -> None:
        self.log.info(
            "request",
            extra={
                "method": scope["method"],
                "path": scope["path"],
                "status": status if status is not None else 500,
                "durationMs": round((time.perf_counter() - started) * 1000, 2),
            },
        )


def _masked_500(request_id: str) -> JSONResponse:
    error = {
        "message": MASKED_MESSAGE,
        "extensions": {"code": "INTERNAL_SERVER_ERROR", "requestId": request_id},
    }
    return JSONResponse({"data": None, "errors": [error]}, status_code=500)
