"""Limits on how a request body arrives, enforced while it is read.

A client that sends nothing of its body for EVALSERVER_UPLOAD_STALL_TIMEOUT seconds, or has
not sent all of it within EVALSERVER_UPLOAD_DEADLINE seconds, is answered 408
`request_timeout`; one that hangs up part-way, 400 `upload_incomplete`; one that announces a
body (Content-Length) larger than the upload cap, 413 `file_too_large` before a byte of it is
read. Nothing it sent is kept: the request fails before the view has its data, and the upload's
temporary files are removed (leaderboard/common/uploads.py).

Why in the WSGI layer: gunicorn's threads read a body from a blocking socket with no timeout,
so a client trickling a few bytes a second would hold its thread (a sync worker: its whole
process, until gunicorn killed it with an empty 500) for as long as it liked. gunicorn hands
the application the request's socket (environ["gunicorn.socket"]); `RequestBodyLimits` gives
it a read timeout while the application runs and turns a timeout or an early end of the body
into `RequestBodyRefused`, a BadRequest that the API's error handler and Django's 400 handler
answer in the error shape (leaderboard/common/api_errors.py, error_pages.py). The deadline
needs more than a timeout, since gunicorn reads on until it holds what the application asked
for (64 KiB at a time) as long as each piece arrives within the stall timeout: a timer shuts
the socket's reading side when it passes, which ends the read at once. A reverse proxy
that buffers request bodies (docker/nginx/) keeps slow clients away from the web altogether;
this is what holds where none does (scripts/serve.sh).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterable
from contextlib import suppress
from typing import Any

from django.conf import settings
from django.core.exceptions import BadRequest

# A multipart body carries its form fields and part headers beside the files: room for them
# over the file cap before a declared length counts as too large (the same room as
# leaderboard/common/uploads.py's check, and the proxy's client_max_body_size).
FORM_OVERHEAD_BYTES = 1_048_576

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class RequestBodyRefused(BadRequest):
    """The request body stopped arriving, came too slowly, ended early or is too large."""

    def __init__(self, code: str, message: str, status: int) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status


def body_cap_bytes() -> int:
    """The largest request body accepted: the upload cap plus room for the form."""
    return int(settings.EVALSERVER_MAX_UPLOAD_BYTES) + FORM_OVERHEAD_BYTES


def _too_large() -> RequestBodyRefused:
    # the words of leaderboard/common/api_errors.py's file_too_large_error("the request body")
    return RequestBodyRefused(
        "file_too_large", f"the request body is larger than the upload limit of "
        f"{settings.EVALSERVER_MAX_UPLOAD_BYTES} bytes", 413)


class _LimitedInput:
    """environ["wsgi.input"] read under the stall timeout and the deadline. Django reads it
    through `read` and `readline` only (django.core.handlers.wsgi.LimitedStream)."""

    def __init__(self, stream: Any, sock: Any, length: int | None) -> None:
        self._stream = stream
        self._sock = sock
        self._length = length
        self._received = 0
        self._stall = float(settings.EVALSERVER_UPLOAD_STALL_TIMEOUT)
        self._deadline_seconds = int(settings.EVALSERVER_UPLOAD_DEADLINE)
        self._deadline = time.monotonic() + self._deadline_seconds
        self._timer: threading.Timer | None = None
        self._expired = False

    def _late(self) -> RequestBodyRefused:
        return RequestBodyRefused(
            "request_timeout", f"the request body did not arrive whole within "
            f"{self._deadline_seconds} s; nothing was stored: send it again", 408)

    def _expire(self) -> None:
        self._expired = True
        with suppress(OSError):  # a read under way returns at once, with nothing
            self._sock.shutdown(socket.SHUT_RD)

    def finish(self) -> None:
        """The application is done with the body: the deadline no longer applies."""
        if self._timer is not None:
            self._timer.cancel()

    def _prepare(self) -> None:
        if self._length is not None and self._length > body_cap_bytes():
            raise _too_large()
        remaining = self._deadline - time.monotonic()
        if self._expired or remaining <= 0:
            raise self._late()
        if self._sock is not None:
            self._sock.settimeout(min(self._stall, remaining))
            if self._timer is None:  # started by the first read: most bodies are never read
                self._timer = threading.Timer(remaining, self._expire)
                self._timer.daemon = True
                self._timer.start()

    def _read(self, method: Callable[..., bytes], size: int | None) -> bytes:
        self._prepare()
        try:
            data = method(size) if size is not None and size >= 0 else method()
        except TimeoutError:
            if self._expired or self._deadline - time.monotonic() <= 0:
                raise self._late() from None
            raise RequestBodyRefused(
                "request_timeout", f"nothing of the request body arrived for "
                f"{self._stall:g} s; nothing was stored: send it again", 408) from None
        except OSError:
            if self._expired:
                raise self._late() from None
            raise
        self._received += len(data)
        if self._length is not None and self._received >= self._length:
            self.finish()
        return data

    def _check_end(self, data: bytes, wanted: int | None) -> None:
        """An empty read (or a short one) before the announced length: the client is gone,
        or the deadline shut the socket's reading side."""
        if self._length is None or self._received >= self._length:
            return
        if self._expired:
            raise self._late()
        if not data or (wanted is not None and wanted >= 0 and len(data) < wanted):
            raise RequestBodyRefused(
                "upload_incomplete", f"the connection closed after {self._received} of the "
                f"{self._length} bytes of the request body; nothing was stored", 400)

    def read(self, size: int | None = -1, /) -> bytes:
        data = self._read(self._stream.read, size)
        self._check_end(data, size)
        return data

    def readline(self, size: int | None = -1, /) -> bytes:
        data = self._read(self._stream.readline, size)
        if not data:
            self._check_end(data, None)
        return data


def _content_length(environ: dict[str, Any]) -> int | None:
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return None  # Django reads such a body as empty
    return length if length > 0 else None


class RequestBodyLimits:
    """WSGI middleware around the Django application (evalserver/wsgi.py)."""

    def __init__(self, app: WSGIApp) -> None:
        self.app = app

    def __call__(self, environ: dict[str, Any],
                 start_response: Callable[..., Any]) -> Iterable[bytes]:
        length = _content_length(environ)
        if length is None:
            return self.app(environ, start_response)
        sock = environ.get("gunicorn.socket")
        previous = sock.gettimeout() if sock is not None else None
        body = _LimitedInput(environ["wsgi.input"], sock, length)
        environ["wsgi.input"] = body
        try:
            # Django has read whatever it reads of the body when it returns its response
            return self.app(environ, start_response)
        finally:
            body.finish()
            if sock is not None:
                with suppress(OSError):
                    sock.settimeout(previous)
