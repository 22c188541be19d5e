"""Where webhooks may post (runtime/webhooks/addresses.py): in production only public
https, checked by resolving at every attempt; loopback http only in development; the
exceptions named in WEBHOOK_ALLOWED_HOSTS."""

from __future__ import annotations

import pytest

from suspended_runs.runtime.webhooks.addresses import OutboundRules, RefusedAddress

PRODUCTION = OutboundRules.parse(True, [])


@pytest.mark.parametrize(
    "url",
    [
        "https://localhost/hook",  # resolves to loopback
        "https://127.0.0.1/hook",
        "https://[::1]/hook",
        "https://10.1.2.3/hook",
        "https://169.254.169.254/latest/meta-data",  # a cloud's metadata address
        "https://192.168.0.10/hook",
        "http://93.184.215.14/hook",  # public, but not https
        "ftp://93.184.215.14/hook",
        "https://user:secret@93.184.215.14/hook",
        "https://no-such-host.invalid/hook",
        "https://[::ffff:127.0.0.1]/hook",  # IPv4 in IPv6: mapped, 6to4, NAT64
        "https://[2002:a9fe:a9fe::1]/hook",
        "https://[64:ff9b::a9fe:a9fe]/hook",
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
