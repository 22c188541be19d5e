"""The count of open connections by peer (server/peers.py): a peer's share and the whole,
each connection counted once, proxies counted only in the whole; FORWARDED_ALLOW_IPS read
strictly. How a served connection meets them: tests/server/test_http_protocol.py."""

from __future__ import annotations

import pytest

from suspended_runs.runtime import ConfigurationError
from suspended_runs.server.peers import TOO_MANY, TOO_MANY_FROM_PEER, OpenConnections, Proxies
from suspended_runs.server.settings import load_settings


def test_a_peer_holds_its_share_and_each_connection_counts_once() -> None:
    connections = OpenConnections(per_peer=2, total=10, proxies=Proxies())
    first, second, third = object(), object(), object()
    assert connections.admit(first, "10.0.0.1") is None
    assert connections.admit(second, "10.0.0.1") is None
    assert connections.admit(third, "10.0.0.1") == TOO_MANY_FROM_PEER
    assert connections.admit(third, "10.0.0.2") is None
    connections.release(first)
    connections.release(first)  # a second release of one connection changes nothing
    connections.release(object())  # nor one of a connection never admitted
    assert len(connections) == 2
    assert connections.admit(object(), "10.0.0.1") is None
    assert connections.admit(object(), "10.0.0.1") == TOO_MANY_FROM_PEER


def test_the_whole_holds_every_peer_and_proxies_count_only_there() -> None:
    proxies = Proxies.parse("10.9.0.0/16, 192.0.2.7")
    connections = OpenConnections(per_peer=1, total=3, proxies=proxies)
    assert connections.admit(object(), "10.9.1.1") is None
    assert connections.admit(object(), "10.9.1.1") is None  # a proxy: beyond a peer's share
    assert connections.admit(object(), None) is None  # no address (a Unix socket): a proxy's
    assert connections.admit(object(), "10.0.0.1") == TOO_MANY
    assert "192.0.2.7" in proxies and "192.0.2.8" not in proxies and "*" not in proxies
    assert Proxies.parse(" * ").spelled == ["*"] and "203.0.113.1" in Proxies.parse("*")
    assert Proxies.parse("").spelled == []


@pytest.mark.parametrize("value", ["proxy.internal", "10.0.0.0/33", "127.0.0.1;"])
def test_a_forwarded_allow_ips_that_is_no_address_stops_the_start(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FORWARDED_ALLOW_IPS", value)
    with pytest.raises(ConfigurationError, match=r"^FORWARDED_ALLOW_IPS: "):
        load_settings()
