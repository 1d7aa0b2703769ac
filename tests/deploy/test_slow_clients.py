"""Slow and stalled uploads against real gunicorn, started as scripts/serve.sh and compose
start it (evalserver/gunicorn_conf.py), on 127.0.0.1 with real client sockets: the web keeps
answering while uploads trickle in, a stalled upload is answered 408 after the stall timeout,
a body announced too large 413 before it is read, and nothing of an aborted upload stays in
the temporary folder. The verdicts wait with generous bounds; none depends on how fast the
machine is."""

from __future__ import annotations

import http.client
import json
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.deploy.local_gunicorn import (
    GENEROUS,
    THROTTLES_OFF,
    gunicorn,
    http_get,
    production_env,
    wait_until,
)
from tests.deploy.slow_client import SlowUpload
from tests.helpers import PROJECT_ROOT, free_port

pytestmark = pytest.mark.slow

STALL_TIMEOUT = 5  # EVALSERVER_UPLOAD_STALL_TIMEOUT of this server (30 by default)
MAX_UPLOAD = 8 * 1024 * 1024  # EVALSERVER_MAX_UPLOAD_BYTES of this server
# over FILE_UPLOAD_MAX_MEMORY_SIZE (2.5 MB): Django writes it to a temporary file as it arrives
SLOW_FILE_BYTES = 3 * 1024 * 1024


@dataclass
class Server:
    port: int
    temp_dir: Path
    token: str
    session: str
    log: Path

    def slow_upload(self, path: str = "/api/submissions/", **headers: str) -> SlowUpload:
        headers = {"Authorization": f"Token {self.token}", "Accept": "application/json",
                   **headers}
        return SlowUpload("127.0.0.1", self.port, path, field="mnist-test",
                          file_bytes=SLOW_FILE_BYTES, headers=headers).start()

    def temp_files(self) -> list[str]:
        return sorted(p.name for p in self.temp_dir.iterdir())


