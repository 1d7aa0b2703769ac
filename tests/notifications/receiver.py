"""A webhook receiver on loopback for the tests: records each POST's arrival time, headers and
body, answers the codes it is given in turn (then 200), and verifies the signature the way
docs/api.md, 'Verifying a webhook', tells receivers to. A trickling receiver answers its first
`trickles` POSTs one byte every `TRICKLE_EVERY_S` (a slow receiver that never finishes its
answer), until the sender hangs up or `TRICKLE_FOR_S` have passed."""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.loopback_http import serving


@dataclass
class Received:
    at: float
    headers: dict[str, str]
    body: bytes


TRICKLE_EVERY_S = 0.5
TRICKLE_FOR_S = 30.0


@dataclass
class Receiver:
    url: str
    answers: list[int]
    received: list[Received] = field(default_factory=list)
    trickles: int = 0
    # how each trickled answer ended: "hung up" (the sender closed) or "gave up"
    trickled: list[str] = field(default_factory=list)

    def wait_for(self, count: int, *, timeout: float = 120) -> list[Received]:
        deadline = time.monotonic() + timeout
        while len(self.received) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        return list(self.received)


def signature_valid(secret: str, received: Received) -> bool:
    """The receiver's check (docs/api.md): HMAC-SHA256 over "<timestamp>.<body>"."""
    timestamp = received.headers["X-Evalserver-Timestamp"]
    expected = "sha256=" + hmac.new(secret.encode(), timestamp.encode() + b"." + received.body,
                                    hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, received.headers["X-Evalserver-Signature"])


@contextmanager
def receiver_running(answers: list[int] | None = None, *,
                     trickles: int = 0) -> Iterator[Receiver]:
    state = Receiver(url="", answers=list(answers or []), trickles=trickles)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            state.received.append(Received(time.monotonic(), dict(self.headers), body))
            if state.trickles:
                state.trickles -= 1
                state.trickled.append(self._trickle())
                return
            code = state.answers.pop(0) if state.answers else 200
            self.send_response(code)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def _trickle(self) -> str:
            self.close_connection = True
            ends = time.monotonic() + TRICKLE_FOR_S
            for byte in b"HTTP/1.1 200 OK\r\n" * 1000:
                if time.monotonic() > ends:
                    return "gave up"
                try:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                except OSError:
                    return "hung up"
                time.sleep(TRICKLE_EVERY_S)
            return "gave up"

        def log_message(self, *args: object) -> None:
            pass

    with serving(ThreadingHTTPServer(("127.0.0.1", 0), Handler)) as server:
        state.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
        yield state
