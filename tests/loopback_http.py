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
    # a poll of 50 ms, not 0.5 s: shutdown() waits for the next poll, at the end of every test
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                     daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
