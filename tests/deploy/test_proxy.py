"""The reverse proxy of docker/compose.yaml (docker/nginx/), run with Debian's nginx in front of
a stand-in web on 127.0.0.1: both of its sites pass `nginx -t`, a slow upload reaches the web
only once it is whole, the web is told the proxy's scheme and client address (never the
client's own claims; an outer proxy's only when PROXY_TRUSTED_OUTER_PROXIES names it), and a
body announced too large is refused unread, in the API's error shape under /api/. Clients
connect from other loopback addresses (127.0.0.2, 127.0.0.3) to be told apart. Without nginx
these skip (apt-get install nginx-light), but not under CI=true, where scripts/test.sh
installs it."""

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
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Protocol

import pytest

from tests.deploy.local_gunicorn import gunicorn, production_env
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


def _render(work: Path, upstream_port: int, *, tls: bool,
            env: dict[str, str]) -> tuple[Path, Proxy]:
    """The site as start.sh writes it (with `env` on top of the test's), and a main config like
    the image's around it."""
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
           "EVALSERVER_MAX_UPLOAD_BYTES": str(MAX_UPLOAD), **env}
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


class StartProxy(Protocol):
    def __call__(self, tls: bool, *, upstream: int | None = None,
                 env: dict[str, str] | None = None) -> Proxy: ...


@pytest.fixture
def start_proxy(tmp_path: Path, web: tuple[int, Seen]) -> Iterator[StartProxy]:
    """nginx with the site start.sh writes, in front of the stand-in web (or `upstream`)."""
    nginx = _nginx()
    running: list[subprocess.Popen[bytes]] = []

    def start(tls: bool, *, upstream: int | None = None,
              env: dict[str, str] | None = None) -> Proxy:
        main, proxy = _render(tmp_path, web[0] if upstream is None else upstream, tls=tls,
                              env=env or {})
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
             headers: dict[str, str] | None = None,
             source: str = "127.0.0.1") -> tuple[int, dict[str, str], str]:
    """One request from the loopback address `source`."""
    if tls:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        connection: http.client.HTTPConnection = http.client.HTTPSConnection(
            "127.0.0.1", proxy.https_port, timeout=GENEROUS, context=context,
            source_address=(source, 0))
    else:
        connection = http.client.HTTPConnection("127.0.0.1", proxy.http_port, timeout=GENEROUS,
                                                source_address=(source, 0))
    try:
        connection.request(method, path, headers=headers or {})
        answer = connection.getresponse()
        return answer.status, dict(answer.getheaders()), answer.read().decode()
    finally:
        connection.close()


def test_it_hands_the_web_a_slow_upload_only_once_it_is_whole(
        start_proxy: StartProxy, web: tuple[int, Seen]) -> None:
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
        start_proxy: StartProxy, web: tuple[int, Seen]) -> None:
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


CLAIMS = {"X-Real-IP": "127.0.0.1", "X-Forwarded-For": "127.0.0.1",
          "X-Forwarded-Proto": "https"}


def _sent(seen: Seen) -> list[tuple[str, str, str]]:
    """What the web was told of each request: (X-Forwarded-For, X-Real-IP, X-Forwarded-Proto)."""
    return [(h["X-Forwarded-For"], h["X-Real-IP"], h["X-Forwarded-Proto"])
            for _, _, h, _ in seen.requests]


def test_it_tells_the_web_the_connections_own_address_and_scheme_over_plain_http(
        start_proxy: StartProxy, web: tuple[int, Seen]) -> None:
    proxy = start_proxy(False)

    _request(proxy, "GET", "/", headers=CLAIMS, source="127.0.0.2")  # claims to be loopback
    _request(proxy, "GET", "/", headers={"X-Forwarded-For": "garbage"}, source="127.0.0.2")
    _request(proxy, "GET", "/")

    assert _sent(web[1]) == [("127.0.0.2", "127.0.0.2", "http"),
                             ("127.0.0.2", "127.0.0.2", "http"),
                             ("127.0.0.1", "127.0.0.1", "http")]


