"""A real HTTP server on 127.0.0.1 for the fetch_data tests: serves a folder laid out like the
data directory, honours `Range: bytes=N-` (206 with Content-Range), and can be told to cut a
file's connection after some bytes, to trickle a file byte by byte, or to ignore ranges. It
records every request."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote

from tests.loopback_http import serving

_RANGE = re.compile(r"^bytes=(\d+)-$")


@dataclass
class Served:
    path: str
    range: str | None
    status: int
    bytes_sent: int  # of a trickled answer: the bytes sent at once, before the trickle


@dataclass
class DataServer:
    root: Path
    url: str = ""
    # relative path -> bytes after which the connection is closed (Content-Length stays whole)
    cut_after: dict[str, int] = field(default_factory=dict)
    # relative path -> (bytes sent at once, then seconds between each single byte after them)
    trickle: dict[str, tuple[int, float]] = field(default_factory=dict)
    ranges: bool = True
    log: list[Served] = field(default_factory=list)
    # set when the server stops: a trickling answer ends instead of outliving its test
    stopped: threading.Event = field(default_factory=threading.Event)


def _handler(server: DataServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802 - the http.server name
            relative = unquote(self.path.lstrip("/"))
            target = (server.root / relative).resolve()
            if server.root.resolve() not in target.parents or not target.is_file():
                self._answer(relative, 404, b"not found")
                return
            data = target.read_bytes()
            wanted = _RANGE.match(self.headers.get("Range", ""))
            start = int(wanted.group(1)) if wanted and server.ranges else 0
            if start >= len(data) > 0:
                self._answer(relative, 416, b"")
                return
            body = data[start:]
            self.send_response(206 if start else 200)
            if start:
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Accept-Ranges", "bytes" if server.ranges else "none")
            self.end_headers()
            trickle = server.trickle.get(relative)
            if trickle is not None:
                head, gap = trickle
                self._record(relative, 206 if start else 200, body[:head])
                self._trickle(body, head=head, gap=gap)
                return
            limit = server.cut_after.get(relative)
            if limit is not None and start < limit:
                body = body[: limit - start]
                self.close_connection = True
            self._record(relative, 206 if start else 200, body)
            self.wfile.write(body)
            self.wfile.flush()

        def _trickle(self, body: bytes, *, head: int, gap: float) -> None:
            self.close_connection = True
            try:
                self.wfile.write(body[:head])
                self.wfile.flush()
                for offset in range(head, len(body)):
                    if server.stopped.wait(gap):
                        return
                    self.wfile.write(body[offset:offset + 1])
                    self.wfile.flush()
            except OSError:  # the client gave up and closed the connection
                return

        def _answer(self, relative: str, status: int, body: bytes) -> None:
            # Before the headers: a client given an error status need not wait for the body
            self._record(relative, status, body)
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _record(self, relative: str, status: int, body: bytes) -> None:
            # Before the body is written: once the client has the answer it may send its next
            # request on another thread, which must not be logged ahead of this one.
            server.log.append(Served(relative, self.headers.get("Range"), status, len(body)))

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

    return Handler


@contextmanager
def data_server(root: Path) -> Iterator[DataServer]:
    served = DataServer(root)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(served))
    httpd.daemon_threads = True
    served.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    with serving(httpd):
        try:
            yield served
        finally:
            served.stopped.set()  # a stalled answer ends before the server shuts down
