"""A submission is never lost: a worker process killed mid-task, a task that vanished while
running (the sweep), and claims that let a redelivery in but keep a duplicate out."""

from __future__ import annotations

import os
import signal
import time
from datetime import timedelta
from pathlib import Path
from unittest import mock

import pytest
from django.db.models import Count
from django.utils import timezone
from pytest_django.fixtures import Settings

from leaderboard import queue
from leaderboard.jobs.sweep import jobs_sweep
from leaderboard.submissions.models import Score, Submission
from leaderboard.submissions.services import submission_create, submission_scores_compute
from leaderboard.tasks.registry import JOBS
from tests import factories, task_names
from tests.conftest import WorkerProcess, wait_for_status


def submission_claim(*, submission_id: int, task_id: str, retry: bool = False) -> bool:
    return JOBS["submission"].claim(job_id=submission_id, task_id=task_id, retry=retry)

MODEL = "resnet_basic_110"
CIFAR10_LABEL_SETS = {"original", "corrected", "cifar10h", "cifar10.1-v4", "cifar10.1-v6"}



def _submit(data_dir: Path, model: str = MODEL, username: str = "alice") -> Submission:
    files = {slug: factories.upload_from_path(p)
             for slug, p in factories.cifar10_model_files(data_dir, model).items()}
    return submission_create(
        owner=factories.user_create(username), benchmark=factories.cifar10(),
        model_name=model, files=files)


def _submit_without_task(data_dir: Path, username: str) -> Submission:
    """A submission whose scoring message never reaches the broker (as if it was lost)."""
    with mock.patch.object(queue, "task_send") as send:
        submission = _submit(data_dir, username=username)
    assert send.call_args_list == [
        mock.call(task_names.SCORE_SUBMISSION, submission.pk, countdown=0)]
    return submission


def _pool_children(pid: int) -> list[int]:
    """The child processes of the worker's main process: its prefork pool."""
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def _scores_per_label_set(submission: Submission) -> dict[str, int]:
    rows = (Score.objects.filter(submission=submission).values("label_set__slug")
            .annotate(n=Count("id")).values_list("label_set__slug", "n"))
    return dict(rows)