def test_it_believes_only_the_outer_proxy_it_is_told_of(
        start_proxy: StartProxy, web: tuple[int, Seen]) -> None:
    # a TLS proxy of this host's at 127.0.0.3 (and a network beside it, never used)
    proxy = start_proxy(False, env={"PROXY_TRUSTED_OUTER_PROXIES": "127.0.0.3, 10.9.0.0/16"})
    told = {"X-Forwarded-For": "198.51.100.1, 203.0.113.9", "X-Forwarded-Proto": "https",
            "X-Real-IP": "192.0.2.1"}

    _request(proxy, "GET", "/", headers=told, source="127.0.0.3")  # the outer proxy
    _request(proxy, "GET", "/", headers={**told, "X-Forwarded-Proto": "http"},
             source="127.0.0.3")
    _request(proxy, "GET", "/", headers=told, source="127.0.0.2")  # anyone else
    # a scheme other than http or https is this connection's; an address with a port is the
    # address (nginx's realip reads it so)
    _request(proxy, "GET", "/", headers={"X-Forwarded-For": "1.2.3.4:5678",
                                         "X-Forwarded-Proto": "gopher"}, source="127.0.0.3")
    # what the outer proxy wrote last is no address, or it wrote none: the client is unknown,
    # never the outer proxy
    _request(proxy, "GET", "/", headers={"X-Forwarded-For": "203.0.113.9, garbage"},
             source="127.0.0.3")
    _request(proxy, "GET", "/", headers={"X-Forwarded-For": "[::1]:80:80"}, source="127.0.0.3")
    _request(proxy, "GET", "/", source="127.0.0.3")

    assert _sent(web[1]) == [("203.0.113.9", "203.0.113.9", "https"),
                             ("203.0.113.9", "203.0.113.9", "http"),
                             ("127.0.0.2", "127.0.0.2", "http"),
                             ("1.2.3.4", "1.2.3.4", "http"),
                             ("unknown", "unknown", "http"),
                             ("unknown", "unknown", "http"),
                             ("unknown", "unknown", "http")]


@pytest.mark.parametrize("value", ["10.0.0.0/8; allow all", "proxy.example.org", "cafe.bad",
                                   "10.0.0.1 10.0.0.2", "10.0.0.0/8/8"])
def test_it_refuses_outer_proxies_that_are_no_addresses(tmp_path: Path, value: str) -> None:
    env = {"PATH": os.environ["PATH"], "NGINX_CONF_DIR": str(tmp_path),
           "TLS_DIR": str(tmp_path / "none"), "PROXY_TRUSTED_OUTER_PROXIES": value}

    done = subprocess.run(["sh", str(START), "--render"], env=env, capture_output=True,
                          text=True, timeout=60)

    assert (done.returncode, done.stderr) == (2, (
        f"start.sh: PROXY_TRUSTED_OUTER_PROXIES={value} is not valid: expected comma-separated "
        "IP addresses or networks such as 172.18.0.1,10.0.0.0/8\n"))
    assert not (tmp_path / "default.conf").exists()


@pytest.mark.slow
def test_it_keeps_metrics_closed_to_a_client_claiming_loopback(
        start_proxy: StartProxy, tmp_path: Path) -> None:
    """The real web behind the proxy, trusting it (on 127.0.0.1) as compose's web trusts its
    proxy: a client's X-Real-IP or X-Forwarded-For naming loopback does not open /metrics
    (open to 127.0.0.1 and ::1 by default)."""
    port = free_port()
    env = production_env(tmp_path, EVALSERVER_TRUSTED_PROXIES="127.0.0.1",
                         EVALSERVER_UPLOAD_TEMP_DIR=str(tmp_path / "uploads"))
    with gunicorn(env, port, tmp_path / "gunicorn.log"):
        proxy = start_proxy(False, upstream=port)

        claimed = _request(proxy, "GET", "/metrics", headers=CLAIMS, source="127.0.0.2")
        local = _request(proxy, "GET", "/metrics")

    assert claimed[0] == 403, claimed[2][:300]
    assert json.loads(claimed[2]) == {"error": {
        "code": "permission_denied",
        "message": "the metrics are open to EVALSERVER_METRICS_ALLOWED_IPS and to the bearer "
                   "token EVALSERVER_METRICS_TOKEN only"}}
    assert local[0] == 200


@pytest.mark.parametrize("tls", [False, True])
def test_it_refuses_a_body_announced_too_large_unread(
        start_proxy: StartProxy, web: tuple[int, Seen], tls: bool) -> None:
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
