"""`/readyz` names each check of the whole server (database, Redis, a worker of each queue)
and answers 503 when one fails, against a real Redis and real Celery workers; like `/healthz`,
before the host check and the https redirect."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from pytest_django.fixtures import Settings

from tests.helpers import free_port

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
