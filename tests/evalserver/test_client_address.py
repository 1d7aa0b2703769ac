"""The client's address (evalserver/client_address.py): from X-Forwarded-For, right to left,
only through trusted proxies; REMOTE_ADDR otherwise."""

from __future__ import annotations

import pytest
from django.test import Client
from pytest_django.fixtures import Settings

from evalserver.client_address import client_address

TRUSTED = ["172.16.0.0/12", "10.0.0.7"]


@pytest.mark.parametrize(("peer", "forwarded_for", "seen"), [
    ("172.18.0.5", "203.0.113.9", "203.0.113.9"),  # from the proxy: the address it saw
    ("172.18.0.5", "198.51.100.1, 203.0.113.9", "203.0.113.9"),  # the client's claim: unread
    ("172.18.0.5", "198.51.100.1, 203.0.113.9, 10.0.0.7", "203.0.113.9"),  # two proxies
    ("172.18.0.5", "10.0.0.7", "10.0.0.7"),  # every hop trusted: the farthest one
    ("172.18.0.5", None, "172.18.0.5"),  # no header: the proxy's own request
    ("172.18.0.5", "2001:DB8::1", "2001:db8::1"),  # written one way, as the counts are keyed
    ("198.51.100.7", "203.0.113.9", "198.51.100.7"),  # from anyone else: ignored
    ("", "203.0.113.9", ""),
])
def test_it_takes_the_client_address_through_trusted_proxies_only(
        peer: str, forwarded_for: str | None, seen: str) -> None:
    assert client_address(peer=peer, forwarded_for=forwarded_for, trusted=TRUSTED) == seen


# A hop a trusted proxy wrote that is no bare address: the client is `unknown`, never the proxy
# itself (on loopback that would open /metrics), and every such client is counted as one.
@pytest.mark.parametrize("forwarded_for", [
    "garbage", "1.2.3.4:5678", "[::1]:80", "[::1]", "", " ", " , ", "203.0.113.9,",
    "203.0.113.9, not an address", "203.0.113.9, , 10.0.0.7", "garbage, 10.0.0.7"])
def test_it_takes_an_unparsable_hop_of_a_trusted_proxy_for_an_unknown_client(
        forwarded_for: str) -> None:
    assert client_address(peer="172.18.0.5", forwarded_for=forwarded_for,
                          trusted=TRUSTED) == "unknown"


@pytest.mark.parametrize(("peer", "forwarded_for", "seen"), [
    ("198.51.100.7", "garbage", "198.51.100.7"),  # from anyone else: never read
    ("172.18.0.5", "garbage, 203.0.113.9", "203.0.113.9"),  # left of the client: never read
    ("172.18.0.5", "1.2.3.4:5678, 203.0.113.9", "203.0.113.9"),
])
def test_it_reads_no_hop_past_the_first_untrusted_one(
        peer: str, forwarded_for: str, seen: str) -> None:
    assert client_address(peer=peer, forwarded_for=forwarded_for, trusted=TRUSTED) == seen


def test_it_trusts_no_proxy_by_default(settings: Settings) -> None:
    assert settings.EVALSERVER_TRUSTED_PROXIES == []
    assert client_address(peer="127.0.0.1", forwarded_for="203.0.113.9",
                          trusted=settings.EVALSERVER_TRUSTED_PROXIES) == "127.0.0.1"


@pytest.mark.django_db
def test_it_sets_remote_addr_before_every_other_middleware(settings: Settings) -> None:
    # /metrics reads REMOTE_ADDR in the first middleware after this one: loopback may read it
    settings.EVALSERVER_TRUSTED_PROXIES = ["172.18.0.0/16"]
    settings.EVALSERVER_METRICS_ALLOWED_IPS = ["203.0.113.9/32"]
    assert Client(REMOTE_ADDR="172.18.0.5", HTTP_X_FORWARDED_FOR="203.0.113.9").get(
        "/metrics").status_code == 200
    assert Client(REMOTE_ADDR="172.18.0.5", HTTP_X_FORWARDED_FOR="203.0.113.8").get(
        "/metrics").status_code == 403
    assert Client(REMOTE_ADDR="198.51.100.7", HTTP_X_FORWARDED_FOR="203.0.113.9").get(
        "/metrics").status_code == 403


@pytest.mark.django_db
@pytest.mark.parametrize("forwarded_for", ["garbage", "1.2.3.4:5678", "[::1]:80", ""])
def test_it_keeps_metrics_closed_to_an_unparsable_hop_of_a_loopback_proxy(
        settings: Settings, forwarded_for: str) -> None:
    # a proxy on this machine (127.0.0.1, trusted): the client it names is not 127.0.0.1
    settings.EVALSERVER_TRUSTED_PROXIES = ["127.0.0.1"]
    assert Client(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR=forwarded_for).get(
        "/metrics").status_code == 403
    assert Client(REMOTE_ADDR="127.0.0.1").get("/metrics").status_code == 200
