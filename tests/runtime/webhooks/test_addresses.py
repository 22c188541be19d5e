"""Where webhooks may post (runtime/webhooks/addresses.py): in production only public
https, checked by resolving at every attempt; loopback http only in development; the
exceptions named in WEBHOOK_ALLOWED_HOSTS."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from typing import Any

import pytest

from suspended_runs.runtime.webhooks.addresses import OutboundRules, RefusedAddress

PRODUCTION = OutboundRules.parse(True, [])


INTERNAL = [
    # IPv4, and the spellings a resolver reads as IPv4
    ("127.0.0.1", "127.0.0.1"),
    ("127.1", "127.0.0.1"),
    ("2130706433", "127.0.0.1"),
    ("0x7f000001", "127.0.0.1"),
    ("0177.0.0.1", "127.0.0.1"),
    ("0", "0.0.0.0"),
    ("0.0.0.0", "0.0.0.0"),
    ("10.1.2.3", "10.1.2.3"),
    ("172.16.0.1", "172.16.0.1"),
    ("192.168.0.10", "192.168.0.10"),
    ("169.254.169.254", "169.254.169.254"),  # a cloud's metadata address
    ("100.64.0.1", "100.64.0.1"),
    ("192.0.0.8", "192.0.0.8"),
    ("192.0.2.1", "192.0.2.1"),
    ("198.18.0.1", "198.18.0.1"),
    ("198.51.100.1", "198.51.100.1"),
    ("203.0.113.1", "203.0.113.1"),
    ("192.88.99.1", "192.88.99.1"),
    ("224.0.0.1", "224.0.0.1"),  # multicast
    ("239.255.255.250", "239.255.255.250"),
    ("240.0.0.1", "240.0.0.1"),  # reserved
    ("255.255.255.255", "255.255.255.255"),
    # IPv6
    ("[::1]", "::1"),
    ("[::]", "::"),
    ("[fe80::1]", "fe80::1"),
    ("[fc00::1]", "fc00::1"),
    ("[fd12:3456::1]", "fd12:3456::1"),
    ("[fec0::1]", "fec0::1"),
    ("[ff02::1]", "ff02::1"),  # multicast
    ("[ff0e::1]", "ff0e::1"),
    ("[100::1]", "100::1"),
    ("[2001:db8::1]", "2001:db8::1"),
    ("[3fff::1]", "3fff::1"),
    ("[5f00::1]", "5f00::1"),
    ("[4000::1]", "4000::1"),
    # IPv4 inside IPv6: mapped, compatible, SIIT, 6to4, NAT64 (well-known, local), Teredo
    ("[::ffff:127.0.0.1]", "::ffff:127.0.0.1"),
    ("[::ffff:7f00:1]", "::ffff:7f00:1"),
    ("[::ffff:a9fe:a9fe]", "::ffff:a9fe:a9fe"),
    ("[::127.0.0.1]", "::127.0.0.1"),
    ("[::a9fe:a9fe]", "::a9fe:a9fe"),
    ("[::ffff:0:7f00:1]", "::ffff:0:7f00:1"),
    ("[::ffff:0:a00:1]", "::ffff:0:a00:1"),
    ("[2002:7f00:1::1]", "2002:7f00:1::1"),
    ("[2002:a9fe:a9fe::1]", "2002:a9fe:a9fe::1"),
    ("[64:ff9b::7f00:1]", "64:ff9b::7f00:1"),
    ("[64:ff9b::a9fe:a9fe]", "64:ff9b::a9fe:a9fe"),
    ("[64:ff9b:1::7f00:1]", "64:ff9b:1::7f00:1"),
    ("[64:ff9b:1:7f00:1::]", "64:ff9b:1:7f00:1::"),
    ("[64:ff9b:1::5db8:d70e]", "64:ff9b:1::5db8:d70e"),  # local NAT64: never public
    ("[2001:0:4136:e378:8000:63bf:80ff:fffe]", "2001:0:4136:e378:8000:63bf:80ff:fffe"),
    ("[2001:0:5db8:d70e::80ff:fffe]", "2001:0:5db8:d70e::80ff:fffe"),  # Teredo: client 127.0.0.1
]
"""Every spelling of an address that is not public the attack review tried: (the URL's
host, the address a resolver could answer for a name)."""

PUBLIC = [
    ("93.184.215.14", "93.184.215.14"),
    ("[2606:2800:220:1::1]", "2606:2800:220:1::1"),
    ("[::ffff:93.184.215.14]", "::ffff:93.184.215.14"),
    ("[2002:5db8:d70e::1]", "2002:5db8:d70e::1"),
    ("[64:ff9b::5db8:d70e]", "64:ff9b::5db8:d70e"),
]


@pytest.fixture
async def answers(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What the resolver answers for any name (the DNS of a name that points inside)."""
    answered: list[str] = []
    loop = asyncio.get_running_loop()
    resolve = loop.getaddrinfo

    async def getaddrinfo(host: str, port: int, **kwargs: Any) -> list[tuple[Any, ...]]:
        if host != "hooks.example":
            return await resolve(host, port, **kwargs)
        return [
            (socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port))
            for a in answered
        ]

    monkeypatch.setattr(loop, "getaddrinfo", getaddrinfo)
    return answered


