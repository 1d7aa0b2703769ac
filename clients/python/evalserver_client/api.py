"""The evalserver HTTP API over `requests`: JSON requests, streamed multipart uploads, retries.

`requests` reads the proxy settings of the environment (HTTPS_PROXY, HTTP_PROXY, ALL_PROXY,
NO_PROXY) and the CA bundle (REQUESTS_CA_BUNDLE), as clusters behind a proxy need. A 429 or 503
is tried again after the server's `Retry-After` (docs/api.md §3, "Rate limits"): the server
stored nothing for it, so an upload may be sent again. A 429 without `Retry-After` (the daily
quota, §6.1) is final. Every failure is raised as a `ClientError` subclass (errors.py) whose
`exit_code` the command ends with.
"""

from __future__ import annotations

import email.utils
import json
import mimetypes
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

import requests
import urllib3
from requests.adapters import HTTPAdapter

from . import __version__
from .errors import AuthenticationError, ClientError, NetworkError, RefusedError, UsageError

__all__ = ["Api", "ClientError"]

USER_AGENT = f"evalserver-client/{__version__}"
# What to do when the server refuses the token (revoked, or another server's).
TOKEN_REFUSED_HINT = ("The token is wrong or revoked: run `evalserver-client login` for "
                      "a new one, or set EVALSERVER_TOKEN to a token from your profile page.")
RETRIED = (429, 503)
# a longer wait than this is not worth holding a terminal for: the error is shown instead
MAX_RETRY_WAIT = 300.0
# bytes per read of an upload: urllib3's 16 KiB default halves the rate of a large file
BLOCK = 1 << 20

Progress = Callable[[int, int], None]  # (bytes sent, bytes in all)
Notice = Callable[[str], None]  # a line for the user while retrying
FileSource = Path | tuple[str, bytes]  # a file on disk, or (file name, content) from memory