@pytest.mark.slow
@pytest.mark.sqlite  # a worker's pool process killed mid-task, on scripts/serve.sh's SQLite too
@pytest.mark.django_db(transaction=True)
def test_it_redelivers_a_killed_pool_process_and_scores_once(
    loaded: Settings, data_dir: Path, monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    # The task sleeps 4 s after its claim: the window in which its process is killed.
    monkeypatch.setenv("EVALSERVER_SCORING_DELAY_MS", "4000")
    worker: WorkerProcess = request.getfixturevalue("scoring_worker_process")
    submission = _submit(data_dir)
    assert wait_for_status(submission.pk, ("running", "scored", "failed"),
                           log=worker.log) == "running"
    submission.refresh_from_db()
    assert submission.attempts == 1
    task_id = submission.claimed_by
    children = _pool_children(worker.pid)
    assert len(children) == 1, f"expected one pool process (--concurrency 1), got {children}"

    os.kill(children[0], signal.SIGKILL)

    # task_reject_on_worker_lost puts the message back; the same task id claims it again.
    assert wait_for_status(submission.pk, ("scored", "failed"), timeout=240,
                           log=worker.log) == "scored"
    submission.refresh_from_db()
    assert submission.attempts == 2
    assert submission.claimed_by == task_id
    assert submission.failure_code == "" and submission.failure_reason == ""
    assert _scores_per_label_set(submission) == dict.fromkeys(CIFAR10_LABEL_SETS, 1)
    log = worker.log.read_text()
    assert "WorkerLostError" in log, log
    assert children[0] not in _pool_children(worker.pid)  # a fresh pool process took over


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_it_sweeps_a_lost_running_submission_and_fails_one_out_of_attempts(
    loaded: Settings, data_dir: Path, scoring_worker: Path
) -> None:
    max_attempts = loaded.EVALSERVER_SCORING_MAX_ATTEMPTS
    lost = _submit_without_task(data_dir, "alice")
    exhausted = _submit_without_task(data_dir, "bob")
    long_ago = timezone.now() - timedelta(hours=2)
    # Both were running under a task that vanished (its worker machine went away).
    Submission.objects.filter(pk=lost.pk).update(
        status=Submission.Status.RUNNING, started=long_ago, claimed_by="vanished-1", attempts=1)
    Submission.objects.filter(pk=exhausted.pk).update(
        status=Submission.Status.RUNNING, started=long_ago, claimed_by="vanished-2",
        attempts=max_attempts)

    assert jobs_sweep(JOBS["submission"]) == [lost.pk]

    assert wait_for_status(lost.pk, ("scored", "failed"), log=scoring_worker) == "scored"
    lost.refresh_from_db()
    assert lost.attempts == 2
    assert _scores_per_label_set(lost) == dict.fromkeys(CIFAR10_LABEL_SETS, 1)

    exhausted.refresh_from_db()
    assert exhausted.status == "failed"
    assert exhausted.failure_code == "worker_lost"
    assert exhausted.failure_reason == (
        f"scoring stopped {max_attempts} times without finishing (worker crash or time limit)")
    assert exhausted.finished_at is not None
    time.sleep(1)  # nothing was queued for it: the worker leaves it alone
    exhausted.refresh_from_db()
    assert exhausted.status == "failed" and exhausted.attempts == max_attempts
    assert not Score.objects.filter(submission=exhausted).exists()
    assert jobs_sweep(JOBS["submission"]) == []  # nothing left to sweep


@pytest.mark.django_db
def test_it_refuses_a_duplicate_claim_and_grants_a_redelivery(
    loaded: Settings, data_dir: Path
) -> None:
    loaded.EVALSERVER_SCORING_MAX_ATTEMPTS = 3
    submission = _submit(data_dir)  # its on_commit message never runs in this test

    def claim(task_id: str) -> bool:
        return submission_claim(submission_id=submission.pk, task_id=task_id)

    def state() -> tuple[str, str, int]:
        submission.refresh_from_db()
        return submission.status, submission.claimed_by, submission.attempts

    assert claim("task-a") is True
    assert state() == ("running", "task-a", 1)
    assert claim("task-b") is False  # a duplicate message: another task id
    assert state() == ("running", "task-a", 1)
    assert claim("task-a") is True  # a redelivery of the same message
    assert state() == ("running", "task-a", 2)
    # only the holder of the claim may write the scores
    assert submission_scores_compute(submission_id=submission.pk, task_id="task-b") is False
    assert not Score.objects.filter(submission=submission).exists()
    assert submission_scores_compute(submission_id=submission.pk, task_id="task-a") is True
    assert state() == ("scored", "task-a", 2)
    assert claim("task-a") is False  # scored: a late redelivery does nothing
    assert state() == ("scored", "task-a", 2)


@pytest.mark.django_db
def test_it_refuses_a_redelivery_once_out_of_attempts(loaded: Settings, data_dir: Path) -> None:
    loaded.EVALSERVER_SCORING_MAX_ATTEMPTS = 2
    submission = _submit(data_dir)
    for expected in (True, True, False):
        assert submission_claim(submission_id=submission.pk, task_id="t") is expected
    submission.refresh_from_db()
    assert (submission.status, submission.attempts) == ("running", 2)


@pytest.mark.django_db
def test_it_lets_a_retry_past_the_attempt_limit_and_counts_it(
    loaded: Settings, data_dir: Path
) -> None:
    loaded.EVALSERVER_SCORING_MAX_ATTEMPTS = 1
    submission = _submit(data_dir)
    assert submission_claim(submission_id=submission.pk, task_id="t") is True
    # Celery retries after a transient error keep the task id: one continues a start the limit
    # let in, so it may claim at the limit (and counts); another task id still cannot claim,
    # and neither can a new delivery of this one.
    assert submission_claim(submission_id=submission.pk, task_id="t", retry=True) is True
    assert submission_claim(submission_id=submission.pk, task_id="u", retry=True) is False
    assert submission_claim(submission_id=submission.pk, task_id="t") is False
    submission.refresh_from_db()
    assert (submission.status, submission.claimed_by, submission.attempts) == ("running", "t", 2)


@pytest.mark.django_db
def test_it_counts_attempts_on_retries(
    loaded: Settings, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from django.db import OperationalError

    from leaderboard.submissions import services as submissions
    from leaderboard.tasks.cpu import score_submission

    submission = _submit(data_dir)
    compute = submissions.submission_scores_compute
    seen: list[tuple[str, int]] = []

    def database_away_once(*, submission_id: int, task_id: str) -> bool:
        row = Submission.objects.get(pk=submission_id)
        seen.append((row.claimed_by, row.attempts))
        if len(seen) == 1:  # the database goes away in the middle of the first start
            raise OperationalError("server closed the connection unexpectedly")
        return compute(submission_id=submission_id, task_id=task_id)

    monkeypatch.setattr(submissions, "submission_scores_compute", database_away_once)

    # autoretry_for retries the task under its id (in-process: at once, without the backoff)
    assert score_submission.apply(args=[submission.pk], task_id="t-retried").get() == "scored"
    assert seen == [("t-retried", 1), ("t-retried", 2)]
    submission.refresh_from_db()
    assert (submission.status, submission.claimed_by, submission.attempts) == (
        "scored", "t-retried", 2)
    assert _scores_per_label_set(submission) == dict.fromkeys(CIFAR10_LABEL_SETS, 1)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_it_sweeps_a_version_whose_rescore_task_never_reached_the_broker(
    loaded: Settings, data_dir: Path, scoring_worker: Path
) -> None:
    from leaderboard.catalog.models import LabelSet
    from leaderboard.review.ground_truth.services import (
        ground_truth_candidate_create,
        ground_truth_version_revise,
    )
    from leaderboard.review.models import VersionRescore

    submission = _submit(data_dir)
    assert wait_for_status(submission.pk, ("scored", "failed"), log=scoring_worker) == "scored"
    corrected = LabelSet.objects.get(benchmark__slug="cifar10", slug="corrected")
    candidate = ground_truth_candidate_create(label_set=corrected, example_index=0,
                                              guessed=0, source="manual", evidence={})
    with mock.patch.object(queue, "task_send") as send:  # the broker is down
        version, _ = ground_truth_version_revise(
            label_set=corrected, candidates=[candidate], votes=[{"guessed": 5}], author=None)
    assert send.call_args_list == [mock.call(task_names.RESCORE_VERSION, version.pk, countdown=0)]
    pending = VersionRescore.objects.get(version=version)
    assert (pending.status, pending.finished_at) == ("queued", None)
    assert jobs_sweep(JOBS["rescore"]) == []  # requested just now: its task may still come

    VersionRescore.objects.filter(pk=pending.pk).update(
        queued_at=timezone.now() - timedelta(hours=2))
    assert jobs_sweep(JOBS["rescore"]) == [version.pk]

    deadline = time.monotonic() + 60
    while VersionRescore.objects.get(pk=pending.pk).finished_at is None:
        assert time.monotonic() < deadline, scoring_worker.read_text()
        time.sleep(0.2)
    done = VersionRescore.objects.get(pk=pending.pk)
    assert (done.status, done.submissions, done.attempts, done.failure_reason) == (
        "done", 1, 1, "")
    assert Score.objects.filter(submission=submission, label_set_version=version).count() == 1
    assert jobs_sweep(JOBS["rescore"]) == []  # nothing left to sweep
