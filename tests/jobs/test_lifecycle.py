"""The one claimed-job lifecycle (leaderboard/jobs/) as each kind of job uses it: a
submission's scoring or model run, a label audit, a version's re-scoring, an uploaded bundle.
The sweep re-sends what lost its worker or its message and fails what ran out of attempts, by
one rule for all.
(A real worker picks each kind's re-sent job up in tests/submissions/test_worker_lost.py and
tests/audits/test_confident_learning.py.)"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from pytest_django.fixtures import Settings

from evalserver.celery import app
from leaderboard import queue
from leaderboard.audits.models import Audit
from leaderboard.catalog.models import Benchmark, BundleUpload, LabelSet, LabelSetVersion
from leaderboard.jobs.sweep import jobs_sweep
from leaderboard.review.models import VersionRescore
from leaderboard.review.panel.services import version_rescore_request
from leaderboard.review.rescoring import services as rescoring
from leaderboard.submissions.models import Submission
from leaderboard.tasks.registry import JOBS
from leaderboard.tasks.runner import job_run
from tests import factories, task_names
from tests.conftest import _point_celery_app
from tests.helpers import free_port


def submissions_sweep() -> list[int]:
    return jobs_sweep(JOBS["submission"])


def audits_sweep() -> list[int]:
    return jobs_sweep(JOBS["audit"])


def versions_sweep() -> list[int]:
    return jobs_sweep(JOBS["rescore"])


def bundle_uploads_sweep() -> list[int]:
    return jobs_sweep(JOBS["bundle_upload"])


def audit_claim(*, audit_id: int, task_id: str, retry: bool = False) -> bool:
    return JOBS["audit"].claim(job_id=audit_id, task_id=task_id, retry=retry)


def audit_fail(*, audit_id: int, task_id: str, reason: str) -> bool:
    return JOBS["audit"].fail(job_id=audit_id, task_id=task_id, code="internal_error",
                              reason=reason)


def version_rescore_run(*, version_id: int, task_id: str) -> str:
    return job_run(JOBS["rescore"], "", job_id=version_id, task_id=task_id)

# Committed as they go, as in a worker: each message is sent when its write commits.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _broker_unreadable() -> Iterator[None]:
    """The rules that hold without the broker's word: it cannot be read here, so only the long
    cutoffs apply (tests/jobs/test_broker.py asks a real broker)."""
    saved = {"broker_url": app.conf.broker_url, "result_backend": app.conf.result_backend}
    nobody = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    _point_celery_app(app, broker_url=nobody, result_backend=nobody)
    yield
    _point_celery_app(app, **saved)


@dataclass(frozen=True)
class Kind:
    make: Callable[[int], Any]  # the n-th job of this kind, queued
    job_id: Callable[[Any], int]  # what its task is given
    sweep: Callable[[], list[int]]
    task: str
    time_limit: str  # the setting of its task's hard time limit
    attempts: str  # the setting of its attempts
    reason: str  # the sweep's failure reason, at 3 attempts


def _submission(n: int) -> Submission:
    return Submission.objects.create(owner=factories.user_create(f"owner{n}"),
                                     benchmark=factories.cifar10(), model_name=f"model {n}")


def _audit(n: int) -> Audit:
    mnist = Benchmark.objects.get(slug="mnist")
    corrected = LabelSet.objects.get(benchmark=mnist, slug="corrected")
    author = User.objects.filter(username="maint").first() or factories.host_create(
        "maint")
    return Audit.objects.create(benchmark=mnist, example_set=corrected.example_set,
                                label_set=corrected, kind=Audit.Kind.CONFIDENT_LEARNING,
                                created_by=author)


def _rescore(n: int) -> VersionRescore:
    label_set = LabelSet.objects.order_by("id")[n]
    return VersionRescore.objects.create(version=label_set.versions.get(number=1))


def _bundle_upload(n: int) -> BundleUpload:
    author = User.objects.filter(username="maint").first() or factories.host_create(
        "maint")
    return BundleUpload.objects.create(original_name=f"b{n}.zip", size=1, uploaded_by=author,
                                       bundle=f"bundles/{n}/b{n}.zip")


KINDS = {
    "submission": Kind(_submission, lambda job: job.pk, submissions_sweep,
                       task_names.SCORE_SUBMISSION, "EVALSERVER_SCORING_TIME_LIMIT",
                       "EVALSERVER_SCORING_MAX_ATTEMPTS",
                       "scoring stopped 3 times without finishing (worker crash or time limit)"),
    "audit": Kind(_audit, lambda job: job.pk, audits_sweep, task_names.RUN_CONFIDENT_LEARNING_AUDIT,
                  "EVALSERVER_AUDIT_TIME_LIMIT", "EVALSERVER_AUDIT_MAX_ATTEMPTS",
                  "the audit stopped 3 times without finishing (worker crash or time limit)"),
    "version re-scoring": Kind(
        _rescore, lambda job: job.version_id, versions_sweep, task_names.RESCORE_VERSION,
        "EVALSERVER_RESCORE_TIME_LIMIT", "EVALSERVER_RESCORE_MAX_ATTEMPTS",
        "the re-scoring stopped 3 times without finishing (worker crash or time limit)"),
    "bundle upload": Kind(
        _bundle_upload, lambda job: job.pk, bundle_uploads_sweep, task_names.ADD_BUNDLE_UPLOAD,
        "EVALSERVER_BUNDLE_TIME_LIMIT", "EVALSERVER_BUNDLE_MAX_ATTEMPTS",
        "adding the bundle stopped 3 times without finishing (worker crash or time limit)"),
}


@pytest.mark.parametrize("name", list(KINDS))
def test_it_resends_lost_jobs_and_fails_those_out_of_attempts(
    loaded: Settings, sent: list[tuple[str, int]], name: str
) -> None:
    kind = KINDS[name]
    setattr(loaded, kind.attempts, 3)
    limit = getattr(loaded, kind.time_limit)
    now = timezone.now()
    past_limit = now - timedelta(seconds=limit + 31)  # its hard time limit, then 30 s more
    within_limit = now - timedelta(seconds=limit + 29)
    lost_worker, out_of_attempts, lost_message, still_running, still_queued = (
        kind.make(n) for n in range(5))
    model = type(lost_worker)
    model.objects.filter(pk=lost_worker.pk).update(
        status="running", claimed_by="gone-1", started=past_limit, attempts=2)
    model.objects.filter(pk=out_of_attempts.pk).update(
        status="running", claimed_by="gone-2", started=past_limit, attempts=3)
    model.objects.filter(pk=lost_message.pk).update(queued_at=past_limit)
    model.objects.filter(pk=still_running.pk).update(
        status="running", claimed_by="busy", started=within_limit, attempts=1)
    model.objects.filter(pk=still_queued.pk).update(queued_at=within_limit)

    resent = [kind.job_id(lost_worker), kind.job_id(lost_message)]
    assert kind.sweep() == resent
    assert sent == [(kind.task, job_id) for job_id in resent]

    def state(job: Any) -> tuple[Any, ...]:
        job.refresh_from_db()
        return (job.status, job.claimed_by, job.attempts, job.failure_reason,
                job.finished_at is not None)

    assert state(lost_worker) == ("queued", "", 2, "", False)
    assert lost_worker.queued_at >= now
    assert state(out_of_attempts) == ("failed", "gone-2", 3, kind.reason, True)
    assert state(lost_message) == ("queued", "", 0, "", False)
    assert lost_message.queued_at >= now
    assert state(still_running) == ("running", "busy", 1, "", False)
    assert state(still_queued) == ("queued", "", 0, "", False)
    assert still_queued.queued_at == within_limit

    assert kind.sweep() == []  # nothing left to sweep
    assert len(sent) == 2


def test_it_gives_each_kind_of_submission_its_own_time_limit(
    loaded: Settings, sent: list[tuple[str, int]]
) -> None:
    # a checkpoint's run (inference, then scoring) may take longer than a scoring
    long_ago = timezone.now() - timedelta(seconds=loaded.EVALSERVER_SCORING_TIME_LIMIT + 31)
    assert long_ago > timezone.now() - timedelta(seconds=loaded.EVALSERVER_INFERENCE_TIME_LIMIT)
    predictions, checkpoint, lost_checkpoint = (_submission(n) for n in range(3))
    Submission.objects.filter(pk__in=[checkpoint.pk, lost_checkpoint.pk]).update(
        kind=Submission.Kind.CHECKPOINT)
    Submission.objects.filter(pk__in=[predictions.pk, checkpoint.pk]).update(
        status="running", claimed_by="gone", started=long_ago, attempts=1)
    Submission.objects.filter(pk=lost_checkpoint.pk).update(
        queued_at=timezone.now() - timedelta(
            seconds=loaded.EVALSERVER_INFERENCE_TIME_LIMIT + 31))

    assert submissions_sweep() == [predictions.pk, lost_checkpoint.pk]
    # a checkpoint goes back to the gpu queue, to run its model first
    assert sent == [(task_names.SCORE_SUBMISSION, predictions.pk),
                    (task_names.RUN_CHECKPOINT, lost_checkpoint.pk)]
    checkpoint.refresh_from_db()
    assert (checkpoint.status, checkpoint.claimed_by) == ("running", "gone")


def test_it_resends_an_audit_to_its_kinds_queue(
    loaded: Settings, sent: list[tuple[str, int]]
) -> None:
    confident, aul = _audit(0), _audit(1)
    Audit.objects.filter(pk=aul.pk).update(kind=Audit.Kind.AUL)
    Audit.objects.filter(pk__in=[confident.pk, aul.pk]).update(
        queued_at=timezone.now() - timedelta(seconds=loaded.EVALSERVER_AUDIT_TIME_LIMIT + 31))

    assert audits_sweep() == [confident.pk, aul.pk]
    assert sent == [(task_names.RUN_CONFIDENT_LEARNING_AUDIT, confident.pk),
                    (task_names.RUN_AUL_AUDIT, aul.pk)]


def test_it_lets_only_the_claim_holder_fail_an_audit_and_counts_its_starts(
    loaded: Settings,
) -> None:
    loaded.EVALSERVER_AUDIT_MAX_ATTEMPTS = 2
    audit = _audit(0)
    Audit.objects.filter(pk=audit.pk).update(result={"progress": {"epochs_done": 1}})

    def state() -> tuple[Any, ...]:
        audit.refresh_from_db()
        return (audit.status, audit.claimed_by, audit.attempts, audit.failure_reason,
                audit.result, audit.finished_at is not None)

    assert audit_fail(audit_id=audit.pk, task_id="a", reason="no claim yet") is False
    assert audit_claim(audit_id=audit.pk, task_id="a") is True
    assert state() == ("running", "a", 1, "", {}, False)  # an attempt starts afresh
    assert audit_claim(audit_id=audit.pk, task_id="b") is False  # a duplicate message
    assert audit_claim(audit_id=audit.pk, task_id="a", retry=True) is True
    assert audit_claim(audit_id=audit.pk, task_id="a") is False  # a delivery past the limit
    assert state() == ("running", "a", 2, "", {}, False)
    assert audit_fail(audit_id=audit.pk, task_id="b", reason="not mine") is False
    assert audit_fail(audit_id=audit.pk, task_id="a", reason="the probe diverged") is True
    assert state() == ("failed", "a", 2, "the probe diverged", {}, True)
    assert audit_fail(audit_id=audit.pk, task_id="a", reason="again") is False


def test_it_runs_a_rescore_again_when_asked_for_while_it_ran(
    loaded: Settings, sent: list[tuple[str, int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    job = _rescore(0)
    version_id = job.version_id
    rescore = rescoring.label_set_version_rescore
    asked: list[int] = []

    def asked_again_meanwhile(*, version_id: int, progress: Any = None) -> int:
        if not asked:  # a submission scored on an older version while this one ran
            asked.append(version_id)
            version_rescore_request(version_id=version_id)
        return rescore(version_id=version_id, progress=progress)

    monkeypatch.setattr(rescoring, "label_set_version_rescore", asked_again_meanwhile)

    def state() -> tuple[Any, ...]:
        job.refresh_from_db()
        return job.status, job.claimed_by, job.attempts, job.finished_at is not None

    assert version_rescore_run(version_id=version_id, task_id="first") == "skipped"
    assert state() == ("queued", "", 0, False)  # the request's task finishes it
    benchmark_id = LabelSetVersion.objects.get(pk=version_id).label_set.benchmark_id
    # the rescoring that ran scheduled the boards' significance refresh (after its commit)
    assert sent == [(task_names.RESCORE_VERSION, version_id),
                    (queue.REFRESH_BOARD_SIGNIFICANCE, benchmark_id)]
    assert version_rescore_run(version_id=version_id, task_id="second") == "done"
    assert state() == ("done", "second", 1, True)
    assert job.submissions == 0  # nothing is scored in this test
    assert version_rescore_run(version_id=version_id, task_id="first") == "skipped"
    assert state() == ("done", "second", 1, True)
