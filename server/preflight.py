"""What `serve` checks before it starts anything: the address it will serve on, bound
now and handed to uvicorn, and the data directory of the embedded MongoDB.

A port in use or a host that does not resolve would otherwise be found by uvicorn after
the embedded MongoDB was started and "serving GraphQL" logged, and a data directory
that cannot be made or written would end in a traceback; each is a setting the server
cannot use, told in one line naming it (exit 2). Binding the socket here, not checking
and binding again later, leaves no moment for another process to take the port.
"""

from __future__ import annotations

import errno
import socket
import uuid
from pathlib import Path

from suspended_runs.runtime import ConfigurationError


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound to (`host`, `port`), for uvicorn to listen on."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except (socket.gaierror, UnicodeError) as exc:
        raise ConfigurationError(f"HOST: {host!r} does not resolve ({_reason(exc)})") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        sock.bind(address)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigurationError(
                f"PORT: {port} is in use on {host} (another server?): stop it, or choose "
                f"another port, PORT={port + 1}"
            ) from None
        raise ConfigurationError(f"HOST: cannot serve on {host}:{port} ({_reason(exc)})") from None
    sock.set_inheritable(True)
    return sock


def usable_data_dir(path: Path) -> None:
    """`path` exists (made if need be) as a directory this process can write."""
    if path.exists() and not path.is_dir():
        raise ConfigurationError(f"DATA_DIR: {path} is not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".write-check-{uuid.uuid4().hex}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise ConfigurationError(f"DATA_DIR: {path} cannot be used ({_reason(exc)})") from None


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__
