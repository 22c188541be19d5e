"""Where webhooks may be posted: no request of ours reaches an internal address unasked.

Only `https` URLs whose every resolved address is public, or whose host or addresses
match `WEBHOOK_ALLOWED_HOSTS` (names as `ALLOWED_HOSTS` writes them, or CIDRs), checked
at every attempt (a name may resolve elsewhere tomorrow), and the post connects to the
address checked; in development, loopback addresses too, over `http` as well.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from suspended_runs.storage import SuspendedRunsError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


class RefusedAddress(SuspendedRunsError):
    """A webhook URL this server will not post to (the reason is the message)."""


@dataclass(frozen=True, slots=True)
class OutboundRules:
    production: bool
    allowed_hosts: tuple[str, ...] = ()
    """Host patterns: a name, `*.example.com`, or `*`."""
    allowed_networks: tuple[IPNetwork, ...] = ()

    @classmethod
    def parse(cls, production: bool, allowed: list[str]) -> OutboundRules:
        hosts: list[str] = []
        networks: list[IPNetwork] = []
        for item in allowed:
            try:
                networks.append(ipaddress.ip_network(item, strict=False))
            except ValueError:
                hosts.append(item.lower())
        return cls(production, tuple(hosts), tuple(networks))

    def shape_problem(self, url: str) -> str | None:
        """Why `url` can never be posted to, without resolving it; None: it may be."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return "a webhook URL is http:// or https:// with a host"
        if parts.username or parts.password:
            return "a webhook URL carries no credentials"
        try:
            parts.port  # noqa: B018 (read to validate: out of range raises)
        except ValueError:
            return "a webhook URL's port is a number from 0 to 65535"
        if self.production and parts.scheme != "https" and not self._host_allowed(parts.hostname):
            return "in production a webhook URL is https://"
        return None

    async def check(self, url: str) -> IPAddress | None:
        """Raise `RefusedAddress` unless `url` may be posted to now; the address checked,
        for the post to connect to (a name resolved again could answer elsewhere: DNS
        rebinding), or None for a host allowed by name."""
        problem = self.shape_problem(url)
        if problem:
            raise RefusedAddress(problem)
        parts = urlsplit(url)
        host = parts.hostname or ""
        if self._host_allowed(host):
            return None
        addresses = await _resolve(host, parts.port or (443 if parts.scheme == "https" else 80))
        for address in addresses:
            reached = _embedded(address)
            if any(reached in network for network in self.allowed_networks):
                continue
            if reached.is_global and parts.scheme == "https":
                continue
            if not self.production and reached.is_loopback:
                continue
            raise RefusedAddress(f"{host} resolves to {reached}: not a public https address")
        return addresses[0]

    def _host_allowed(self, host: str) -> bool:
        host = host.lower()
        for pattern in self.allowed_hosts:
            if pattern == "*" or pattern == host:
                return True
            if pattern.startswith("*.") and host.endswith(pattern[1:]):
                return True
        return False


_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


def _embedded(address: IPAddress) -> IPAddress:
    """The IPv4 address an IPv6 one carries (mapped, 6to4, NAT64), which is where it goes."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address.sixtofour is not None:
            return address.sixtofour
        if address in _NAT64:
            return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address


async def _resolve(host: str, port: int) -> list[IPAddress]:
    try:
        return [ipaddress.ip_address(host.strip("[]"))]
    except ValueError:
        pass
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise RefusedAddress(f"{host} does not resolve: {exc}") from None
    return [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]
