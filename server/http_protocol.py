"""uvicorn's HTTP/1.1 protocol with a deadline for a request's headers.

uvicorn times out a connection that is idle between requests, not one that is slow to
send a request: a client that sends a header line now and then (slowloris) holds its
connection, and its slot under any connection limit, for as long as it likes. A
middleware cannot help, since the app is called only once the headers are complete, so
the deadline lives in the protocol: from a connection's first byte of each request to
the end of that request's headers, at most `HEADER_TIMEOUT_SECONDS`, then a 408 and the
connection closed.
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

_TIMED_OUT = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: 43\r\nconnection: close\r\n\r\n"
    b"the request headers did not arrive in time\n"
)


class HeaderDeadlineProtocol(H11Protocol):
    """H11Protocol whose requests' headers must arrive within `header_timeout` seconds."""

    header_timeout = 10.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._start_deadline()

    def data_received(self, data: bytes) -> None:
        if self._header_deadline is None and self.conn.their_state is h11.IDLE:
            self._start_deadline()  # the first bytes of a next request on a kept connection
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:
            self._stop_deadline()  # its headers are complete

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_deadline()
        super().connection_lost(exc)

    def _start_deadline(self) -> None:
        self._header_deadline = self.loop.call_later(self.header_timeout, self._headers_late)

    def _stop_deadline(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def _headers_late(self) -> None:
        self._header_deadline = None
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
            self.transport.write(_TIMED_OUT)
            self.transport.close()


def with_header_timeout(seconds: float) -> type[H11Protocol]:
    """The protocol class to give uvicorn (`http=`), with its deadline set."""
    return type("HeaderDeadlineProtocol", (HeaderDeadlineProtocol,), {"header_timeout": seconds})
