"""The open connections of a server, by peer address: no client holds more than its share.

Every connection costs a file descriptor from its accept to its close, whatever it sends,
and uvicorn limits neither: a client that opens them by the thousand (slow headers, slow
bodies, idle WebSockets) would leave none for anyone else. So the HTTP protocol
(server/http_protocol.py) admits a connection here before serving it: at most
`MAX_CONNECTIONS_PER_PEER` from one address, at most `MAX_CONNECTIONS` in all (a last
resort, below the process's descriptor limit). A connection upgraded to a WebSocket keeps
its place until it closes.

Behind a proxy every connection comes from the proxy, whose connections carry many
clients' requests: the addresses of `FORWARDED_ALLOW_IPS` (the proxies whose
X-Forwarded-For uvicorn reads) count only towards the whole, and the proxy limits each
client itself (docs/security.md says how).
"""

from __future__ import annotations

import ipaddress
import resource
from collections import Counter
from dataclasses import dataclass

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

DESCRIPTORS_SHARE = 0.75
"""Of the process's descriptor limit, what connections may hold when MAX_CONNECTIONS is
unset: the rest is for MongoDB's connections, files and the embedded server's pipes."""

TOO_MANY_FROM_PEER = (
    b"HTTP/1.1 429 Too Many Requests\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"retry-after: 1\r\ncontent-length: 43\r\nconnection: close\r\n\r\n"
    b"too many open connections from this address\n"
)
TOO_MANY = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"retry-after: 1\r\ncontent-length: 31\r\nconnection: close\r\n\r\n"
    b"too many open connections here\n"
)


@dataclass(frozen=True, slots=True)
class Proxies:
    """The addresses FORWARDED_ALLOW_IPS names: addresses, networks, or `*` for any."""

    networks: tuple[IPNetwork, ...] = ()
    any: bool = False

    @classmethod
    def parse(cls, text: str) -> Proxies:
        """Raises ValueError naming an item that is no address or network."""
        items = [item.strip() for item in text.split(",") if item.strip()]
        if "*" in items:
            return cls(any=True)
        networks = []
        for item in items:
            try:
                networks.append(ipaddress.ip_network(item, strict=False))
            except ValueError:
                raise ValueError(f"{item!r} is no IP address or network (nor *)") from None
        return cls(tuple(networks))

    @property
    def spelled(self) -> list[str]:
        """As uvicorn's `forwarded_allow_ips` takes them."""
        return ["*"] if self.any else [str(network) for network in self.networks]

    def __contains__(self, address: str) -> bool:
        if self.any or not self.networks:
            return self.any
        try:
            parsed = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(parsed in network for network in self.networks)


class OpenConnections:
    """The connections a server holds, each counted from its admission to its release,
    by peer address (but a proxy's) and in all."""

    def __init__(self, per_peer: int, total: int, proxies: Proxies) -> None:
        self.per_peer, self.total, self.proxies = per_peer, total, proxies
        self._peers: dict[object, str | None] = {}
        """Each admitted connection (its transport) -> the peer it counts for (None: a
        proxy, counted in all only)."""
        self._by_peer: Counter[str] = Counter()

    def admit(self, connection: object, peer: str | None) -> bytes | None:
        """Counts `connection` in, or the answer that refuses it (429 from a peer at its
        share, 503 at the whole)."""
        counted = None if peer is None or peer in self.proxies else peer
        if counted is not None and self._by_peer[counted] >= self.per_peer:
            return TOO_MANY_FROM_PEER
        if len(self._peers) >= self.total:
            return TOO_MANY
        self._peers[connection] = counted
        if counted is not None:
            self._by_peer[counted] += 1
        return None

    def release(self, connection: object) -> None:
        """Counts `connection` out (once; one never admitted is not counted)."""
        if connection not in self._peers:
            return
        peer = self._peers.pop(connection)
        if peer is not None:
            self._by_peer[peer] -= 1
            if not self._by_peer[peer]:
                del self._by_peer[peer]

    def __len__(self) -> int:
        return len(self._peers)


def descriptors_share() -> int:
    """MAX_CONNECTIONS when unset: a share of the process's (soft) descriptor limit."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 65_536
    return max(1, int(soft * DESCRIPTORS_SHARE))
