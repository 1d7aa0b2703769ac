"""The limits on how a request body arrives (leaderboard/common/request_body.py), on a real
socket pair standing in for gunicorn's client socket: the deadline ends a body that keeps
trickling, an early end is told apart, a body announced too large is refused unread, and the
socket gets its own timeout back. Also the client's address behind the proxy
(evalserver/client_address.py). tests/deploy/test_slow_clients.py drives real gunicorn."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pytest_django.fixtures import Settings

from leaderboard.common.request_body import RequestBodyLimits, RequestBodyRefused

LENGTH = 100_000


@pytest.fixture
def connection() -> Iterator[tuple[socket.socket, socket.socket]]:
    """(the server's end, the client's end)."""
    server, client = socket.socketpair()
    yield server, client
    server.close()
    client.close()


def _read_all(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
    """An application that reads the body as Django does, 64 KiB at a time."""
    body, left = environ["wsgi.input"], int(environ["CONTENT_LENGTH"])
    while left:
        data = body.read(min(65536, left))
        if not data:
            break
        left -= len(data)
    return [b"read"]


def _call(server: socket.socket, length: int = LENGTH) -> list[bytes]:
    environ = {"CONTENT_LENGTH": str(length), "wsgi.input": server.makefile("rb"),
               "gunicorn.socket": server}
    return list(RequestBodyLimits(_read_all)(environ, lambda *args: None))


def _trickle(client: socket.socket, stop: threading.Event) -> threading.Thread:
    def send() -> None:
        while not stop.wait(0.05):
            try:
                client.sendall(b"x")
            except OSError:
                return
    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread


def test_it_ends_a_body_still_trickling_at_the_deadline_with_408(
        settings: Settings, connection: tuple[socket.socket, socket.socket]) -> None:
    settings.EVALSERVER_UPLOAD_DEADLINE = 2
    settings.EVALSERVER_UPLOAD_STALL_TIMEOUT = 30
    server, client = connection
    stop = threading.Event()
    _trickle(client, stop)  # a byte every 0.05 s: never stalled, never done
    started = time.monotonic()
    try:
        with pytest.raises(RequestBodyRefused) as refused:
            _call(server)
    finally:
        stop.set()

    assert (refused.value.status, refused.value.code, refused.value.message) == (
        408, "request_timeout",
        "the request body did not arrive whole within 2 s; nothing was stored: send it again")
    assert time.monotonic() - started >= 1.9  # not before the deadline


def test_it_answers_408_when_nothing_arrives_for_the_stall_timeout(
        settings: Settings, connection: tuple[socket.socket, socket.socket]) -> None:
    settings.EVALSERVER_UPLOAD_STALL_TIMEOUT = 1
    server, client = connection
    client.sendall(b"x" * 1000)  # then nothing

    with pytest.raises(RequestBodyRefused) as refused:
        _call(server)

    assert (refused.value.status, refused.value.code, refused.value.message) == (
        408, "request_timeout",
        "nothing of the request body arrived for 1 s; nothing was stored: send it again")


def test_it_tells_a_client_gone_mid_body_apart(
        connection: tuple[socket.socket, socket.socket]) -> None:
    server, client = connection
    client.sendall(b"x" * 1000)
    client.close()

    with pytest.raises(RequestBodyRefused) as refused:
        _call(server)

    assert (refused.value.status, refused.value.code, refused.value.message) == (
        400, "upload_incomplete", f"the connection closed after 1000 of the {LENGTH} bytes of "
        "the request body; nothing was stored")


def test_it_refuses_a_body_announced_over_the_cap_without_reading_it(
        settings: Settings, connection: tuple[socket.socket, socket.socket]) -> None:
    settings.EVALSERVER_MAX_UPLOAD_BYTES = 1000
    server, client = connection
    client.sendall(b"x" * 10)  # what a read would find

    with pytest.raises(RequestBodyRefused) as refused:
        _call(server, length=1000 + 1_048_576 + 1)

    assert (refused.value.status, refused.value.code, refused.value.message) == (
        413, "file_too_large", "the request body is larger than the upload limit of 1000 bytes")
    server.setblocking(False)
    assert server.recv(100) == b"x" * 10  # still unread


def test_it_gives_the_socket_its_own_timeout_back(
        connection: tuple[socket.socket, socket.socket]) -> None:
    server, client = connection
    client.sendall(b"x" * LENGTH)
    assert server.gettimeout() is None

    assert _call(server) == [b"read"]
    assert server.gettimeout() is None
