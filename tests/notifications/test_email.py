"""The email of a scored (or failed) submission: emitted by the runner once the scoring
commits, sent by the notification job through Django's email backend (locmem in tests)."""

from __future__ import annotations

import dataclasses
import io
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.core.management import call_command
from django.utils import timezone
from pytest_django.fixtures import Settings

from leaderboard.catalog.models import Benchmark
from leaderboard.jobs.sweep import jobs_sweep
from leaderboard.notifications.models import NotificationDelivery
from leaderboard.notifications.services import notification_preference_update
from leaderboard.submissions.models import Score, Submission
from leaderboard.submissions.services import submission_create
from leaderboard.tasks.cpu import score_submission
from leaderboard.tasks.registry import JOBS
from leaderboard.tasks.runner import job_run
from tests import factories
from tests.workers.scoring.bundles.bundle_files import LABELS, manifest, write_bundle
from workers.scoring.predictions import PredictionError

pytestmark = pytest.mark.django_db


def _toy(tmp_path: Path) -> Benchmark:
    call_command("benchmark_add", str(write_bundle(tmp_path / "toy", manifest())),
                 stdout=io.StringIO(), stderr=io.StringIO())
    return Benchmark.objects.get(slug="toy")


def _mailed_owner(username: str, event: str) -> User:
    """A user with an email address who asked for `event` by email (not by webhook)."""
    owner = factories.user_create(username)
    owner.email = f"{username}@example.org"
    owner.save()
    notification_preference_update(user=owner, event=event, email=True, webhook=False)
    return owner


def test_it_emails_the_scores_of_a_scored_submission(
    catalog_settings: Settings, tmp_path: Path
) -> None:
    catalog_settings.EVALSERVER_DAILY_QUOTA = 0
    benchmark = _toy(tmp_path)
    owner = _mailed_owner("mailed", "submission.scored")
    predicted = [0, 1, 2, 1, 1, 2]  # against LABELS [0, 1, 2, 0, 1, 2]: 5 of 6
    correct = sum(p == t for p, t in zip(predicted, LABELS, strict=True))
    submission = submission_create(owner=owner, benchmark=benchmark, model_name="m5",
                                   files={"toy-test": factories.upload_json(predicted)})
    assert score_submission.apply(args=[submission.pk], task_id="t-mail").get() == "scored"
    [delivery] = NotificationDelivery.objects.filter(user=owner)
    assert (delivery.channel, delivery.event, delivery.status) == (
        "email", "submission.scored", "queued")
    scores = {row["label_set"]: row for row in delivery.payload["data"]["scores"]}
    assert scores["original"] == {"label_set": "original", "version": 1,
                                  "accuracy": correct / len(LABELS), "correct": correct,
                                  "total": len(LABELS)}
    assert len(scores) == Score.objects.filter(submission=submission).count() > 1
    assert job_run(JOBS["notification"], "email", job_id=delivery.pk, task_id="e") == \
        "delivered"
    [message] = mail.outbox
    assert message.to == ["mailed@example.org"]
    assert message.subject == f"[evalserver] submission {submission.pk} (m5) was scored on toy"
    assert f"original (version 1): accuracy {5 / 6}" in message.body
    # emitted twice (a task run again): sent once
    JOBS["submission"].after(submission.pk)  # type: ignore[misc]
    assert NotificationDelivery.objects.filter(user=owner).count() == 1


def test_it_tells_nothing_to_a_user_who_did_not_opt_in(
    catalog_settings: Settings, tmp_path: Path
) -> None:
    catalog_settings.EVALSERVER_DAILY_QUOTA = 0
    benchmark = _toy(tmp_path)
    owner = factories.user_create("quiet")
    submission = submission_create(owner=owner, benchmark=benchmark, model_name="m",
                                   files={"toy-test": factories.upload_json([0] * 6)})
    assert score_submission.apply(args=[submission.pk], task_id="t-quiet").get() == "scored"
    assert not NotificationDelivery.objects.exists()


def test_it_emails_why_a_submission_failed(catalog_settings: Settings, tmp_path: Path) -> None:
    catalog_settings.EVALSERVER_DAILY_QUOTA = 0
    benchmark = _toy(tmp_path)
    owner = _mailed_owner("failing", "submission.failed")
    submission = submission_create(owner=owner, benchmark=benchmark, model_name="bad",
                                   files={"toy-test": factories.upload_json([0] * 6)})

    def bad_file(*, job_id: int, task_id: str) -> bool:  # as the worker's parse would raise
        raise PredictionError("bad_shape", "the file has 5 rows; expected 6")

    kind = JOBS["submission"]
    task = kind.tasks["predictions"]
    failing = dataclasses.replace(kind, tasks={"predictions": dataclasses.replace(
        task, work=bad_file)})
    assert job_run(failing, "predictions", job_id=submission.pk, task_id="t-bad") == "failed"
    submission.refresh_from_db()
    assert submission.failure_reason == "the file has 5 rows; expected 6"
    [delivery] = NotificationDelivery.objects.filter(user=owner)
    assert delivery.payload["data"]["failure_reason"] == submission.failure_reason != ""
    assert job_run(JOBS["notification"], "email", job_id=delivery.pk, task_id="e") == \
        "delivered"
    assert submission.failure_reason in mail.outbox[0].body


def test_it_emails_when_the_sweep_fails_a_submission_whose_worker_was_lost(
    catalog_settings: Settings, tmp_path: Path
) -> None:
    catalog_settings.EVALSERVER_DAILY_QUOTA = 0
    benchmark = _toy(tmp_path)
    owner = _mailed_owner("lost", "submission.failed")
    submission = submission_create(owner=owner, benchmark=benchmark, model_name="lost",
                                   files={"toy-test": factories.upload_json([0] * 6)})
    kind = JOBS["submission"]
    # its last attempt's worker died long past every time limit: the sweep fails it
    Submission.objects.filter(pk=submission.pk).update(
        status="running", claimed_by="gone", attempts=kind.max_attempts(),
        started=timezone.now() - timedelta(days=1))

    assert jobs_sweep(kind) == []
    submission.refresh_from_db()
    assert (submission.status, submission.failure_code) == ("failed", "worker_lost")
    [delivery] = NotificationDelivery.objects.filter(user=owner)
    assert (delivery.event, delivery.payload["data"]["failure_reason"]) == (
        "submission.failed", submission.failure_reason)
    assert job_run(JOBS["notification"], "email", job_id=delivery.pk, task_id="e") == \
        "delivered"
    assert submission.failure_reason in mail.outbox[0].body
