"""The client's address: the one place that decides it, for the login lockout
(leaderboard/accounts/login_throttle.py), the API's rate limits (leaderboard/common/
throttling.py) and the /metrics access check (evalserver/metrics_endpoint.py) alike.

Behind the reverse proxy (docker/nginx/) every request comes from the proxy's address, so
counting per REMOTE_ADDR would count every client together: 50 failed logins from anyone
would lock everyone out. `ClientAddressMiddleware`, first in settings.MIDDLEWARE, sets
REMOTE_ADDR to the client's address before anything reads it, under gunicorn, runserver and
the test client alike (gunicorn's --forwarded-allow-ips does not change REMOTE_ADDR).

The address is read from X-Forwarded-For right to left (docs/operators/https.md):
each proxy appends the address it received the request from, so starting from the peer and
walking left while the current address is one of EVALSERVER_TRUSTED_PROXIES, the first
address not a trusted proxy's is the client's. Entries left of it were written by the client
or by proxies nobody vouches for, and are never read: a client cannot choose its own address
by sending the header, and from a peer that is not a trusted proxy the header is ignored.

A hop that is not a bare address (`garbage`, `1.2.3.4:5678`, `[::1]:80`, an empty one between
commas, an empty header) says nothing about who sent the request: the client is then
`UNKNOWN`, never the trusted proxy whose header it was. Taking the proxy's own address made
such a client look like the proxy (loopback, for a proxy on this machine: /metrics opened), and
keeping the hop's text would let a client write a new one per request for a fresh rate-limit
allowance. As `unknown`, every such client is counted as one by the lockout and the rate limits,
and /metrics (evalserver/metrics_endpoint.py: an address in EVALSERVER_METRICS_ALLOWED_IPS)
refuses it.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable
from functools import lru_cache

from django.conf import settings
from django.http import HttpRequest, HttpResponse

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

# The client's address when a trusted proxy wrote something else: RFC 7239's identifier for an
# unknown node (§6.2), which no address parser accepts.
UNKNOWN = "unknown"


def _address(text: str) -> Address | None:
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        return None


@lru_cache(maxsize=8)
def _networks(trusted: tuple[str, ...]) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(n, strict=False) for n in trusted)


def client_address(*, peer: str, forwarded_for: str | None, trusted: Iterable[str]) -> str:
    """The client's address of a request from `peer` (the socket's address) carrying this
    X-Forwarded-For header, with these trusted proxies (addresses or networks)."""
    networks = _networks(tuple(trusted))
    address = _address(peer)
    if address is None:
        return peer  # a unix socket, or a test's own text: nothing to walk back from
    hops = forwarded_for.split(",") if forwarded_for is not None else []
    while hops and any(address in network for network in networks):
        previous = _address(hops.pop())
        if previous is None:  # a trusted proxy wrote no address: whoever sent it is unknown
            return UNKNOWN
        address = previous
    return str(address)


class ClientAddressMiddleware:
    """Sets REMOTE_ADDR to `client_address` of the request (the peer's own address is kept in
    META["EVALSERVER_PEER_ADDR"] for the logs)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        peer = request.META.get("REMOTE_ADDR", "")
        request.META["EVALSERVER_PEER_ADDR"] = peer
        request.META["REMOTE_ADDR"] = client_address(
            peer=peer, forwarded_for=request.META.get("HTTP_X_FORWARDED_FOR"),
            trusted=settings.EVALSERVER_TRUSTED_PROXIES)
        return self.get_response(request)
