"""uvicorn's HTTP/1.1 protocol, with timeouts for a request's headers and body, and a
connection admitted only within the caps of server/peers.py.

uvicorn times out a connection that is idle between requests, not one that is slow to
send a request: a client that sends a header line now and then (slowloris), or a body a
byte at a time, holds its connection, a descriptor and a task for as long as it likes,
and uvicorn limits neither how many a client opens nor how many there are. A middleware
cannot help (the app is called once the headers are complete, and a body it awaits
stalls it), so the limits live in the protocol:

- from a connection's first byte of each request to the end of its headers, at most
  `HEADER_TIMEOUT_SECONDS`, then a 408 and the connection closed;
- from the end of a request's headers to the end of its body, at most
  `BODY_TIMEOUT_SECONDS`, and after its first second the body must have arrived at
  `BODY_MIN_BYTES_PER_SECOND` on average; else a 408 when no answer has begun (the app
  then sees the client gone), or the connection closed when one has;
- a connection is admitted by `OpenConnections` (server/peers.py) or answered 429/503 and
  closed; upgraded to a WebSocket, it keeps its place until it closes.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from suspended_runs.server.peers import OpenConnections, Proxies, descriptors_share

if TYPE_CHECKING:
    from suspended_runs.server.settings import Settings

_HEADERS_LATE = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: 43\r\nconnection: close\r\n\r\n"
    b"the request headers did not arrive in time\n"
)
_BODY_LATE = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: 40\r\nconnection: close\r\n\r\n"
    b"the request body did not arrive in time\n"
)
RATE_GRACE = 1.0
"""Seconds of a body before its rate counts: a client may take a moment to start it."""
CHECK_EVERY = 1.0
"""Seconds between two looks at a body's progress."""


@dataclass(frozen=True, slots=True)
class Timeouts:
    header: float = 10.0
    body: float = 30.0
    body_min_rate: float = 1024.0
    """Bytes a second, on average since the headers ended (0: no minimum)."""


class EdgeProtocol(H11Protocol):
    """H11Protocol whose connections are admitted by `open_connections` and whose
    requests' headers and bodies arrive within `timeouts`."""

    timeouts: ClassVar[Timeouts] = Timeouts()
    open_connections: ClassVar[OpenConnections]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timer: asyncio.TimerHandle | None = None
        self._body_check: asyncio.TimerHandle | None = None
        self._body_started = 0.0
        self._body_bytes = 0
        self._upgraded = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        peer = transport.get_extra_info("peername")
        refusal = self.open_connections.admit(transport, peer[0] if peer else None)
        if refusal is not None:
            # Refused before uvicorn counts and sets up the connection: a client that
            # opens them by the thousand costs little more than their accepts.
            self.transport = transport
            transport.write(refusal)
            transport.close()
            return
        super().connection_made(transport)
        self._start_header_timer()

    def data_received(self, data: bytes) -> None:
        if self._body_check is not None:
            self._body_bytes += len(data)
        if self._header_timer is None and self.conn.their_state is h11.IDLE:
            self._start_header_timer()  # the first bytes of a next request on a kept connection
        super().data_received(data)
        self._follow(len(data))

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.conn.their_state is h11.IDLE and self.conn.trailing_data[0]:
            self._start_header_timer()  # a next request began in what was read before
        self._follow(0)

    def handle_websocket_upgrade(self, event: h11.Request) -> None:
        self._upgraded = True  # the WebSocket protocol keeps the connection and its place
        self._stop_timers()
        super().handle_websocket_upgrade(event)

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_timers()
        self.open_connections.release(self.transport)
        super().connection_lost(exc)

    def _follow(self, received: int) -> None:
        """The timers as the request moved on: its headers ended, its body began or
        ended (`received`: bytes just read, which may hold the body's first)."""
        if self._upgraded:
            return
        state = self.conn.their_state
        if state is not h11.IDLE and self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None
        if state is h11.SEND_BODY and self._body_check is None:
            self._body_started, self._body_bytes = self.loop.time(), received
            self._body_check = self.loop.call_later(
                min(CHECK_EVERY, self.timeouts.body), self._check_body
            )
        elif state is not h11.SEND_BODY and self._body_check is not None:
            self._body_check.cancel()
            self._body_check = None

    def _start_header_timer(self) -> None:
        if self._header_timer is None:
            self._header_timer = self.loop.call_later(self.timeouts.header, self._headers_late)

    def _stop_timers(self) -> None:
        for timer in (self._header_timer, self._body_check):
            if timer is not None:
                timer.cancel()
        self._header_timer = self._body_check = None

    def _headers_late(self) -> None:
        self._header_timer = None
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
            self.transport.write(_HEADERS_LATE)
            self.transport.close()

    def _check_body(self) -> None:
        self._body_check = None
        if self.conn.their_state is not h11.SEND_BODY or self.transport.is_closing():
            return
        elapsed = self.loop.time() - self._body_started
        owed = self.timeouts.body_min_rate * (elapsed - RATE_GRACE)
        if elapsed >= self.timeouts.body or self._body_bytes < owed:
            self._body_late()
            return
        self._body_check = self.loop.call_later(
            min(CHECK_EVERY, self.timeouts.body - elapsed), self._check_body
        )

    def _body_late(self) -> None:
        cycle = self.cycle
        if cycle is not None and not cycle.response_started:
            cycle.disconnected = True  # whatever the app answers now goes nowhere
            self.transport.write(_BODY_LATE)
        self.transport.close()


class CountedWebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's WebSocket protocol (the one it picks with `websockets` installed), which
    gives the connection's place back when it closes."""

    open_connections: ClassVar[OpenConnections]

    def connection_lost(self, exc: Exception | None) -> None:
        self.open_connections.release(self.transport)
        super().connection_lost(exc)


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """What uvicorn.Config is given besides the app and the address, by `serve` and by
    the tests' servers alike: the protocols above, with their limits set."""
    proxies = Proxies.parse(settings.forwarded_allow_ips)
    total = settings.max_connections or descriptors_share()
    connections = OpenConnections(settings.max_connections_per_peer, total, proxies)
    timeouts = Timeouts(
        settings.header_timeout_seconds,
        settings.body_timeout_seconds,
        settings.body_min_bytes_per_second,
    )
    counted = {"open_connections": connections}
    return {
        "http": type("EdgeProtocol", (EdgeProtocol,), {"timeouts": timeouts, **counted}),
        "ws": type("CountedWebSocketProtocol", (CountedWebSocketProtocol,), counted),
        "ws_max_size": settings.max_request_bytes,  # a message is a request, bounded so
        "forwarded_allow_ips": proxies.spelled,
        "log_config": None,
        "access_log": False,
    }
