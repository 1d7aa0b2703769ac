"""The reverse proxy of docker/compose.yaml (docker/nginx/), run with Debian's nginx in front of
a stand-in web on 127.0.0.1: both of its sites pass `nginx -t`, a slow upload reaches the web
only once it is whole, the web is told the proxy's scheme and client address (never the
client's own claims), and a body announced too large is refused unread, in the API's error
shape under /api/. Without nginx these skip (apt-get install nginx-light), but not under
CI=true, where scripts/test.sh installs it."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.deploy.slow_client import SlowUpload
from tests.helpers import PROJECT_ROOT, free_port, process_group_stop, skip_unless_ci
from tests.loopback_http import serving

START = PROJECT_ROOT / "docker" / "nginx" / "start.sh"
MAX_UPLOAD = 1_000_000  # the web's EVALSERVER_MAX_UPLOAD_BYTES here
GENEROUS = 60.0


@dataclass
class Seen:
    """What the stand-in web received: one (method, path, headers, body length) a request."""
    requests: list[tuple[str, str, dict[str, str], int]] = field(default_factory=list)


@pytest.fixture
def web() -> Iterator[tuple[int, Seen]]:
    seen = Seen()

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            seen.requests.append((self.command, self.path, dict(self.headers), len(body)))
            payload = b'{"ok": true}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = _answer

        def log_message(self, *args: object) -> None:
            pass

    with serving(ThreadingHTTPServer(("127.0.0.1", 0), Handler)) as server:
        yield server.server_address[1], seen


@dataclass
class Proxy:
    http_port: int
    https_port: int
    site: str


def _nginx() -> str:
    found = shutil.which("nginx") or ("/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK)
                                      else None)
    if found is None:
        skip_unless_ci("the proxy tests need nginx (apt-get install nginx-light)")
    return str(found)


def _render(work: Path, upstream_port: int, *, tls: bool) -> tuple[Path, Proxy]:
    """The site as start.sh writes it, and a main config like the image's around it."""
    tls_dir = work / "tls"
    tls_dir.mkdir()
    if tls:
        if shutil.which("openssl") is None:
            skip_unless_ci("the https proxy test needs openssl (apt-get install openssl)")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                        "-subj", "/CN=localhost", "-keyout", str(tls_dir / "tls.key"),
                        "-out", str(tls_dir / "tls.crt")], check=True, capture_output=True)
    proxy = Proxy(free_port(), free_port(), "https" if tls else "http")
    env = {"PATH": os.environ["PATH"], "NGINX_CONF_DIR": str(work / "conf.d"),
           "TLS_DIR": str(tls_dir), "EVALSERVER_UPSTREAM": f"127.0.0.1:{upstream_port}",
           "NGINX_HTTP_PORT": str(proxy.http_port), "NGINX_HTTPS_PORT": str(proxy.https_port),
           "EVALSERVER_MAX_UPLOAD_BYTES": str(MAX_UPLOAD)}
    (work / "conf.d").mkdir()
    rendered = subprocess.run(["sh", str(START), "--render"], env=env, capture_output=True,
                              text=True, timeout=60)
    assert rendered.returncode == 0, rendered.stderr
    assert f"{proxy.site} site written" in rendered.stderr
    temp = work / "temp"
    temp.mkdir()
    main = work / "nginx.conf"
    main.write_text(
        ("user root;\n" if os.geteuid() == 0 else "")
        + f"pid {work / 'nginx.pid'};\nworker_processes 1;\nevents {{ worker_connections 64; }}\n"
        f"http {{\n  access_log off;\n  client_body_temp_path {temp / 'body'};\n"
        f"  proxy_temp_path {temp / 'proxy'};\n  fastcgi_temp_path {temp / 'fastcgi'};\n"
        f"  uwsgi_temp_path {temp / 'uwsgi'};\n  scgi_temp_path {temp / 'scgi'};\n"
        f"  include {work / 'conf.d'}/*.conf;\n}}\n")
    return main, proxy


@pytest.fixture
def start_proxy(tmp_path: Path, web: tuple[int, Seen]) -> Iterator[Callable[[bool], Proxy]]:
    nginx = _nginx()
    running: list[subprocess.Popen[bytes]] = []

    def start(tls: bool) -> Proxy:
        main, proxy = _render(tmp_path, web[0], tls=tls)
        command = [nginx, "-e", "stderr", "-p", str(tmp_path), "-c", str(main)]
        checked = subprocess.run([*command, "-t"], capture_output=True, text=True, timeout=60)
        assert checked.returncode == 0, checked.stderr
        running.append(subprocess.Popen([*command, "-g", "daemon off;"], stderr=subprocess.PIPE,
                                        start_new_session=True))
        deadline = time.monotonic() + GENEROUS
        while True:
            try:
                socket.create_connection(("127.0.0.1", proxy.http_port), timeout=1).close()
                return proxy
            except OSError:
                assert running[-1].poll() is None, running[-1].communicate()[1].decode()
                assert time.monotonic() < deadline, "nginx did not start listening"
                time.sleep(0.1)

    yield start
    for process in running:
        process_group_stop(process, timeout=30, first=signal.SIGQUIT)


