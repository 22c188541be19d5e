"""Where webhooks may be posted: no request of ours reaches an internal address unasked.

Only `https` URLs whose every resolved address is public, or whose host or addresses
match `WEBHOOK_ALLOWED_HOSTS` (names as `ALLOWED_HOSTS` writes them, or CIDRs), checked
at every attempt (a name may resolve elsewhere tomorrow), and the post connects to the
address checked; in development, loopback addresses too, over `http` as well.

An IPv6 address may carry an IPv4 one (mapped, compatible, SIIT, 6to4, NAT64), which is
where a post to it goes: it is judged as the address it carries. Public is said here,
not left to `ipaddress.is_global`, which calls multicast global and misses ranges that
later RFCs set aside: unicast, outside every special-purpose range of IANA's registries,
and for IPv6 within 2000::/3, the only range the internet routes.
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
        if not addresses:
            raise RefusedAddress(f"{host} resolves to no address")
        for address in addresses:
            reached = _embedded(address)
            if any(reached in network for network in self.allowed_networks):
                continue
            if not self.production and reached.is_loopback:
                continue
            why = _not_public(reached)
            if why is None and parts.scheme == "https":
                continue
            raise RefusedAddress(
                f"{host} resolves to {reached}: not a public https address ({why or 'http'})"
            )
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
_COMPATIBLE = ipaddress.IPv6Network("::/96")
_SIIT = ipaddress.IPv6Network("::ffff:0:0:0/96")
_GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")
_SET_ASIDE = {
    ipaddress.ip_network(network): why
    for network, why in (
        ("0.0.0.0/8", "this network"),
        ("100.64.0.0/10", "shared (carrier-grade NAT)"),
        ("192.0.0.0/24", "IETF protocol assignments"),
        ("192.88.99.0/24", "6to4 relays"),
        ("198.18.0.0/15", "benchmarking"),
        ("240.0.0.0/4", "reserved"),
        ("64:ff9b:1::/48", "local NAT64, whose IPv4 the network places"),
        ("2001::/32", "Teredo, which reaches its client through a relay"),
        ("2001::/23", "IETF protocol assignments"),
        ("2001:db8::/32", "documentation"),
        ("3fff::/20", "documentation"),
        ("5f00::/16", "segment routing"),
        ("fec0::/10", "site-local"),
    )
}
"""Special-purpose ranges `ipaddress` (of this Python) does not tell apart, each with why
no post goes there: a Teredo or local NAT64 address is refused whatever it carries."""


def _embedded(address: IPAddress) -> IPAddress:
    """The IPv4 address an IPv6 one carries (mapped, compatible, SIIT, 6to4, NAT64), which
    is where it goes; else the address itself."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address.sixtofour is not None:
            return address.sixtofour
        if address in _NAT64 or address in _SIIT or address in _COMPATIBLE:
            return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address


def _not_public(address: IPAddress) -> str | None:
    """Why `address` (as `_embedded` gives it) is no public unicast address; None if it is."""
    for kind in ("unspecified", "loopback", "multicast", "link_local", "reserved"):
        if getattr(address, f"is_{kind}"):
            return kind.replace("_", "-")
    for network, why in _SET_ASIDE.items():
        if address in network:
            return why
    if isinstance(address, ipaddress.IPv6Address) and address not in _GLOBAL_UNICAST:
        return "outside IPv6's global unicast (2000::/3)"
    return None if address.is_global else "private"


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