@pytest.mark.parametrize(("host", "address"), INTERNAL)
async def test_production_refuses_every_spelling_of_an_address_that_is_not_public(
    answers: list[str], host: str, address: str
) -> None:
    with pytest.raises(RefusedAddress):
        await PRODUCTION.check(f"https://{host}/hook")
    answers.append(address)
    with pytest.raises(RefusedAddress):
        await PRODUCTION.check("https://hooks.example/hook")
    answers[:0] = ["93.184.215.14"]  # one answer inside is enough
    with pytest.raises(RefusedAddress):
        await PRODUCTION.check("https://hooks.example/hook")


@pytest.mark.parametrize(("host", "address"), PUBLIC)
async def test_production_posts_to_public_https_however_spelled(
    answers: list[str], host: str, address: str
) -> None:
    await PRODUCTION.check(f"https://{host}/hook")
    answers.append(address)
    assert await PRODUCTION.check("https://hooks.example/hook") == ipaddress.ip_address(address)
    with pytest.raises(RefusedAddress):
        await PRODUCTION.check(f"http://{host}/hook")  # public, but not https


@pytest.mark.parametrize(
    "reason",
    ["multicast", "reserved", "unspecified"],
)
async def test_multicast_reserved_and_unspecified_are_refused_by_name(reason: str) -> None:
    host = {"multicast": "[ff02::1]", "reserved": "240.0.0.1", "unspecified": "0.0.0.0"}[reason]
    with pytest.raises(RefusedAddress, match=reason):
        await PRODUCTION.check(f"https://{host}/hook")


@pytest.mark.parametrize(
    "url",
    [
        "https://localhost/hook",  # resolves to loopback
        "ftp://93.184.215.14/hook",
        "https://user:secret@93.184.215.14/hook",
        "https://no-such-host.invalid/hook",
        "https://93.184.215.14:70000/hook",  # a port that is none
    ],
)
async def test_production_refuses_what_is_not_public_https(url: str) -> None:
    with pytest.raises(RefusedAddress):
        await PRODUCTION.check(url)


async def test_production_posts_to_a_public_https_address() -> None:
    await PRODUCTION.check("https://93.184.215.14/hook")


async def test_allowed_hosts_and_networks_are_the_exceptions() -> None:
    rules = OutboundRules.parse(True, ["hooks.internal", "*.corp.example", "10.20.0.0/16"])
    await rules.check("http://hooks.internal/x")  # named: taken as the operator says
    await rules.check("https://a.b.corp.example/x")
    await rules.check("https://10.20.3.4/x")
    with pytest.raises(RefusedAddress):
        await rules.check("https://10.21.3.4/x")


async def test_development_allows_loopback_http_and_nothing_private() -> None:
    development = OutboundRules.parse(False, [])
    await development.check("http://127.0.0.1:9/hook")
    await development.check("http://localhost:9/hook")
    with pytest.raises(RefusedAddress):
        await development.check("http://10.1.2.3/hook")
    with pytest.raises(RefusedAddress):
        await development.check("http://93.184.215.14/hook")
