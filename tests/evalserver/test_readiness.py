"""`/readyz` names each check of the whole server (database, Redis, a worker of each queue)
and answers 503 when one fails, against a real Redis and real Celery workers; like `/healthz`,
before the host check and the https redirect."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from django.test import Client
from pytest_django.fixtures import Settings

from tests.conftest import _point_celery_app
from tests.helpers import PROJECT_ROOT, free_port, process_group_stop

pytestmark = pytest.mark.django_db

OK_CHECKS = {"database": "ok", "redis": "ok", "cpu worker": "ok", "gpu worker": "ok",
             "notify worker": "ok"}


@pytest.fixture
def production_like(settings: Settings, redis_url: str, broker: Any) -> Settings:
    """The host check and the https redirect on, and the settings and this process's Celery
    app on the test Redis."""
    settings.ALLOWED_HOSTS = ["evals.example.org"]
    settings.SECURE_SSL_REDIRECT = True
    settings.REDIS_URL = redis_url
    return settings


@pytest.fixture
def every_queue_worker(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
                       ) -> Iterator[Path]:
    """One real worker consuming every queue."""
    monkeypatch.setenv("EVALSERVER_TEST_WORKER_QUEUES", "cpu,gpu,notify")
    yield request.getfixturevalue("celery_worker")


@pytest.fixture
def full_redis(tmp_path: Path) -> Iterator[str]:
    """The URL of a redis-server of this test's own that is full: it answers PING, and refuses
    every write with OOM (a maxmemory of one byte, nothing it may evict), as a Redis whose
    memory ran out does; MISCONF on a full disk, or READONLY on a replica, are refused alike."""
    executable = shutil.which("redis-server")
    if executable is None:
        pytest.fail("redis-server is not installed (apt-get install redis-server)",
                    pytrace=False)
    port = free_port()
    process = subprocess.Popen(
        [executable, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", str(tmp_path), "--maxmemory", "1",
         "--maxmemory-policy", "noeviction"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        deadline = time.monotonic() + 30
        while not _pong(url):
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"redis-server did not start on port {port}", pytrace=False)
            time.sleep(0.1)
        yield url
    finally:
        process_group_stop(process)


def _pong(url: str) -> bool:
    try:
        with redis.Redis.from_url(url, socket_connect_timeout=1) as client:
            return bool(client.ping())
    except redis.RedisError:
        return False


def _write_refused(url: str) -> str:
    """What this Redis answers a write (its own words, asked directly)."""
    with redis.Redis.from_url(url) as client, pytest.raises(redis.ResponseError) as refused:
        client.set("a-test-key", "1")
    return str(refused.value)


def _ready(client: Client, path: str = "/readyz") -> tuple[int, Any]:
    answer = client.get(path, HTTP_HOST="127.0.0.1:8000")
    return answer.status_code, answer.json()


def _once_cpu_worker_answers(client: Client, log: Path, path: str = "/readyz"
                             ) -> tuple[int, Any]:
    """The answer once the worker (just started) answers; generous: a slow machine may take
    long to import the worker's modules."""
    deadline = time.monotonic() + 120
    while True:
        status, body = _ready(client, path)
        if body.get("checks", {}).get("cpu worker") == "ok":
            return status, body
        if time.monotonic() > deadline:
            pytest.fail(f"the worker never answered /readyz: {body}\n{log.read_text()}")
        time.sleep(0.5)


def test_it_answers_ready_when_a_worker_of_each_queue_answers(
        production_like: Settings, every_queue_worker: Path, client: Client) -> None:
    status, body = _once_cpu_worker_answers(client, every_queue_worker)

    assert (status, body) == (200, {"status": "ok", "checks": OK_CHECKS})


def test_it_answers_503_naming_the_queue_no_worker_answers(
        production_like: Settings, celery_worker: Path, client: Client) -> None:
    status, body = _once_cpu_worker_answers(client, celery_worker)

    assert status == 503
    assert body == {
        "error": {"code": "unavailable",
                  "message": "not ready: gpu worker: no worker of the gpu queue answers"},
        "checks": {**OK_CHECKS, "gpu worker": "no worker of the gpu queue answers"},
    }


def test_it_checks_only_the_queues_asked(production_like: Settings, celery_worker: Path,
                                         client: Client) -> None:
    status, body = _once_cpu_worker_answers(client, celery_worker, "/readyz?queue=cpu")

    assert (status, body) == (200, {"status": "ok", "checks": {
        "database": "ok", "redis": "ok", "cpu worker": "ok"}})


