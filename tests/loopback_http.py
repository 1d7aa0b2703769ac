"""A stdlib HTTP server on 127.0.0.1 served from a thread, for the tests that stand in for a
remote party (a data source, a webhook receiver, the app behind a proxy)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import HTTPServer
from typing import TypeVar

Server = TypeVar("Server", bound=HTTPServer)


@contextmanager
def serving(server: Server) -> Iterator[Server]:
    """`server` answering from a daemon thread; shut down and closed on leaving."""
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
