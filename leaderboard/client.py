"""Command-line client of the evalserver API; the Python standard library only.

    python -m leaderboard.client token --username alice          # prints an API token
    export EVALSERVER_TOKEN=...  EVALSERVER_URL=https://evalserver.example.org
    python -m leaderboard.client submit --benchmark cifar10 --model resnet50 \\
        cifar10-test=preds.npy cifar10.1-v6=preds_v6.npy           # waits, prints the scores
    python -m leaderboard.client status 42
    python -m leaderboard.client leaderboard cifar10 --sort corrected

This file can also be copied alone and run as `python client.py ...`. Files are streamed from
disk, never read whole into memory. Exit status 1 on any failure, with the server's message.
"""

from __future__ import annotations

import argparse
import getpass
import http.client
import json
import mimetypes
import os
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import quote, urlencode, urlsplit

DEFAULT_URL = "http://127.0.0.1:8000"
CHUNK = 1 << 20
USER_AGENT = "evalserver-client/1"


class ClientError(Exception):
    """A failure to report in one line and exit 1."""


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
                              "is EVALSERVER_URL the evalserver?")
        return data
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        field, message = error.get("field"), str(error.get("message", ""))
        where = f" (field {field})" if field and not message.startswith(f"{field}:") else ""
        raise ClientError(f"{error.get('code', 'error')}: {message}{where}")
    raise ClientError(f"HTTP {response.status} {response.reason}")


# ---------------------------------------------------------------- printing


def percent(value: Any) -> str:
    return "-" if value is None else f"{100 * value:.2f}%"


