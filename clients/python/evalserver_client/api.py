"""The evalserver HTTP API over `http.client`: JSON requests and streamed multipart uploads.

Standard library only. Every failure (unreachable server, an error answer, a body that is not
JSON) is raised as `ClientError`, with the server's own message where it sent one.
"""

from __future__ import annotations

import http.client
import json
import mimetypes
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

CHUNK = 1 << 20
USER_AGENT = "evalserver-client/1"


class ClientError(Exception):
    """A failure to report in one line and exit 1. `status` is the HTTP status of the server's
    answer, None when none came (unreachable, the connection dropped); `body` its parsed JSON
    (None when it was not JSON), so that a caller can tell a refusal from a lost request."""

    def __init__(self, message: str, *, status: int | None = None, body: Any = None) -> None:
        super().__init__(message)
        self.status, self.body = status, body


class Api:
    def __init__(self, base_url: str, token: str | None, timeout: float = 60.0) -> None:
        parts = urlsplit(base_url.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ClientError(f"bad server URL {base_url!r}: use http://host[:port] or https://")
        self.scheme, self.netloc, self.prefix = parts.scheme, parts.netloc, parts.path
        self.token, self.timeout = token, timeout

    def _connection(self) -> http.client.HTTPConnection:
        if self.scheme == "https":
            return http.client.HTTPSConnection(self.netloc, timeout=self.timeout)
        return http.client.HTTPConnection(self.netloc, timeout=self.timeout)

    def _headers(self, auth: bool) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
        if auth and self.token:
            headers["Authorization"] = f"Token {self.token}"
        return headers

    def request(self, method: str, path: str, *, query: dict[str, str] | None = None,
                form: dict[str, str] | None = None, auth: bool = True) -> Any:
        url = self.prefix + path + (f"?{urlencode(query)}" if query else "")
        headers = self._headers(auth)
        body = None
        if form is not None:
            body = json.dumps(form).encode()
            headers["Content-Type"] = "application/json"
        conn = self._connection()
        try:
            conn.request(method, url, body=body, headers=headers)
            return _answer(conn.getresponse())
        except (OSError, http.client.HTTPException) as exc:
            raise ClientError(f"cannot reach {self.scheme}://{self.netloc}: {exc}") from exc
        finally:
            conn.close()

    def upload(self, path: str, fields: dict[str, str], files: dict[str, Path]) -> Any:
        """POST multipart/form-data, streaming each file from disk in chunks."""
        boundary = f"evalserver-{uuid.uuid4().hex}"
        pieces: list[bytes | Path] = []
        for name, value in fields.items():
            pieces.append(_part_head(boundary, name) + value.encode() + b"\r\n")
        for name, file in files.items():
            ctype = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
            pieces += [_part_head(boundary, name, file.name, ctype), file, b"\r\n"]
        pieces.append(f"--{boundary}--\r\n".encode())
        length = sum(p.stat().st_size if isinstance(p, Path) else len(p) for p in pieces)
        headers = {**self._headers(True), "Content-Length": str(length),
                   "Content-Type": f"multipart/form-data; boundary={boundary}"}
        conn = self._connection()
        try:
            conn.putrequest("POST", self.prefix + path, skip_accept_encoding=True)
            for key, value in headers.items():
                conn.putheader(key, value)
            conn.endheaders()
            try:
                for chunk in _chunks(pieces):
                    conn.send(chunk)
            except OSError as exc:
                # The server may refuse part-way (size cap) and close: read its answer anyway.
                try:
                    return _answer(conn.getresponse())
                except (OSError, http.client.HTTPException):
                    raise ClientError(f"upload to {self.netloc} broke off: {exc}") from exc
            return _answer(conn.getresponse())
        except (OSError, http.client.HTTPException) as exc:
            raise ClientError(f"cannot reach {self.scheme}://{self.netloc}: {exc}") from exc
        finally:
            conn.close()


def _quoted(text: str) -> str:
    """A header parameter value: no quotes or line breaks (UTF-8 is sent as is)."""
    return text.replace("\\", "%5C").replace('"', "%22").replace("\r", "").replace("\n", "")


def _part_head(boundary: str, name: str, filename: str | None = None,
               ctype: str | None = None) -> bytes:
    head = f'--{boundary}\r\nContent-Disposition: form-data; name="{_quoted(name)}"'
    if filename is not None:
        head += f'; filename="{_quoted(filename)}"\r\nContent-Type: {ctype}'
    return (head + "\r\n\r\n").encode()


def _chunks(pieces: list[bytes | Path]) -> Iterator[bytes]:
    for piece in pieces:
        if isinstance(piece, bytes):
            yield piece
            continue
        with piece.open("rb") as handle:
            while chunk := handle.read(CHUNK):
                yield chunk


def _answer(response: http.client.HTTPResponse) -> Any:
    raw = response.read()
    try:
        data = json.loads(raw) if raw else None
    except ValueError:
        data = None
    if 200 <= response.status < 300:
        if data is None and response.status != 204:
            raise ClientError(f"the server's answer (HTTP {response.status}) is not JSON: "
                              "is EVALSERVER_URL the evalserver?", status=response.status)
        return data
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        field, message = error.get("field"), str(error.get("message", ""))
        where = f" (field {field})" if field and not message.startswith(f"{field}:") else ""
        raise ClientError(f"{error.get('code', 'error')}: {message}{where}",
                          status=response.status, body=data)
    raise ClientError(f"HTTP {response.status} {response.reason}", status=response.status,
                      body=data)
