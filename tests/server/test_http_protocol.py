"""The edge of a connection (server/http_protocol.py, server/peers.py), against a real
uvicorn: a client that sends its headers or its body slowly gets a 408 and a closed
connection; one address holds at most its share of connections (WebSockets too), the
server at most its whole; a proxy's connections count only towards the whole."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import time
from collections.abc import Iterator

import httpx
import pytest
from websockets.asyncio.client import connect

from suspended_runs.server import Settings
from tests.graphql_ws import PROTOCOL
from tests.helpers import Server, ThreadedServer

SLOW_BODY = (
    b"POST /graphql HTTP/1.1\r\nHost: localhost\r\ncontent-type: application/json\r\n"
    b"content-length: 100000\r\n\r\n{"
)


def _until_closed(connection: socket.socket) -> bytes:
    answer = b""
    with contextlib.suppress(ConnectionResetError):
        while chunk := connection.recv(4096):
            answer += chunk
    return answer


def _from(address: str, url: str) -> socket.socket:
    """A connection to the server at `url` from `address` (a loopback address of its own:
    another peer, as far as the server can tell)."""
    port = int(url.rsplit(":", 1)[1])
    return socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(address, 0))


def _trickle(connection: socket.socket, within: float) -> tuple[bytes, float]:
    """Sends a byte of body every tenth of a second until the server answers or closes
    (or `within` seconds pass); what it answered, and when."""
    started = time.monotonic()
    connection.settimeout(0.1)
    answer = b""
    while time.monotonic() - started < within:
        try:
            connection.sendall(b" ")
            chunk = connection.recv(4096)
        except TimeoutError:
            continue
        except (BrokenPipeError, ConnectionResetError):
            break
        answer += chunk
        if not chunk:
            break
    return answer, time.monotonic() - started


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


def test_a_body_that_does_not_arrive_in_time_gets_408_and_a_closed_connection(
    server: Server,
) -> None:
    server.env.update({"BODY_TIMEOUT_SECONDS": "2", "BODY_MIN_BYTES_PER_SECOND": "0"})
    server.start()
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as slow:
        slow.sendall(SLOW_BODY)
        answer, waited = _trickle(slow, within=10)
    assert answer.startswith(b"HTTP/1.1 408 Request Timeout"), answer
    assert b"the request body did not arrive in time" in answer
    assert 1.5 < waited < 5
    # An answer that began before the body ended (a Host not served) ends the connection.
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as refused:
        refused.sendall(SLOW_BODY.replace(b"Host: localhost", b"Host: elsewhere.example"))
        answer, waited = _trickle(refused, within=10)
    assert answer.startswith(b"HTTP/1.1 400"), answer
    assert waited < 5
    body = b'{"query": "{ __typename }"}'
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as steady:
        steady.sendall(SLOW_BODY.replace(b"100000", str(len(body)).encode())[:-1])
        for byte in body:  # slowly, but done within the deadline
            steady.sendall(bytes([byte]))
            time.sleep(0.04)
        assert steady.recv(4096).startswith(b"HTTP/1.1 200")
    assert '"level": "error"' not in server.log.read_text()


def test_a_body_below_the_minimum_rate_is_cut_before_the_deadline(server: Server) -> None:
    server.env.update({"BODY_TIMEOUT_SECONDS": "30", "BODY_MIN_BYTES_PER_SECOND": "100"})
    server.start()
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as slow:
        slow.sendall(SLOW_BODY)
        answer, waited = _trickle(slow, within=15)  # ten bytes a second
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert waited < 5


@contextlib.contextmanager
def _held(address: str, url: str, count: int) -> Iterator[list[socket.socket]]:
    """`count` connections from `address` that send a body slowly, held open."""
    held = []
    try:
        for _ in range(count):
            connection = _from(address, url)
            connection.sendall(SLOW_BODY)
            held.append(connection)
        yield held
    finally:
        for connection in held:
            connection.close()


def _refused(address: str, url: str) -> bytes:
    with _from(address, url) as connection:
        return _until_closed(connection)


def _open(address: str, url: str) -> bool:
    """Whether a new connection from `address` is served (rather than refused)."""
    with _from(address, url) as connection:
        connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        return connection.recv(4096).startswith(b"HTTP/1.1 200")


async def test_an_address_holds_at_most_its_share_websockets_included(
    settings: Settings,
) -> None:
    edge = settings.model_copy(
        update={"max_connections_per_peer": 4, "body_min_bytes_per_second": 0}
    )
    with ThreadedServer(edge) as url, _held("127.0.0.2", url, 3) as held:
        ws_url = url.replace("http", "ws") + "/graphql"
        ws = await connect(ws_url, subprotocols=[PROTOCOL], local_addr=("127.0.0.2", 0))  # type: ignore[list-item]
        refused = _refused("127.0.0.2", url)
        assert refused.startswith(b"HTTP/1.1 429 Too Many Requests"), refused
        assert _open("127.0.0.3", url), "another address is served"
        await ws.close()
        await asyncio.sleep(0.2)
        assert _open("127.0.0.2", url), "a closed WebSocket gave its place back"
        held.pop().close()
        await asyncio.sleep(0.2)
        assert _open("127.0.0.2", url)


def test_the_server_holds_at_most_its_whole_and_a_proxy_counts_only_there(
    settings: Settings,
) -> None:
    edge = settings.model_copy(
        update={
            "max_connections_per_peer": 3,
            "max_connections": 8,
            "forwarded_allow_ips": "127.0.0.4",
            "body_min_bytes_per_second": 0,
        }
    )
    with ThreadedServer(edge) as url, _held("127.0.0.4", url, 5) as proxied:
        with _held("127.0.0.2", url, 3):
            refused = _refused("127.0.0.3", url)
        assert refused.startswith(b"HTTP/1.1 503 Service Unavailable"), refused
        assert not any(_answered(c) for c in proxied), "a proxy is held to the whole only"


@pytest.mark.skipif(not os.path.exists("/proc/self/fd"), reason="counts /proc/<pid>/fd")
def test_200_slow_bodies_from_one_address_hold_no_more_than_its_share(server: Server) -> None:
    server.env.update({"MAX_CONNECTIONS_PER_PEER": "20", "BODY_MIN_BYTES_PER_SECOND": "0"})
    server.start()
    assert server.process is not None
    descriptors = f"/proc/{server.process.pid}/fd"
    before = len(os.listdir(descriptors))
    with _held("127.0.0.2", server.url, 200) as held:
        time.sleep(0.5)  # the refused ones closed
        during = len(os.listdir(descriptors))
        polled = httpx.get(f"{server.url}/healthz", timeout=5)
        answered = sum(1 for c in held if _answered(c))
    assert polled.status_code == 200
    assert during - before <= 20 + 5, (before, during)
    assert answered == 180, "the refused were answered (429) and closed, not held"


def _answered(connection: socket.socket) -> bool:
    """Whether the server answered or closed `connection` (rather than holding it)."""
    connection.settimeout(0.05)
    try:
        connection.recv(4096)
    except TimeoutError:
        return False
    except ConnectionResetError:
        pass
    return True
