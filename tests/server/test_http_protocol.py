"""The deadline for a request's headers (server/http_protocol.py), on `suspended-runs
serve` as a real process: a client that sends its headers slowly gets a 408 and a closed
connection, on a new connection and on a kept one."""

from __future__ import annotations

import socket
import time

import httpx

from tests.helpers import Server


def _until_closed(connection: socket.socket) -> bytes:
    answer = b""
    while chunk := connection.recv(4096):
        answer += chunk
    return answer


def test_headers_that_do_not_arrive_in_time_get_408_and_a_closed_connection(
    server: Server,
) -> None:
    server.env["HEADER_TIMEOUT_SECONDS"] = "1"
    server.start()
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as slow:
        slow.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n")  # and no end
        started = time.monotonic()
        answer = _until_closed(slow)
        waited = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 408 Request Timeout"), answer
    assert 0.5 < waited < 5
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as kept:
        kept.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        first = b""
        while b'{"status":"ok"}' not in first:
            first += kept.recv(4096)
        assert first.startswith(b"HTTP/1.1 200")
        kept.sendall(b"GET /healthz HTTP/1.1\r\n")  # the next request, slowly
        assert _until_closed(kept).startswith(b"HTTP/1.1 408")
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as patient:
        for line in (b"GET /healthz HTTP/1.1\r\n", b"Host: localhost\r\n", b"\r\n"):
            patient.sendall(line)  # in pieces, but within the deadline
            time.sleep(0.2)
        assert patient.recv(4096).startswith(b"HTTP/1.1 200")
    assert httpx.get(f"{server.url}/healthz").status_code == 200
