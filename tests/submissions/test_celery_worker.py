"""A real Celery worker on the cpu queue, against a real Redis."""

from __future__ import annotations

from pathlib import Path

import pytest
from celery.exceptions import TimeoutError as CeleryTimeoutError

from evalserver.celery import app
from leaderboard.tasks.cpu import ping


def test_it_runs_ping_on_a_real_cpu_worker(celery_worker: Path) -> None:
    result = ping.delay()

    try:
        assert result.get(timeout=30) == "pong"
    except CeleryTimeoutError:
        pytest.fail("no answer from the worker in 30 s; its log:\n" + celery_worker.read_text())


def test_it_routes_tasks_to_the_cpu_queue_by_default() -> None:
    assert app.amqp.router.route({}, "leaderboard.tasks.cpu.ping")["queue"].name == "cpu"
    assert app.conf.task_default_queue == "cpu"
    assert app.conf.task_acks_late is True
    assert app.conf.task_reject_on_worker_lost is True
    assert app.conf.worker_prefetch_multiplier == 1
    assert app.conf.broker_transport_options["visibility_timeout"] >= 3600