def _request(proxy: Proxy, method: str, path: str, *, tls: bool = False,
             headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
    if tls:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        connection: http.client.HTTPConnection = http.client.HTTPSConnection(
            "127.0.0.1", proxy.https_port, timeout=GENEROUS, context=context)
    else:
        connection = http.client.HTTPConnection("127.0.0.1", proxy.http_port, timeout=GENEROUS)
    try:
        connection.request(method, path, headers=headers or {})
        answer = connection.getresponse()
        return answer.status, dict(answer.getheaders()), answer.read().decode()
    finally:
        connection.close()


def test_it_hands_the_web_a_slow_upload_only_once_it_is_whole(
        start_proxy: Callable[[bool], Proxy], web: tuple[int, Seen]) -> None:
    proxy = start_proxy(False)
    upload = SlowUpload("127.0.0.1", proxy.http_port, "/api/submissions/", field="mnist-test",
                        file_bytes=4000, burst=0, chunk=400, interval=0.1).start()
    try:
        while upload.sent < 2000:  # half of it sent, over several pauses
            assert upload.send_error is None
            time.sleep(0.05)
        assert web[1].requests == []  # the web has seen nothing of it yet

        status, body = upload.response(timeout=GENEROUS)  # sent whole, then answered
    finally:
        upload.close()

    assert (status, body) == (200, '{"ok": true}')
    assert [(m, p, n) for m, p, _, n in web[1].requests] == [
        ("POST", "/api/submissions/", upload.content_length)]


def test_it_tells_the_web_its_own_scheme_and_client_address_over_https(
        start_proxy: Callable[[bool], Proxy], web: tuple[int, Seen]) -> None:
    proxy = start_proxy(True)
    claims = {"Host": "evals.example.org", "X-Forwarded-Proto": "http",
              "X-Real-IP": "203.0.113.9", "X-Forwarded-For": "203.0.113.9"}

    assert _request(proxy, "GET", "/benchmarks/", tls=True, headers=claims)[0] == 200
    status, headers, _ = _request(proxy, "GET", "/benchmarks/?page=2",
                                  headers={"Host": "evals.example.org"})
    assert (status, headers["Location"]) == (301, "https://evals.example.org/benchmarks/?page=2")
    assert _request(proxy, "GET", "/healthz")[0] == 200  # the web's probe, over http

    sent = [(p, h["Host"], h["X-Forwarded-Proto"], h["X-Real-IP"], h["X-Forwarded-For"])
            for _, p, h, _ in web[1].requests]
    assert sent == [("/benchmarks/", "evals.example.org", "https", "127.0.0.1", "127.0.0.1"),
                    ("/healthz", "127.0.0.1", "http", "127.0.0.1", "127.0.0.1")]


def test_it_passes_on_what_a_local_tls_proxy_says_over_plain_http(
        start_proxy: Callable[[bool], Proxy], web: tuple[int, Seen]) -> None:
    proxy = start_proxy(False)

    _request(proxy, "GET", "/", headers={"X-Forwarded-Proto": "https",
                                         "X-Real-IP": "203.0.113.9"})
    _request(proxy, "GET", "/")

    assert [(h["X-Forwarded-Proto"], h["X-Real-IP"]) for _, _, h, _ in web[1].requests] == [
        ("https", "203.0.113.9"), ("http", "127.0.0.1")]


@pytest.mark.parametrize("tls", [False, True])
def test_it_refuses_a_body_announced_too_large_unread(
        start_proxy: Callable[[bool], Proxy], web: tuple[int, Seen], tls: bool) -> None:
    proxy = start_proxy(tls)
    too_large = {"Content-Length": str(MAX_UPLOAD + 1_048_576 + 1),
                 "Content-Type": "multipart/form-data; boundary=x"}

    api = _request(proxy, "POST", "/api/submissions/", tls=tls, headers=too_large)
    page = _request(proxy, "POST", "/submit/", tls=tls, headers=too_large)

    assert (api[0], api[1]["Content-Type"], json.loads(api[2])) == (
        413, "application/json", {"error": {
            "code": "file_too_large",
            "message": f"the request body is larger than the upload limit of {MAX_UPLOAD} bytes"}})
    assert (page[0], page[1]["Content-Type"], page[2]) == (
        413, "text/html", "<h1>Upload too large</h1><p>The request body is larger than the "
        f"upload limit of {MAX_UPLOAD} bytes; nothing was stored.</p>")
    assert web[1].requests == []
