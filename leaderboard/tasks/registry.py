"""The registry of job kinds: for each, one entry naming its model, its tasks (their queue and
time limits, by variant; their names are settings.JOB_TASKS'), its attempts setting, its
Celery retries, its work and how its user's errors are stored. The rest is the same for every
kind: the lifecycle and the sweep (leaderboard/jobs/), the runner and its tasks
(leaderboard/tasks/runner.py `job_run`, registered from here; gpu ones by
leaderboard/tasks/gpu.py), the
sending (leaderboard/queue.py `job_queue`), the beat entries (evalserver/settings/jobs.py).

It sits above every domain (it imports their models and work functions; nothing under
leaderboard/ imports it). tests/tasks/test_registry.py checks each entry is complete.

Adding a kind: its model (a `ClaimedJob`) and migration, its task names and its settings in
evalserver/settings/jobs.py, its work function in its domain (`work(job_id=, task_id=)`: writes
its result with `job_held`/`job_finish` in one transaction, raises for a failure), an entry
below, and a test of its work.

The work functions are called through their modules, so that a test's replacement of one
(monkeypatch) is what runs.
"""

from __future__ import annotations

import time

from django.conf import settings

from leaderboard.audits import services as audits
from leaderboard.audits.inputs import AuditError
from leaderboard.audits.models import Audit
from leaderboard.catalog.bundle_loading import BundleConflictError
from leaderboard.catalog.hosting import services as bundle_uploads
from leaderboard.catalog.models import BundleUpload
from leaderboard.common import prometheus
from leaderboard.jobs.kinds import JobKind, JobTask, Refusal
from leaderboard.notifications import jobs as notifications_jobs
from leaderboard.notifications import services as notifications
from leaderboard.notifications.models import NotificationDelivery
from leaderboard.review.models import VersionRescore
from leaderboard.review.rescoring import services as rescoring
from leaderboard.submissions import checkpoints
from leaderboard.submissions import services as submissions
from leaderboard.submissions.models import Submission
from workers.inference.errors import CheckpointError
from workers.scoring.bundles import BundleError
from workers.scoring.datasets import DataError
from workers.scoring.predictions import PredictionError

# -- submissions: a predictions upload is scored (cpu), a checkpoint's model run first (gpu)


def _score(*, job_id: int, task_id: str) -> bool:
    if settings.EVALSERVER_SCORING_DELAY_MS:  # tests and debugging: a scoring in progress
        time.sleep(settings.EVALSERVER_SCORING_DELAY_MS / 1000)
    return _scored_observe(job_id, submissions.submission_scores_compute(
        submission_id=job_id, task_id=task_id))


def _infer_then_score(*, job_id: int, task_id: str) -> bool:
    return _scored_observe(job_id, (
        checkpoints.submission_infer(submission_id=job_id, task_id=task_id)
        and submissions.submission_scores_compute(submission_id=job_id, task_id=task_id)))


def _scored_observe(job_id: int, done: bool) -> bool:
    """Once scored: its submit-to-scored latency, by benchmark (leaderboard/common/
    prometheus.py)."""
    if done:
        slug, created, finished = Submission.objects.values_list(
            "benchmark__slug", "created", "finished_at").get(id=job_id)
        prometheus.submission_scored_observe(
            benchmark=slug, seconds=((finished or created) - created).total_seconds())
    return done


def _submission_refusal(exc: Exception) -> Refusal | None:
    """A bad predictions file or model: its code, and the example set it was scored on."""
    if isinstance(exc, PredictionError | CheckpointError):
        where = getattr(exc, "example_set", "")
        return Refusal(exc.code, f"{where}: {exc.message}" if where else exc.message)
    return None


SUBMISSION = JobKind(
    name="submission", model=Submission, what="scoring", doing="score this submission",
    finished=Submission.Status.SCORED.value, variant_field="kind",
    tasks={Submission.Kind.PREDICTIONS.value: JobTask(
               queue="cpu", work=_score, time_limit="EVALSERVER_SCORING_TIME_LIMIT",
               soft_time_limit="EVALSERVER_SCORING_SOFT_TIME_LIMIT"),
           Submission.Kind.CHECKPOINT.value: JobTask(
               queue="gpu", work=_infer_then_score,
               time_limit="EVALSERVER_INFERENCE_TIME_LIMIT")},
    max_attempts_setting="EVALSERVER_SCORING_MAX_ATTEMPTS", max_retries=5,
    refusal=_submission_refusal,
    after=lambda job_id: notifications.submission_outcome_notify(submission_id=job_id))

# -- label audits: confident learning (cpu), the area under the loss curve (gpu)