def table(header: list[str], rows: list[list[str]], left: int = 1) -> str:
    """Columns padded to width: the first `left` ones aligned left, the others right."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(str(c).ljust(w) if i < left else str(c).rjust(w)
                       for i, (c, w) in enumerate(zip(r, widths, strict=True)))
             for r in [header, *rows]]
    return "\n".join(line.rstrip() for line in lines)


def scores_table(scores: dict[str, Any]) -> str:
    rows = []
    for slug, s in scores.items():
        ci = f"[{percent(s.get('ci_low'))}, {percent(s.get('ci_high'))}]"
        rows.append([slug, percent(s.get("accuracy")), f"{s.get('correct')}/{s.get('total')}",
                     ci if s.get("ci_low") is not None else "-"])
    return table(["label set", "accuracy", "correct/total", "95% CI"], rows)


def leaderboard_table(board: dict[str, Any]) -> str:
    slugs = [c["slug"] for c in board["columns"]]
    rows = []
    for row in board["rows"]:
        cells = []
        for slug in slugs:
            shift = row["rank_shift"].get(slug, 0)
            arrow = f" ({'+' if shift > 0 else ''}{shift})" if shift else ""
            cells.append(percent(row["scores"].get(slug, {}).get("accuracy")) + arrow)
        rank = row["ranks"].get(board["sort"])
        rows.append([str(rank or "-"), row["model_name"], str(row["submission_id"]), *cells])
    return table(["rank", "model", "id", *slugs], rows, left=2)


def describe(sub: dict[str, Any]) -> str:
    return (f"submission {sub['id']}: {sub['model_name']} on {sub['benchmark']} - "
            f"{sub['status']}")


# ---------------------------------------------------------------- commands


def _need_token(api: Api) -> None:
    if not api.token:
        raise ClientError("no API token: set EVALSERVER_TOKEN or pass --token (get one with "
                          "`python -m leaderboard.client token --username NAME`)")


def wait_for(api: Api, submission_id: int, timeout: float) -> dict[str, Any]:
    deadline, delay = time.monotonic() + timeout, 0.5
    while True:
        sub: dict[str, Any] = api.request("GET", f"/api/submissions/{submission_id}/")
        if sub["status"] in ("scored", "failed"):
            return sub
        if time.monotonic() + delay > deadline:
            raise ClientError(f"still {sub['status']} after {timeout:g} s; check later with "
                              f"`python -m leaderboard.client status {submission_id}`")
        time.sleep(delay)
        delay = min(delay * 1.5, 10.0)


def report(sub: dict[str, Any]) -> int:
    print(describe(sub))
    if sub["status"] == "failed":
        raise ClientError(f"scoring failed: {sub.get('failure_code') or 'failed'}: "
                          f"{sub.get('failure_reason') or 'no reason given'}")
    if sub["status"] == "scored":
        print(scores_table(sub["scores"]))
    return 0


def cmd_submit(api: Api, args: argparse.Namespace) -> int:
    _need_token(api)
    files: dict[str, Path] = {}
    for item in args.files:
        slug, sep, name = item.partition("=")
        if not sep or not slug or not name:
            raise ClientError(f"{item!r}: give files as IMAGE_SET=PATH, e.g. cifar10-test=p.npy")
        path = Path(name).expanduser()
        if not path.is_file() or not os.access(path, os.R_OK):
            raise ClientError(f"{name}: no such file (or not readable)")
        files[slug] = path
    fields = {"benchmark": args.benchmark, "model_name": args.model,
              "description": args.description, "public": "false" if args.private else "true",
              "paper_url": args.paper_url, "code_url": args.code_url}
    created = api.upload("/api/submissions/", fields, files)
    print(f"submission {created['id']} {created['status']}: {created['url']}")
    if args.no_wait:
        return 0
    return report(wait_for(api, int(created["id"]), args.timeout))


def cmd_status(api: Api, args: argparse.Namespace) -> int:
    return report(api.request("GET", f"/api/submissions/{args.id}/"))


def cmd_leaderboard(api: Api, args: argparse.Namespace) -> int:
    query = {"sort": args.sort, **({"version": args.version} if args.version else {})}
    board = api.request("GET", f"/api/benchmarks/{quote(args.benchmark)}/leaderboard/",
                        query=query)
    print(f"{board['benchmark']} leaderboard, sorted by {board['sort']}; "
          "(+n) = places gained against original")
    print(leaderboard_table(board) if board["rows"] else "(no public scored submissions yet)")
    return 0


def cmd_token(api: Api, args: argparse.Namespace) -> int:
    password = os.environ.get("EVALSERVER_PASSWORD") or getpass.getpass(
        f"password for {args.username}: ")
    answer = api.request("POST", "/api/auth/token/", auth=False,
                         form={"username": args.username, "password": password})
    print(answer["token"])
    return 0


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m leaderboard.client",
                                  description="Submit predictions to an evalserver and read "
                                              "scores and leaderboards.")
    top.add_argument("--url", default=os.environ.get("EVALSERVER_URL", DEFAULT_URL),
                     help="server (env EVALSERVER_URL; default %(default)s)")
    top.add_argument("--token", default=os.environ.get("EVALSERVER_TOKEN"),
                     help="API token (env EVALSERVER_TOKEN)")
    commands = top.add_subparsers(dest="command", required=True)
    submit = commands.add_parser("submit", help="upload predictions, wait, print the scores")
    submit.add_argument("--benchmark", required=True, help="e.g. cifar10")
    submit.add_argument("--model", required=True, help="model name shown on the leaderboard")
    submit.add_argument("--description", default="")
    submit.add_argument("--paper-url", default="")
    submit.add_argument("--code-url", default="")
    submit.add_argument("--private", action="store_true", help="keep off the leaderboard")
    submit.add_argument("--no-wait", action="store_true", help="do not wait for the scores")
    submit.add_argument("--timeout", type=float, default=600.0,
                        help="seconds to wait for scoring (default %(default)s)")
    submit.add_argument("files", nargs="+", metavar="IMAGE_SET=FILE",
                        help="predictions per image set, e.g. cifar10-test=preds.npy; or "
                             "a model instead: checkpoint=model.onnx")
    submit.set_defaults(run=cmd_submit)
    status = commands.add_parser("status", help="a submission's status and scores")
    status.add_argument("id", type=int)
    status.set_defaults(run=cmd_status)
    board = commands.add_parser("leaderboard", help="a benchmark's public leaderboard")
    board.add_argument("benchmark")
    board.add_argument("--sort", default="original", help="label set to rank by")
    board.add_argument("--version", default="", help="label-set version hash to show")
    board.set_defaults(run=cmd_leaderboard)
    token = commands.add_parser("token", help="print an API token (asks for the password, "
                                              "or reads EVALSERVER_PASSWORD)")
    token.add_argument("--username", required=True)
    token.set_defaults(run=cmd_token)
    return top


def fail(message: str) -> NoReturn:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(1)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        api = Api(args.url, args.token)
        return int(args.run(api, args))
    except ClientError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        fail("interrupted")


if __name__ == "__main__":
    sys.exit(main())
