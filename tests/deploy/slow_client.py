"""A client that uploads a multipart file a few bytes at a time on its own socket, as a slow
(or hostile) connection does; shared by tests/deploy/test_slow_clients.py and
bench/slow_uploads.py."""

from __future__ import annotations

import http.client
import select
import socket
import threading

BOUNDARY = "slowclientboundary"


def multipart_head(field: str, filename: str) -> bytes:
    return (f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{field}\"; "
            f"filename=\"{filename}\"\r\nContent-Type: application/octet-stream\r\n\r\n").encode()


MULTIPART_TAIL = f"\r\n--{BOUNDARY}--\r\n".encode()


class SlowUpload:
    """POST `path` with one file field of `file_bytes` bytes announced by Content-Length: the
    first `burst` bytes at once, then `chunk` bytes every `interval` seconds from a thread until
    `stall()` (or until the file is all sent, then the closing boundary). The burst gets the
    file under way: Django's parser reads 64 KiB before it opens the file."""

    def __init__(self, host: str, port: int, path: str, *, field: str, file_bytes: int,
                 headers: dict[str, str] | None = None, burst: int = 256 * 1024,
                 chunk: int = 4, interval: float = 0.25) -> None:
        self.address = (host, port)
        self.path = path
        self.head = multipart_head(field, "slow.npy")
        self.file_bytes = file_bytes
        self.headers = headers or {}
        self.burst = min(burst, file_bytes)
        self.chunk = chunk
        self.interval = interval
        self.sent = 0  # file bytes sent so far
        self.send_error: OSError | None = None
        self._stalled = threading.Event()
        self._thread: threading.Thread | None = None
        self.sock: socket.socket | None = None

    @property
    def content_length(self) -> int:
        return len(self.head) + self.file_bytes + len(MULTIPART_TAIL)

    def start(self) -> SlowUpload:
        self.sock = socket.create_connection(self.address, timeout=30)
        lines = [f"POST {self.path} HTTP/1.1", f"Host: {self.address[0]}",
                 f"Content-Type: multipart/form-data; boundary={BOUNDARY}",
                 f"Content-Length: {self.content_length}",
                 *(f"{name}: {value}" for name, value in self.headers.items())]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + self.head
                          + b"\0" * self.burst)
        self.sent = self.burst
        self._thread = threading.Thread(target=self._trickle, daemon=True)
        self._thread.start()
        return self

    def _trickle(self) -> None:
        assert self.sock is not None
        try:
            while self.sent < self.file_bytes and not self._stalled.wait(self.interval):
                piece = min(self.chunk, self.file_bytes - self.sent)
                self.sock.sendall(b"\0" * piece)
                self.sent += piece
            if self.sent == self.file_bytes and not self._stalled.is_set():
                self.sock.sendall(MULTIPART_TAIL)
        except OSError as exc:  # the server closed the connection
            self.send_error = exc

    def stall(self) -> None:
        """Send nothing more, keeping the connection open."""
        self._stalled.set()
        if self._thread is not None:
            self._thread.join()

    def answered(self) -> bool:
        """Whether the server has answered or closed the connection (its socket is readable)."""
        assert self.sock is not None
        return bool(select.select([self.sock], [], [], 0)[0])

    def response(self, timeout: float) -> tuple[int, str]:
        """(status, body) of the server's answer, waiting up to `timeout` seconds."""
        assert self.sock is not None
        self.sock.settimeout(timeout)
        answer = http.client.HTTPResponse(self.sock)
        answer.begin()
        return answer.status, answer.read().decode()

    def close(self) -> None:
        self._stalled.set()
        if self.sock is not None:
            self.sock.close()
