"""The client's address behind the reverse proxy.

Every request reaching the web through the proxy (docker/nginx/) comes from the proxy's
address, so the login throttle, which counts failures per REMOTE_ADDR
(leaderboard/accounts/login_throttle.py), would count every client together: 50 failures from
anyone would lock everyone out. The proxy sends the address it saw as X-Real-IP, replacing any
the client sent; this WSGI middleware makes that REMOTE_ADDR, on requests whose peer is one of
EVALSERVER_TRUSTED_PROXIES only, so that a client talking to gunicorn directly cannot choose its
own address. gunicorn itself never rewrites REMOTE_ADDR.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable
from typing import Any

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        return None


class TrustedProxyClientAddress:
    def __init__(self, app: WSGIApp, trusted: Iterable[str]) -> None:
        self.app = app
        self.trusted: list[Network] = [ipaddress.ip_network(n, strict=False) for n in trusted]

    def _from_proxy(self, peer: str) -> bool:
        address = _address(peer)
        return address is not None and any(address in network for network in self.trusted)

    def __call__(self, environ: dict[str, Any],
                 start_response: Callable[..., Any]) -> Iterable[bytes]:
        if self.trusted and self._from_proxy(environ.get("REMOTE_ADDR", "")):
            client = _address(environ.get("HTTP_X_REAL_IP", ""))
            if client is not None:
                environ["REMOTE_ADDR"] = str(client)
        return self.app(environ, start_response)
