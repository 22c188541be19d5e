"""A webhook receiver on loopback for tests: records every request, answers as told."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks.webhooks import Webhook


@dataclass
class Received:
    headers: dict[str, str]
    body: str
    at: float

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def message_id(self) -> str:
        return self.headers["webhook-id"]


Answer = tuple[int, dict[str, str], float]
"""Status, headers, and seconds to wait before answering."""


@dataclass
class Receiver:
    """`answer(received, attempt)` says how to answer the attempt-th request (1-based) of
    one webhook-id; default: 200 at once."""

    answer: Callable[[Received, int], Answer] = lambda received, attempt: (200, {}, 0.0)
    received: list[Received] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None

    def __enter__(self) -> Receiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                raw = self.rfile.read(length)
                if len(raw) < length:
                    return  # the sender was cut off (killed) before its body was whole
                body = raw.decode()
                got = Received({k.lower(): v for k, v in self.headers.items()}, body, time.time())
                with receiver._lock:
                    receiver.received.append(got)
                    attempt = sum(r.message_id == got.message_id for r in receiver.received)
                status, headers, delay = receiver.answer(got, attempt)
                time.sleep(delay)
                try:
                    self.send_response(status)
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.send_header("content-length", "2")
                    self.end_headers()
                    self.wfile.write(b"ok")
                except OSError:
                    pass  # the sender gave up waiting

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/hook"

    def events(self, secret: str) -> list[dict[str, Any]]:
        """Every body received, each verified with `secret` (raises if one does not)."""
        with self._lock:
            received = list(self.received)
        return [Webhook(secret).verify(r.body, r.headers) for r in received]

    def of_type(self, secret: str, event: str) -> list[dict[str, Any]]:
        return [e for e in self.events(secret) if e["type"] == event]
