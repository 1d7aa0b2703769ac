"""gunicorn on 127.0.0.1 as scripts/serve.sh runs it (evalserver/gunicorn_conf.py), for the tests
that need the real server's processes (slow clients, /metrics across worker processes), and the
plain-HTTP helpers they poll it with. Verdicts wait with generous bounds: none depends on how
fast a loaded machine is."""

from __future__ import annotations

import http.client
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.helpers import PROJECT_ROOT, process_group_stop

GENEROUS = 90.0  # seconds anything may take on a loaded machine

# Hundreds of requests from one address and one user: a bench or a test of the server's
# processes measures the server, not its rate limits (docs/api.md, "Rate limits").
THROTTLES_OFF = {f"EVALSERVER_THROTTLE_{scope}": "none"
                 for scope in ("ANON", "USER", "UPLOADS", "TOKEN")}


def http_get(port: int, path: str) -> tuple[int, str]:
    """One GET to 127.0.0.1:port: the status and the body as text."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=GENEROUS)
    try:
        connection.request("GET", path)
        answer = connection.getresponse()
        return answer.status, answer.read().decode()
    finally:
        connection.close()


def wait_until(check: Callable[[], bool], what: str, timeout: float = GENEROUS) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s")
        time.sleep(0.1)


def production_env(work: Path, **extra: str) -> dict[str, str]:
    """The environment of a DEBUG=false server on SQLite in `work`, over plain http (no TLS
    proxy in front: no redirect to https), with `extra` on top."""
    return {
        "PATH": os.environ["PATH"], "HOME": str(work), "LANG": "C.UTF-8",
        "DJANGO_SETTINGS_MODULE": "evalserver.settings", "DEBUG": "false",
        "SECRET_KEY": "test-only-" + os.urandom(8).hex(),
        "SECURE_SSL_REDIRECT": "false", "LOG_LEVEL": "WARNING",
        "DATABASE_URL": f"sqlite:///{work / 'db.sqlite3'}",
        "REDIS_URL": os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"),
        "MEDIA_ROOT": str(work / "media"),
        **extra,
    }


@contextmanager
def gunicorn(env: dict[str, str], port: int, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """gunicorn's master, answering /healthz on `port`; stopped (its whole process group) on
    leaving. Its output goes to `log`, shown when it stops before answering."""
    with log.open("wb") as out:
        master = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-c", "evalserver/gunicorn_conf.py",
             "evalserver.wsgi", "--bind", f"127.0.0.1:{port}"],
            cwd=PROJECT_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True)
    try:
        def answers() -> bool:
            assert master.poll() is None, log.read_text()
            try:
                return http_get(port, "/healthz")[0] == 200
            except OSError:
                return False

        wait_until(answers, "gunicorn answering /healthz")
        yield master
    finally:
        process_group_stop(master, timeout=60)