class Api:
    def __init__(self, base_url: str, token: str | None, timeout: float = 60.0, *,
                 retries: int = 4, progress: Progress | None = None,
                 notice: Notice | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        parts = urlsplit(base_url.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageError(f"bad server URL {base_url!r}: use http://host[:port] or https://")
        self.base = base_url.rstrip("/")
        self.token, self.timeout, self.retries = token, timeout, retries
        self.progress, self.notice, self.sleep = progress, notice, sleep
        self.session = requests.Session()  # trust_env: proxies and CA bundle from the env
        if not urllib3.__version__.startswith("1."):  # 1.x's pool keys have no blocksize
            for prefix in ("http://", "https://"):
                self.session.mount(prefix, LargeBlocks())

    def _headers(self, auth: bool) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
        if auth and self.token:
            headers["Authorization"] = f"Token {self.token}"
        return headers

    def request(self, method: str, path: str, *, query: dict[str, str] | None = None,
                form: dict[str, str] | None = None, auth: bool = True) -> Any:
        return self._send(method, path, lambda: {"params": query, "json": form}, auth=auth)

    def upload(self, path: str, fields: dict[str, str], files: dict[str, FileSource]) -> Any:
        """POST multipart/form-data, streaming each file from disk in blocks."""
        def body() -> dict[str, Any]:
            data = Multipart(fields, files, self.progress)
            return {"data": data, "headers": {"Content-Type": data.content_type}}
        return self._send("POST", path, body)

    def _send(self, method: str, path: str, body: Callable[[], dict[str, Any]], *,
              auth: bool = True) -> Any:
        url = self.base + path
        attempt = 0
        while True:
            attempt += 1
            kwargs = body()  # a fresh body per attempt: an upload is read again from the start
            headers = {**self._headers(auth), **kwargs.pop("headers", {})}
            try:
                response = self.session.request(method, url, headers=headers,
                                                timeout=self.timeout, **kwargs)
            except requests.exceptions.ProxyError as exc:
                raise NetworkError(f"cannot reach {self.base} through the proxy: "
                                   f"{_reason(exc)}") from exc
            except requests.RequestException as exc:
                raise NetworkError(f"cannot reach {self.base}: {_reason(exc)}") from exc
            wait = retry_wait(response, attempt)
            if wait is None or attempt > self.retries:
                return answer(response)
            response.close()
            if self.notice:
                self.notice(f"server busy (HTTP {response.status_code}): trying again in "
                            f"{wait:g} s ({attempt}/{self.retries})")
            self.sleep(wait)


class LargeBlocks(HTTPAdapter):
    """Sends a body in reads of BLOCK bytes, directly and through a proxy."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs, blocksize=BLOCK)

    def proxy_manager_for(self, proxy: str, **kwargs: Any) -> Any:
        if proxy.lower().startswith("socks"):
            return super().proxy_manager_for(proxy, **kwargs)
        return super().proxy_manager_for(proxy, **kwargs, blocksize=BLOCK)


def retry_wait(response: requests.Response, attempt: int) -> float | None:
    """Seconds to wait before trying again, or None when the answer is final."""
    if response.status_code not in RETRIED:
        return None
    header = response.headers.get("Retry-After")
    if header is None:
        # a 503 without it (a proxy's) backs off; a 429 without it is the quota: final
        return None if response.status_code == 429 else float(min(2 ** (attempt - 1), 30))
    try:
        wait = float(header)
    except ValueError:
        when = email.utils.parsedate_to_datetime(header)  # an HTTP date
        wait = when.timestamp() - time.time() if when else MAX_RETRY_WAIT + 1
    return None if wait > MAX_RETRY_WAIT else max(wait, 0.0)


def _reason(exc: BaseException) -> str:
    """The operating system's words (`[Errno 111] Connection refused`), found under the layers
    of requests and urllib3 that wrap them; else the outermost message."""
    stack, seen = [exc], set()
    while stack:
        inner = stack.pop()
        if id(inner) in seen:
            continue
        seen.add(id(inner))
        if isinstance(inner, OSError) and type(inner).__module__ in ("builtins", "socket",
                                                                     "ssl"):
            return str(inner) or type(inner).__name__
        stack += [e for e in (*inner.args, getattr(inner, "reason", None), inner.__cause__,
                              inner.__context__) if isinstance(e, BaseException)]
    return str(exc)


def answer(response: requests.Response) -> Any:
    raw = response.content
    try:
        data = json.loads(raw) if raw else None
    except ValueError:
        data = None
    status = response.status_code
    if 200 <= status < 300:
        if data is None and status != 204:
            raise NetworkError(f"the server's answer (HTTP {status}) is not JSON: is the URL "
                               "the evalserver's?", status=status)
        return data
    error = data.get("error") if isinstance(data, dict) else None
    kind: type[ClientError] = AuthenticationError if status == 401 else RefusedError
    if isinstance(error, dict):
        code, message = str(error.get("code", "error")), str(error.get("message", ""))
        field = error.get("field")
        where = f" (field {field})" if field and not message.startswith(f"{field}:") else ""
        if code == "authentication_failed":  # the server's words say what, not what to do
            where += f" {TOKEN_REFUSED_HINT}"
        raise kind(f"{code}: {message}{where}", status=status, body=data, code=code)
    if data is None and status != 401:  # a proxy's or another server's page, not ours
        raise NetworkError(f"HTTP {status} {response.reason} (not the evalserver's answer)",
                           status=status)
    raise kind(f"HTTP {status} {response.reason}", status=status, body=data)


class Multipart:
    """A multipart/form-data body read in blocks, with its length known up front (so that it
    is sent with Content-Length, not chunked) and the bytes sent reported to `progress`."""

    def __init__(self, fields: dict[str, str], files: dict[str, FileSource],
                 progress: Progress | None) -> None:
        boundary = f"evalserver-{uuid.uuid4().hex}"
        self.content_type = f"multipart/form-data; boundary={boundary}"
        self.pieces: list[bytes | Path] = []
        for name, value in fields.items():
            self.pieces.append(_part_head(boundary, name) + value.encode() + b"\r\n")
        for name, source in files.items():
            filename = source.name if isinstance(source, Path) else source[0]
            ctype = mimetypes.guess_type(filename)[0] or "application/octet-stream"
            self.pieces += [_part_head(boundary, name, filename, ctype),
                            source if isinstance(source, Path) else source[1], b"\r\n"]
        self.pieces.append(f"--{boundary}--\r\n".encode())
        self.total = sum(p.stat().st_size if isinstance(p, Path) else len(p)
                         for p in self.pieces)
        self.sent, self.progress = 0, progress
        self._index, self._offset = 0, 0
        self._handle: IO[bytes] | None = None

    def __len__(self) -> int:
        return self.total

    def read(self, size: int = -1) -> bytes:
        """Up to `size` bytes of the current piece (fewer is fine: the caller reads again)."""
        size = size if size > 0 else 1 << 20
        while self._index < len(self.pieces):
            piece = self.pieces[self._index]
            if isinstance(piece, bytes):
                block = piece[self._offset:self._offset + size]
                self._offset += len(block)
            else:
                self._handle = self._handle or piece.open("rb")
                block = self._handle.read(size)
            if block:
                self.sent += len(block)
                if self.progress:
                    self.progress(self.sent, self.total)
                return block
            if self._handle:
                self._handle.close()
            self._index, self._offset, self._handle = self._index + 1, 0, None
        return b""


def _quoted(text: str) -> str:
    """A header parameter value: no quotes or line breaks (UTF-8 is sent as is)."""
    return text.replace("\\", "%5C").replace('"', "%22").replace("\r", "").replace("\n", "")


def _part_head(boundary: str, name: str, filename: str | None = None,
               ctype: str | None = None) -> bytes:
    head = f'--{boundary}\r\nContent-Disposition: form-data; name="{_quoted(name)}"'
    if filename is not None:
        head += f'; filename="{_quoted(filename)}"\r\nContent-Type: {ctype}'
    return (head + "\r\n\r\n").encode()