def test_it_answers_503_when_no_worker_answers(production_like: Settings,
                                               client: Client) -> None:
    assert _ready(client) == (503, {
        "error": {"code": "unavailable",
                  "message": "not ready: cpu worker: no worker of the cpu queue answers; "
                             "gpu worker: no worker of the gpu queue answers; "
                             "notify worker: no worker of the notify queue answers"},
        "checks": {"database": "ok", "redis": "ok",
                   "cpu worker": "no worker of the cpu queue answers",
                   "gpu worker": "no worker of the gpu queue answers",
                   "notify worker": "no worker of the notify queue answers"},
    })


def test_it_answers_503_without_asking_the_workers_when_redis_does_not_answer(
        production_like: Settings, client: Client) -> None:
    production_like.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens

    assert _ready(client) == (503, {
        "error": {"code": "unavailable",
                  "message": "not ready: redis: does not answer; "
                             "cpu worker: not asked: Redis does not answer; "
                             "gpu worker: not asked: Redis does not answer; "
                             "notify worker: not asked: Redis does not answer"},
        "checks": {"database": "ok", "redis": "does not answer",
                   "cpu worker": "not asked: Redis does not answer",
                   "gpu worker": "not asked: Redis does not answer",
                   "notify worker": "not asked: Redis does not answer"},
    })


def test_it_says_redis_refuses_writes_and_blames_no_silent_redis_for_the_workers(
        production_like: Settings, full_redis: str, client: Client) -> None:
    production_like.REDIS_URL = full_redis
    refused = _write_refused(full_redis)  # redis-py keeps Redis's words, less its OOM code
    assert refused == "command not allowed when used memory > 'maxmemory'."

    assert _ready(client, "/readyz?queue=cpu") == (503, {
        "error": {"code": "unavailable",
                  "message": f"not ready: redis: refuses writes: {refused}; "
                             "cpu worker: not asked: Redis refuses writes"},
        "checks": {"database": "ok", "redis": f"refuses writes: {refused}",
                   "cpu worker": "not asked: Redis refuses writes"},
    })


def test_it_names_the_broker_when_the_question_to_the_workers_is_refused(
        production_like: Settings, full_redis: str, client: Client) -> None:
    # Redis (REDIS_URL) passes its check; the broker this process's Celery app sends to, full
    # here, refuses the question (between the check and the question, Redis filled up)
    from evalserver.celery import app

    saved = {"broker_url": app.conf.broker_url, "result_backend": app.conf.result_backend}
    _point_celery_app(app, broker_url=full_redis, result_backend=full_redis)
    try:
        answer = _ready(client, "/readyz?queue=cpu")
    finally:
        _point_celery_app(app, **saved)

    assert answer == (503, {
        "error": {"code": "unavailable",
                  "message": "not ready: cpu worker: not asked: the broker refused the question"},
        "checks": {"database": "ok", "redis": "ok",
                   "cpu worker": "not asked: the broker refused the question"},
    })


PROBE = """
import django
django.setup()
from django.test import Client
answer = Client().get("/readyz?queue=cpu", HTTP_HOST="127.0.0.1:8000")
print(answer.status_code, answer.content.decode())
"""


def test_it_asks_the_workers_and_blames_only_the_database_when_it_does_not_answer(
        production_like: Settings, celery_worker: Path, client: Client) -> None:
    # the worker answers first (asked from this process, whose database answers) ...
    _once_cpu_worker_answers(client, celery_worker)
    # ... then a server whose database is a PostgreSQL URL on a port where nothing listens (a
    # real refused connection), on the same Redis
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "evalserver.settings",
           "SECRET_KEY": "x" * 50, "DEBUG": "false", "REDIS_URL": production_like.REDIS_URL,
           "DATABASE_URL": f"postgres://nobody:none@127.0.0.1:{free_port()}/none"}
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=PROJECT_ROOT, env=env,
                          capture_output=True, text=True, timeout=120)

    assert done.returncode == 0, done.stderr
    status, body = done.stdout.strip().split(" ", 1)
    assert (int(status), json.loads(body)) == (503, {
        "error": {"code": "unavailable", "message": "not ready: database: does not answer"},
        "checks": {"database": "does not answer", "redis": "ok", "cpu worker": "ok"},
    })


def test_it_refuses_a_queue_that_does_not_exist(production_like: Settings,
                                                client: Client) -> None:
    assert _ready(client, "/readyz?queue=cpu&queue=tpu") == (400, {
        "error": {"code": "unknown_queue",
                  "message": "no queue named tpu; the queues are cpu, gpu, notify"}})


def test_it_leaves_other_methods_and_paths_to_the_host_check_and_the_redirect(
        production_like: Settings, client: Client) -> None:
    assert client.post("/readyz", HTTP_HOST="evals.example.org").status_code == 301
    redirected = client.get("/readyz/", HTTP_HOST="evals.example.org")
    assert (redirected.status_code, redirected["Location"]) == (
        301, "https://evals.example.org/readyz/")
