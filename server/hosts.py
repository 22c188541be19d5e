"""Host names as the server answers to them: ALLOWED_HOSTS' patterns, and the names a
server on a loopback address answers to when it names none (docs/security.md)."""

from __future__ import annotations

import ipaddress

LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")
"""The Host names served by default when serving on a loopback address."""


def host_pattern(pattern: str) -> str:
    """A Host name as Starlette's TrustedHostMiddleware compares it: lower case, no port,
    an IPv6 address in brackets, a wildcard only as `*` or a leading `*.`."""
    pattern = pattern.lower()
    try:
        return f"[{ipaddress.IPv6Address(pattern.strip('[]'))}]"
    except ValueError:
        pass
    if ":" in pattern:
        raise ValueError(f"{pattern!r}: name hosts without a port")
    if pattern != "*" and "*" in pattern.removeprefix("*."):
        raise ValueError(f"{pattern!r}: a wildcard is * or a leading *. (*.example.com)")
    return pattern


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host.lower() == "localhost"
