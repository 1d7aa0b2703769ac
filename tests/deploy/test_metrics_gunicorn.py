"""/metrics under real gunicorn with two worker processes, in prometheus_client's multiprocess
mode (PROMETHEUS_MULTIPROC_DIR, as scripts/serve.sh and docker/entrypoint.sh start it): the
requests each process answered add up in one scrape, those of workers that have since been
replaced included (gunicorn's child_exit marks them dead: evalserver/gunicorn_conf.py)."""

from __future__ import annotations

import http.client
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.helpers import PROJECT_ROOT, free_port

pytestmark = pytest.mark.slow

GENEROUS = 90.0  # seconds anything may take on a loaded machine
UNMATCHED_404 = ("evalserver_http_request_duration_seconds_count",
                 frozenset({"method": "GET", "route": "unmatched", "status": "404"}.items()))


def _get(port: int, path: str) -> tuple[int, str]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=GENEROUS)
    try:
        connection.request("GET", path)
        answer = connection.getresponse()
        return answer.status, answer.read().decode()
    finally:
        connection.close()


def _until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + GENEROUS
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {GENEROUS} s")
        time.sleep(0.1)


def _children(pid: int) -> set[int]:
    """The processes whose parent is `pid` (from /proc)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


def test_it_adds_up_the_requests_of_every_worker_process(tmp_path: Path) -> None:
    metrics = tmp_path / "metrics"
    metrics.mkdir()
    port = free_port()
    env = {
        "PATH": os.environ["PATH"], "HOME": str(tmp_path), "LANG": "C.UTF-8",
        "DJANGO_SETTINGS_MODULE": "evalserver.settings", "DEBUG": "false",
        "SECRET_KEY": "metrics-test-only-" + os.urandom(8).hex(),
        "SECURE_SSL_REDIRECT": "false", "LOG_LEVEL": "WARNING",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "REDIS_URL": os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"),
        "MEDIA_ROOT": str(tmp_path / "media"),
        "EVALSERVER_UPLOAD_TEMP_DIR": str(tmp_path / "uploads"),
        "PROMETHEUS_MULTIPROC_DIR": str(metrics), "WEB_CONCURRENCY": "2", "WEB_THREADS": "2",
    }
    log = tmp_path / "gunicorn.log"
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
                return _get(port, "/healthz")[0] == 200
            except OSError:
                return False

        _until(answers, "gunicorn answering /healthz")
        _until(lambda: len(_children(master.pid)) == 2, "two workers")
        first = _children(master.pid)
        # requests to no URL: answered without the database, timed as route "unmatched"
        assert [_get(port, "/api/nothing-here/")[0] for _ in range(6)] == [404] * 6
        for pid in first:  # both replaced: the next requests go to other processes
            os.kill(pid, signal.SIGTERM)
        _until(lambda: not _children(master.pid) & first
               and len(_children(master.pid)) == 2, "two new workers")
        second = _children(master.pid)
        assert [_get(port, "/api/nothing-here/")[0] for _ in range(4)] == [404] * 4

        status, text = _get(port, "/metrics")  # from 127.0.0.1: allowed by default

        assert status == 200, text
        scraped = {(sample.name, frozenset(sample.labels.items())): sample.value
                   for family in text_string_to_metric_families(text)
                   for sample in family.samples}
        assert scraped[UNMATCHED_404] == 6 + 4
        # the counts come from the files of processes of both generations
        writers = {int(path.stem.rsplit("_", 1)[1]) for path in metrics.glob("*.db")}
        assert writers & first and writers & second, (writers, first, second)
    finally:
        os.killpg(master.pid, signal.SIGTERM)
        try:
            master.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(master.pid, signal.SIGKILL)
            master.wait()
