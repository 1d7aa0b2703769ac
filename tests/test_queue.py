"""The one module the web side sends work through (leaderboard/queue.py): tasks by name, each to
the queue settings.CELERY_TASK_ROUTES names, only once the caller's transaction commits, and a
broker that is down then costs the message, never the request."""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from pytest_django.fixtures import Settings

from evalserver.celery import app
from leaderboard import queue
from leaderboard.audits.models import Audit
from leaderboard.jobs.sweep import jobs_sweep
from leaderboard.submissions.models import Submission
from leaderboard.tasks.registry import JOBS
from tests import factories, task_names
from tests.conftest import _point_celery_app, redis_database_empty
from tests.helpers import free_port

TASK_NAMES = (task_names.SCORE_SUBMISSION, task_names.RUN_CHECKPOINT,
              task_names.RUN_CONFIDENT_LEARNING_AUDIT, task_names.RUN_AUL_AUDIT,
              task_names.RESCORE_VERSION, queue.REFRESH_BOARD_SIGNIFICANCE,
              task_names.ADD_BUNDLE_UPLOAD)


def test_it_names_only_tasks_the_workers_register() -> None:
    import leaderboard.tasks.cpu  # noqa: F401 - registers the cpu queue's tasks
    import leaderboard.tasks.gpu  # noqa: F401 - registers the gpu queue's tasks

    assert [name for name in TASK_NAMES if name not in app.tasks] == []
    assert set(settings.JOB_TASKS["audit"]) == set(Audit.Kind.values)
    # Celery beat sends the sweeps by name too: one per kind of job, each a cpu task, and the
    # hourly removals of failed submissions' files and of stray temporary upload files
    schedule = {(entry["task"], *entry.get("args", ())): entry["schedule"]
                for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert sorted(schedule) == [("leaderboard.tasks.cpu.remove_failed_files",),
                                ("leaderboard.tasks.cpu.remove_stray_upload_files",),
                                ("leaderboard.tasks.cpu.sweep_jobs", "audit"),
                                ("leaderboard.tasks.cpu.sweep_jobs", "bundle_upload"),
                                ("leaderboard.tasks.cpu.sweep_jobs", "notification"),
                                ("leaderboard.tasks.cpu.sweep_jobs", "rescore"),
                                ("leaderboard.tasks.cpu.sweep_jobs", "submission")]
    assert [name for name, *_ in schedule if name not in app.tasks] == []
    # every EVALSERVER_SWEEP_INTERVAL seconds (15 by default: a lost message is sent again
    # about EVALSERVER_SWEEP_WINDOW + 15 s after it was sent)
    assert {schedule.pop(("leaderboard.tasks.cpu.remove_failed_files",)),
            schedule.pop(("leaderboard.tasks.cpu.remove_stray_upload_files",))} == {3600.0}
    assert set(schedule.values()) == {float(settings.EVALSERVER_SWEEP_INTERVAL)}


def _sent(broker: redis.Redis, queue_name: str, before: int) -> list[tuple[str, list[int]]]:
    """(task name, arguments) of the messages put on a queue since it held `before` (kombu's
    Redis transport pushes each message onto the list named after its queue)."""
    sent = []
    for raw in reversed(broker.lrange(queue_name, 0, broker.llen(queue_name) - before - 1)):
        message = json.loads(raw)
        args, _, _ = json.loads(base64.b64decode(message["body"]))
        sent.append((message["headers"]["task"], args))
    return sent


@pytest.fixture
def redis_url(redis_url: str) -> Iterator[str]:
    """A Redis database of this module's own, empty before and after each test: the sweep
    reads every message the broker holds, so none of another test's may be there."""
    yield from redis_database_empty(redis_url, 14)


@pytest.mark.django_db(transaction=True)
def test_it_sends_each_task_by_name_to_its_queue_once_the_transaction_commits(
    broker: redis.Redis,
) -> None:
    cpu, gpu = broker.llen("cpu"), broker.llen("gpu")
    with transaction.atomic():
        queue.job_queue(kind="submission", job_id=11, variant="predictions")
        queue.job_queue(kind="submission", job_id=12, variant="checkpoint")
        queue.job_queue(kind="audit", job_id=13, variant="confident_learning")
        queue.job_queue(kind="audit", job_id=14, variant="aul")
        queue.job_queue(kind="rescore", job_id=15)
        assert (broker.llen("cpu"), broker.llen("gpu")) == (cpu, gpu)  # nothing before commit
    assert _sent(broker, "cpu", cpu) == [(task_names.SCORE_SUBMISSION, [11]),
                                         (task_names.RUN_CONFIDENT_LEARNING_AUDIT, [13]),
                                         (task_names.RESCORE_VERSION, [15])]
    assert _sent(broker, "gpu", gpu) == [(task_names.RUN_CHECKPOINT, [12]),
                                         (task_names.RUN_AUL_AUDIT, [14])]

    with pytest.raises(RuntimeError), transaction.atomic():  # rolled back: nothing is sent
        queue.job_queue(kind="submission", job_id=16, variant="predictions")
        raise RuntimeError("the request failed")
    assert (broker.llen("cpu"), broker.llen("gpu")) == (cpu + 3, gpu + 2)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_it_keeps_a_submission_made_while_the_broker_is_down_for_the_sweep(
    loaded: Settings, data_dir: Path, caplog: pytest.LogCaptureFixture, broker: redis.Redis,
) -> None:
    saved = {"broker_url": app.conf.broker_url, "result_backend": app.conf.result_backend}
    cpu = broker.llen("cpu")
    nobody = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    _point_celery_app(app, broker_url=nobody, result_backend=nobody)
    try:
        with caplog.at_level(logging.ERROR):
            submission = factories.submission_for_model(data_dir, "resnet_basic_110")
    finally:
        _point_celery_app(app, **saved)

    # the request succeeded: its row and files are committed, the job waits for the sweep
    submission.refresh_from_db()
    assert (submission.status, submission.attempts, submission.claimed_by) == ("queued", 0, "")
    assert Submission.objects.count() == 1
    assert sorted(submission.files.values_list("example_set__slug", flat=True)) == [
        "cifar10-test", "cifar10.1-v4", "cifar10.1-v6"]
    failures = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(failures) == 1 and "on_commit" in failures[0].getMessage()
    assert broker.llen("cpu") == cpu

    # the broker is back and holds no message for it: the sweep sends it once the job has
    # waited its short window unclaimed (not before: its message might still be on its way)
    window = loaded.EVALSERVER_SWEEP_WINDOW
    assert window < loaded.EVALSERVER_SCORING_TIME_LIMIT
    Submission.objects.filter(pk=submission.pk).update(
        queued_at=timezone.now() - timedelta(seconds=window - 1))
    assert jobs_sweep(JOBS["submission"]) == []
    Submission.objects.filter(pk=submission.pk).update(
        queued_at=timezone.now() - timedelta(seconds=window + 1))
    assert jobs_sweep(JOBS["submission"]) == [submission.pk]
    assert _sent(broker, "cpu", cpu) == [(task_names.SCORE_SUBMISSION, [submission.pk])]
    assert jobs_sweep(JOBS["submission"]) == []  # its message waits on the queue now
