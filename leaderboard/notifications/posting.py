"""The webhook POST itself: urllib, no redirects followed (a 3xx is the answer: a redirect
could lead to an address the URL check refuses), and connected to the addresses the check
approved, not to whatever the host's name resolves to by then (docs/api.md, 'Webhook URLs')."""

from __future__ import annotations

import http.client
import socket
import urllib.error
import urllib.request
from typing import Any


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _pinned_socket(addresses: list[str], port: int, timeout: float | None) -> socket.socket:
    error: OSError | None = None
    for address in addresses:
        try:
            return socket.create_connection((address, port), timeout=timeout)
        except OSError as exc:
            error = exc
    raise error or OSError("no address to connect to")


def _opener(addresses: list[str]) -> urllib.request.OpenerDirector:
    if not addresses:  # private addresses allowed: nothing to pin
        return urllib.request.build_opener(_NoRedirects)

    class PinnedHTTP(http.client.HTTPConnection):
        def connect(self) -> None:
            self.sock = _pinned_socket(addresses, self.port, self.timeout)

    class PinnedHTTPS(http.client.HTTPSConnection):
        def connect(self) -> None:
            sock = _pinned_socket(addresses, self.port, self.timeout)
            # the certificate is checked against the URL's host name, as without pinning
            self.sock = self._context.wrap_socket(  # type: ignore[attr-defined]
                sock, server_hostname=self.host)

    class HTTPHandler(urllib.request.HTTPHandler):
        def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
            return self.do_open(PinnedHTTP, req)

    class HTTPSHandler(urllib.request.HTTPSHandler):
        def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
            return self.do_open(PinnedHTTPS, req)

    return urllib.request.build_opener(_NoRedirects, HTTPHandler, HTTPSHandler)


def webhook_post(url: str, body: bytes, headers: dict[str, str], *, addresses: list[str],
                 timeout: float) -> int:
    """POST and return the status code (raises OSError when no answer came)."""
    request = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Type": "application/json", "User-Agent": "evalserver-webhooks", **headers})
    try:
        with _opener(addresses).open(request, timeout=timeout) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        exc.close()
        return int(exc.code)
