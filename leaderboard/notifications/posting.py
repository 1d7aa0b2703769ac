"""The webhook POST itself: urllib, no redirects followed (a 3xx is the answer: a redirect
could lead to an address the URL check refuses), connected to the addresses the check
approved, not to whatever the host's name resolves to by then, and within one deadline for
the whole exchange (docs/api.md, 'Webhook URLs' and 'Retries').

The deadline: a socket timeout bounds each read, and a receiver that sends a byte now and
then restarts it at every byte (one byte every 5 s held a worker for a minute). So a timer
shuts the connection's socket down when the POST's time is up, whatever it is waiting for
(the connection, the TLS handshake, the status line, the headers), and the POST then ends as
a `TimeoutError`: no answer, logged and tried again like any other."""

from __future__ import annotations

import http.client
import socket
import ssl
import threading
import time
import urllib.error
import urllib.request
from typing import Any


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class Deadline:
    """Shuts every socket given to `watch` down once `seconds` have passed since it began."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._ends = time.monotonic() + seconds
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def remaining(self) -> float:
        """Seconds left (a small positive number once past: a socket timeout of 0 would make
        the socket non-blocking)."""
        return max(self._ends - time.monotonic(), 0.001)

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            if self.expired:
                _shut(sock)

    def cancel(self) -> None:
        self._timer.cancel()

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                _shut(sock)


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)  # wakes a recv blocked in another thread
    except OSError:
        pass  # already closed, or detached by the TLS wrapper (whose socket is watched too)


def _connected(addresses: list[str], host: str, port: int, deadline: Deadline,
               timeout: float | None) -> socket.socket:
    """A socket connected to the first of `addresses` that answers (or to `host`'s own
    addresses when none are given: private addresses allowed, nothing to pin), watched."""
    error: OSError | None = None
    for address in addresses or [host]:
        per_operation = min(timeout or deadline.seconds, deadline.remaining())
        try:
            sock = socket.create_connection((address, port), timeout=per_operation)
        except OSError as exc:
            error = exc
            continue
        deadline.watch(sock)
        return sock
    raise error or OSError("no address to connect to")


def _opener(addresses: list[str], deadline: Deadline) -> urllib.request.OpenerDirector:
    class DeadlineHTTP(http.client.HTTPConnection):
        def connect(self) -> None:
            self.sock = _connected(addresses, self.host, self.port, deadline, self.timeout)

    class DeadlineHTTPS(http.client.HTTPSConnection):
        def connect(self) -> None:
            sock = _connected(addresses, self.host, self.port, deadline, self.timeout)
            # the certificate is checked against the URL's host name, as without pinning;
            # the handshake runs once the TLS socket is watched, so it has the deadline too
            context: ssl.SSLContext = self._context  # type: ignore[attr-defined]
            wrapped = context.wrap_socket(sock, server_hostname=self.host,
                                          do_handshake_on_connect=False)
            deadline.watch(wrapped)
            wrapped.do_handshake()
            self.sock = wrapped

    class HTTPHandler(urllib.request.HTTPHandler):
        def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
            return self.do_open(DeadlineHTTP, req)

    class HTTPSHandler(urllib.request.HTTPSHandler):
        def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
            return self.do_open(DeadlineHTTPS, req)

    return urllib.request.build_opener(_NoRedirects, HTTPHandler, HTTPSHandler)


def webhook_post(url: str, body: bytes, headers: dict[str, str], *, addresses: list[str],
                 timeout: float) -> int:
    """POST and return the answer's status code, once its status line and headers came
    (the body is not read); all within `timeout` seconds of the start, connecting included.
    Raises OSError when no answer came in time (`TimeoutError`), none came at all, or it was
    not HTTP."""
    request = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Type": "application/json", "User-Agent": "evalserver-webhooks", **headers})
    deadline = Deadline(timeout)
    try:
        with _opener(addresses, deadline).open(request, timeout=timeout) as response:
            code = int(response.status)
    except urllib.error.HTTPError as exc:
        exc.close()
        code = int(exc.code)
    except (OSError, http.client.HTTPException) as exc:
        if deadline.expired:
            raise TimeoutError(f"no complete answer within {timeout:g} s") from None
        if isinstance(exc, http.client.HTTPException):  # a malformed or cut answer
            raise OSError(f"not an HTTP answer ({type(exc).__name__}: {exc})") from None
        raise
    finally:
        deadline.cancel()
    return code
