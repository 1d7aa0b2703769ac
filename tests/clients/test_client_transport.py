"""The client's HTTP underneath, against small loopback servers in the test's own threads (no
Django: the answers are scripted): 429/503 tried again after Retry-After, an upload sent
again whole, a quota's 429 final; HTTP_PROXY/HTTPS_PROXY/NO_PROXY taken from the environment.
Counts of requests, never timings, are asserted."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from contextlib import ExitStack
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.clients.test_cli import run_client
from tests.loopback_http import serving

Answer = tuple[int, dict[str, str], Any]
QUEUED = {"id": 7, "model_name": "m", "benchmark": "cifar10", "status": "queued"}


def _error(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


class Recorder(ThreadingHTTPServer):
    """Answers each request with the next scripted answer (the last one repeats) and records
    (method, path as sent, body). As a proxy (`forward=True`) it relays plain HTTP to the
    absolute URI in the request line, and refuses CONNECT (the tunnel HTTPS would need)."""

    def __init__(self, answers: list[Answer], forward: bool = False) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.answers, self.forward = answers, forward
        self.requests: list[tuple[str, str, bytes]] = []
        self.url = f"http://127.0.0.1:{self.server_address[1]}"


class Handler(BaseHTTPRequestHandler):
    server: Recorder

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _any(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.requests.append((self.command, self.path, body))
        if self.server.forward:
            self._relay(body)
            return
        status, headers, data = (self.server.answers.pop(0) if len(self.server.answers) > 1
                                 else self.server.answers[0])
        raw = json.dumps(data).encode()
        self.send_response(status)
        for key, value in {**headers, "Content-Type": "application/json",
                           "Content-Length": str(len(raw))}.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(raw)

    def _relay(self, body: bytes) -> None:
        target = urlsplit(self.path)
        if self.command == "CONNECT" or not target.hostname:
            self.send_error(403, "no tunnels here")
            return
        upstream = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
        headers = {k: v for k, v in self.headers.items() if k.lower() != "proxy-connection"}
        upstream.request(self.command, target.path + (f"?{target.query}" if target.query
                                                      else ""), body=body, headers=headers)
        answer = upstream.getresponse()
        raw = answer.read()
        self.send_response(answer.status)
        for key, value in answer.getheaders():
            if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)
        upstream.close()

    do_GET = do_POST = do_DELETE = do_CONNECT = _any


@pytest.fixture
def scripted() -> Iterator[ExitStack]:
    """Where `_start` enters the servers it starts: shut down after the test."""
    with ExitStack() as servers:
        yield servers


def _start(servers: ExitStack, answers: list[Answer], forward: bool = False) -> Recorder:
    return servers.enter_context(serving(Recorder(answers, forward)))


def test_it_tries_again_after_retry_after_on_503_and_429(scripted: ExitStack) -> None:
    server = _start(scripted, [
        (503, {"Retry-After": "1"}, _error("database_unavailable", "the database is down")),
        (429, {"Retry-After": "1"}, _error("throttled", "Request was throttled.")),
        (200, {}, QUEUED)])

    done = run_client("status", "7", "--json", url=server.url)

    assert (done.returncode, json.loads(done.stdout)) == (
        0, {**QUEUED, "page": f"{server.url}/submissions/7/"})
    assert [r[:2] for r in server.requests] == [("GET", "/api/submissions/7/")] * 3
    assert done.stderr == ("server busy (HTTP 503): trying again in 1 s (1/4)\n"
                           "server busy (HTTP 429): trying again in 1 s (2/4)\n")


def test_it_sends_an_upload_again_whole_after_a_503_with_its_progress(scripted: ExitStack,
                                                    tmp_path: Path) -> None:
    server = _start(scripted, [
        (503, {"Retry-After": "0"}, _error("storage_unavailable", "the storage is down")),
        (201, {}, {"id": 7, "status": "queued", "url": "ignored"})])
    preds = tmp_path / "p.npy"
    preds.write_bytes(b"\x93NUMPY" + bytes(range(256)) * 40)

    done = run_client("submit", "--benchmark", "cifar10", "--model", "m", "--no-wait",
                      "--progress", f"cifar10-test={preds}", url=server.url, token="t")

    assert (done.returncode, done.stdout) == (
        0, f"submission 7 queued: {server.url}/submissions/7/\n")
    (first, second) = server.requests
    assert first[:2] == second[:2] == ("POST", "/api/submissions/")
    # a boundary of its own each time; the same file in each, whole
    assert len(first[2]) == len(second[2])
    assert preds.read_bytes() in first[2] and preds.read_bytes() in second[2]
    size = f"{len(second[2]) / 1000:.1f} KB"
    # (text mode reads each "\r" of the line rewritten in place as a line break)
    lines = [line for line in done.stderr.splitlines() if line]
    notice = lines.index("server busy (HTTP 503): trying again in 0 s (1/4)")
    assert lines[notice - 1] == lines[-1] == f"upload: 100% ({size} of {size})"
    assert [line for line in lines if not line.startswith("upload: ")] == [lines[notice]]


def test_it_does_not_retry_a_429_without_retry_after(scripted: ExitStack) -> None:
    """The daily quota (docs/api.md §6.1): waiting seconds would not lift it."""
    server = _start(scripted, [(429, {}, _error(
        "quota_exceeded", "daily quota reached: 5 submissions per 24 hours on cifar10"))])

    done = run_client("status", "7", url=server.url)

    assert (done.returncode, len(server.requests)) == (5, 1)
    assert done.stderr == ("error: quota_exceeded: daily quota reached: 5 submissions per 24 "
                           "hours on cifar10\n")


def test_it_gives_up_after_four_retries(scripted: ExitStack) -> None:
    server = _start(scripted, [(503, {"Retry-After": "0"}, _error(
        "database_unavailable", "the database is down"))])

    done = run_client("status", "7", url=server.url)

    assert (done.returncode, len(server.requests)) == (5, 5)
    assert done.stderr.splitlines()[-1] == "error: database_unavailable: the database is down"


def test_it_goes_through_http_proxy_unless_no_proxy_says_otherwise(
    scripted: ExitStack,
) -> None:
    server = _start(scripted, [(200, {}, QUEUED)])
    proxy = _start(scripted, [], forward=True)

    proxied = run_client("status", "7", url=server.url, HTTP_PROXY=proxy.url)
    through = list(proxy.requests)
    direct = run_client("status", "7", url=server.url, HTTP_PROXY=proxy.url,
                        NO_PROXY="127.0.0.1")

    assert (proxied.returncode, proxied.stdout) == (
        0, "submission 7: m on cifar10 - queued\n")
    assert [r[:2] for r in through] == [("GET", f"{server.url}/api/submissions/7/")]
    assert direct.returncode == 0 and proxy.requests == through  # not one more
    assert [r[:2] for r in server.requests] == [("GET", "/api/submissions/7/")] * 2


def test_it_tunnels_https_through_https_proxy(scripted: ExitStack) -> None:
    proxy = _start(scripted, [], forward=True)

    done = run_client("status", "7", url="https://evalserver.invalid", HTTPS_PROXY=proxy.url)

    assert [r[:2] for r in proxy.requests] == [("CONNECT", "evalserver.invalid:443")]
    assert done.returncode == 4
    assert done.stderr.startswith("error: cannot reach https://evalserver.invalid through the "
                                  "proxy: ")