SESSION_FOR_ALICE = """
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth import get_user_model
from django.contrib.sessions.backends.db import SessionStore
from allauth.account.models import EmailAddress
from rest_framework.authtoken.models import Token
user = get_user_model().objects.create_user("alice", password="a-long-password-1",
                                            email="alice@example.org")
EmailAddress.objects.create(user=user, email=user.email, primary=True, verified=True)
session = SessionStore()
session.update({SESSION_KEY: str(user.pk), HASH_SESSION_KEY: user.get_session_auth_hash(),
                BACKEND_SESSION_KEY: "django.contrib.auth.backends.ModelBackend"})
session.create()
print(Token.objects.create(user=user).key, session.session_key)
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, data_dir: Path,
           compile_cache_dir: Path) -> Iterator[Server]:
    work = tmp_path_factory.mktemp("slow-clients")
    temp_dir = work / "upload-temp"
    temp_dir.mkdir()
    port = free_port()
    env = production_env(
        work, EVALSERVER_DATA_DIR=str(data_dir), EVALSERVER_CACHE_DIR=str(compile_cache_dir),
        EVALSERVER_UPLOAD_TEMP_DIR=str(temp_dir),
        TMPDIR=str(temp_dir),  # where Django's temporary files go when it names no folder
        EVALSERVER_UPLOAD_STALL_TIMEOUT=str(STALL_TIMEOUT),
        EVALSERVER_MAX_UPLOAD_BYTES=str(MAX_UPLOAD), EVALSERVER_DAILY_QUOTA="0",
        **THROTTLES_OFF)

    def manage(*args: str) -> str:
        done = subprocess.run([sys.executable, "manage.py", *args], cwd=PROJECT_ROOT, env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    manage("migrate", "--noinput", "-v", "0")
    manage("load_benchmarks", "--benchmark", "mnist")
    token, session = manage("shell", "-v", "0", "-c", SESSION_FOR_ALICE).split()
    log = work / "gunicorn.log"
    try:
        with gunicorn(env, port, log):
            yield Server(port, temp_dir, token, session, log)
    finally:
        shutil.rmtree(work / "media", ignore_errors=True)


@pytest.fixture
def uploads(server: Server) -> Iterator[list[SlowUpload]]:
    """The slow uploads a test starts, closed after it; the temporary folder starts empty."""
    assert server.temp_files() == []
    started: list[SlowUpload] = []
    yield started
    for upload in started:
        upload.close()


def _stalled_answer(upload: SlowUpload) -> tuple[int, str]:
    upload.stall()
    return upload.response(timeout=GENEROUS)


STALLED = {"error": {"code": "request_timeout",
                     "message": f"nothing of the request body arrived for {STALL_TIMEOUT} s; "
                                "nothing was stored: send it again"}}


def test_it_answers_the_leaderboard_and_healthz_while_two_uploads_trickle(
        server: Server, uploads: list[SlowUpload]) -> None:
    uploads += [server.slow_upload(), server.slow_upload()]
    # both bodies are being read: each has its temporary file
    wait_until(lambda: len(server.temp_files()) == 2, "two uploads being received")

    assert http_get(server.port, "/healthz") == (200, '{"status": "ok"}')
    status, board = http_get(server.port, "/api/benchmarks/mnist/leaderboard/")
    assert status == 200 and json.loads(board)["benchmark"] == "mnist"
    assert http_get(server.port, "/benchmarks/mnist/")[0] == 200

    # the uploads are still trickling in, unanswered, on open connections
    assert [(u.answered(), u.send_error) for u in uploads] == [(False, None), (False, None)]
    assert all(0 < u.sent < SLOW_FILE_BYTES for u in uploads)
    assert [_stalled_answer(u)[0] for u in uploads] == [408, 408]


def test_it_answers_a_stalled_upload_408_in_the_error_shape(
        server: Server, uploads: list[SlowUpload]) -> None:
    uploads.append(server.slow_upload())
    wait_until(lambda: len(server.temp_files()) == 1, "the upload being received")
    uploads[0].stall()
    stalled_at = time.monotonic()

    status, body = uploads[0].response(timeout=GENEROUS)

    assert (status, json.loads(body)) == (408, STALLED)
    assert time.monotonic() - stalled_at >= STALL_TIMEOUT - 0.5  # not before the timeout


def test_it_shows_the_upload_page_a_readable_408(server: Server,
                                                  uploads: list[SlowUpload]) -> None:
    cookie = f"sessionid={server.session}"
    uploads += [server.slow_upload("/submit/", Cookie=cookie, Accept="text/html"),
                server.slow_upload("/submit/", Cookie=cookie)]  # submit.js asks for JSON
    wait_until(lambda: len(server.temp_files()) == 2, "the uploads being received")

    page, script = (_stalled_answer(u) for u in uploads)

    message = (f"nothing of the request body arrived for {STALL_TIMEOUT} s; nothing was "
               "stored: send it again")
    assert page == (408, f"<h1>Upload timed out</h1><p>{message}.</p>"
                         "<p>Go back to the form and send it again.</p>")
    assert (script[0], json.loads(script[1])) == (
        408, {"errors": [{"field": None, "message": message}]})


def test_it_refuses_an_upload_announced_too_large_with_413_unread(server: Server) -> None:
    declared = MAX_UPLOAD + 2 * 1024 * 1024
    headers = {"Authorization": f"Token {server.token}", "Content-Length": str(declared),
               "Content-Type": "multipart/form-data; boundary=x"}
    with socket.create_connection(("127.0.0.1", server.port), timeout=GENEROUS) as sock:
        head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        sock.sendall(f"POST /api/submissions/ HTTP/1.1\r\nHost: 127.0.0.1\r\n{head}\r\n"
                     .encode())  # and not a byte of the body
        answer = http.client.HTTPResponse(sock)
        answer.begin()
        body = json.loads(answer.read())

    assert (answer.status, body) == (413, {"error": {
        "code": "file_too_large",
        "message": f"the request body is larger than the upload limit of {MAX_UPLOAD} bytes"}})


def test_it_leaves_no_temporary_file_of_aborted_uploads(server: Server,
                                                        uploads: list[SlowUpload]) -> None:
    uploads += [server.slow_upload() for _ in range(3)]
    wait_until(lambda: len(server.temp_files()) == 3, "three uploads being received")
    vanished = uploads.pop()
    vanished.close()  # the client goes away mid-upload

    assert [_stalled_answer(u)[0] for u in uploads] == [408, 408]
    wait_until(lambda: server.temp_files() == [], "the temporary files removed")
    assert http_get(server.port, "/healthz")[0] == 200
    log = server.log.read_text()
    assert "Internal Server Error" not in log and "Error handling request" not in log