def _audit(*, job_id: int, task_id: str) -> bool:
    return audits.audit_run(audit_id=job_id, task_id=task_id)


def _audit_refusal(exc: Exception) -> Refusal | None:
    """Inputs the audit cannot use (its own checks, the data files, the core's)."""
    if isinstance(exc, AuditError):
        return Refusal(exc.code, exc.message)
    if isinstance(exc, DataError):
        return Refusal("data_error", str(exc))
    if isinstance(exc, ValueError):
        return Refusal("invalid_input", str(exc))
    return None


AUDIT = JobKind(
    name="audit", model=Audit, what="the audit", doing="run this audit",
    finished=Audit.Status.DONE.value, variant_field="kind",
    tasks={Audit.Kind.CONFIDENT_LEARNING.value: JobTask(
               queue="cpu", work=_audit, time_limit="EVALSERVER_AUDIT_TIME_LIMIT"),
           Audit.Kind.AUL.value: JobTask(
               queue="gpu", work=_audit, time_limit="EVALSERVER_AUDIT_TIME_LIMIT")},
    max_attempts_setting="EVALSERVER_AUDIT_MAX_ATTEMPTS", max_retries=3,
    refusal=_audit_refusal,
    claim_fields={"result": {}})  # an attempt's progress starts again

# -- the re-scoring of a label-set version (named by its version's id)


def _rescore(*, job_id: int, task_id: str) -> bool:
    return rescoring.version_rescore_run(version_id=job_id, task_id=task_id)


RESCORE = JobKind(
    name="rescore", model=VersionRescore, what="the re-scoring", doing="re-score this version",
    finished=VersionRescore.Status.DONE.value,
    tasks={"": JobTask(queue="cpu", work=_rescore, time_limit="EVALSERVER_RESCORE_TIME_LIMIT")},
    max_attempts_setting="EVALSERVER_RESCORE_MAX_ATTEMPTS", max_retries=5,
    after=lambda job_id: notifications.version_scores_changed_notify(version_id=job_id))

# -- an uploaded benchmark bundle


def _add_bundle(*, job_id: int, task_id: str) -> bool:
    return bundle_uploads.bundle_upload_run(upload_id=job_id, task_id=task_id)


def _bundle_refusal(exc: Exception) -> Refusal | None:
    """A refused bundle (its code, message, file and field), or a conflict with what is
    loaded (the slug exists, ...)."""
    if isinstance(exc, BundleError):
        # `message` without the "file: field:" prefix of str(exc): those have their fields
        return Refusal(exc.code, exc.message,
                       {"error_file": exc.file[:500], "error_field": exc.field[:200]})
    if isinstance(exc, BundleConflictError):
        return Refusal(exc.code, str(exc))
    return None


BUNDLE_UPLOAD = JobKind(
    name="bundle_upload", model=BundleUpload, what="adding the bundle",
    doing="add this bundle", finished=BundleUpload.Status.DONE.value,
    tasks={"": JobTask(queue="cpu", work=_add_bundle, time_limit="EVALSERVER_BUNDLE_TIME_LIMIT")},
    max_attempts_setting="EVALSERVER_BUNDLE_MAX_ATTEMPTS", max_retries=3,
    refusal=_bundle_refusal)

# -- a notification: an email, or a POST to a webhook (its own retries with a growing wait:
# leaderboard/notifications/jobs.py)


def _send_email(*, job_id: int, task_id: str) -> bool:
    return notifications_jobs.email_send(delivery_id=job_id, task_id=task_id)


def _deliver_webhook(*, job_id: int, task_id: str) -> bool:
    return notifications_jobs.webhook_deliver(delivery_id=job_id, task_id=task_id)


def _notification_refusal(exc: Exception) -> Refusal | None:
    if isinstance(exc, notifications_jobs.DeliveryFailed):
        return Refusal(exc.code, exc.reason)
    return None


NOTIFICATION = JobKind(
    name="notification", model=NotificationDelivery, what="the notification",
    doing="send this notification", finished=NotificationDelivery.Status.DELIVERED.value,
    variant_field="channel",
    tasks={"email": JobTask(queue="notify", work=_send_email,
                            time_limit="EVALSERVER_NOTIFY_TIME_LIMIT"),
           "webhook": JobTask(queue="notify", work=_deliver_webhook,
                              time_limit="EVALSERVER_NOTIFY_TIME_LIMIT")},
    max_attempts_setting="EVALSERVER_NOTIFY_MAX_ATTEMPTS", max_retries=3,
    refusal=_notification_refusal)

JOBS: dict[str, JobKind] = {kind.name: kind for kind in (SUBMISSION, AUDIT, RESCORE,
                                                           BUNDLE_UPLOAD, NOTIFICATION)}
