"""Celery tasks: thin wrappers that take ids, do their work through the leaderboard services,
and are safe to run twice (tasks are acknowledged late and may be redelivered). Each claims
its job first (leaderboard/common/jobs.py); `retry`, passed to the claim, says whether this
run is a Celery retry after a transient error.

The web side sends these by name (leaderboard/queue.py) and never imports this module.
Routing (settings.CELERY_TASK_ROUTES): everything here goes to the `cpu` queue.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import InterfaceError, OperationalError

from leaderboard.audits import jobs as audit_jobs
from leaderboard.audits import services as audits
from leaderboard.catalog import bundle_uploads_jobs as bundle_upload_jobs
from leaderboard.catalog.hosting import services as bundle_uploads
from leaderboard.common import uploads
from leaderboard.review import jobs as review_jobs
from leaderboard.review.rescoring import services as review
from leaderboard.submissions import jobs as submission_jobs
from leaderboard.submissions import retention, significance
from leaderboard.submissions import services as submissions
from workers.inference.errors import CheckpointError
from workers.scoring.predictions import PredictionError

log = logging.getLogger(__name__)


@shared_task
def ping() -> str:
    """Liveness check: `ping.delay().get(timeout=10) == "pong"` when a cpu worker is up."""
    return "pong"


@shared_task(
    bind=True,
    # Transient trouble (database or storage unavailable) is retried with backoff; the retry
    # keeps the task id, so it may take its own claim back.
    autoretry_for=(OperationalError, InterfaceError, OSError),
    retry_backoff=True,
    retry_backoff_max=300,
    max_retries=5,
    soft_time_limit=settings.EVALSERVER_SCORING_SOFT_TIME_LIMIT,
    time_limit=settings.EVALSERVER_SCORING_TIME_LIMIT,
)
def score_submission(self, submission_id: int) -> str:
    task_id = self.request.id or f"local-{submission_id}"
    if not submissions.submission_claim(submission_id=submission_id, task_id=task_id,
                                        retry=bool(self.request.retries)):
        return "skipped"  # scored, failed, out of attempts, or running under another task
    if settings.EVALSERVER_SCORING_DELAY_MS:
        time.sleep(settings.EVALSERVER_SCORING_DELAY_MS / 1000)
    return run_claimed(
        submission_id=submission_id, task_id=task_id,
        work=lambda: submissions.submission_scores_compute(submission_id=submission_id,
                                                           task_id=task_id),
        soft_limit=settings.EVALSERVER_SCORING_SOFT_TIME_LIMIT)


def run_claimed(*, submission_id: int, task_id: str, work: Callable[[], bool],
                soft_limit: int) -> str:
    """Do a claimed submission's `work`; every way it can fail ends the submission failed
    with a reason (a bad file or model: the user's; anything else: ours), except transient
    database or storage trouble, which is raised for Celery to retry."""
    try:
        done = work()
    except (PredictionError, CheckpointError) as exc:
        where = getattr(exc, "image_set", "")
        submissions.submission_fail(submission_id=submission_id, code=exc.code,
                                    reason=f"{where}: {exc.message}" if where else exc.message,
                                    task_id=task_id)
        return "failed"
    except SoftTimeLimitExceeded:
        submissions.submission_fail(
            submission_id=submission_id, code="time_limit",
            reason=f"scoring took longer than {soft_limit} s", task_id=task_id)
        return "failed"
    except (OperationalError, InterfaceError, OSError):
        raise  # retried by autoretry_for
    except Exception as exc:  # a bug, not the user's fault: say so, keep the details in logs
        log.exception("submission %s failed", submission_id)
        submissions.submission_fail(submission_id=submission_id, code="internal_error",
                                    reason=f"the server could not score this submission "
                                           f"({type(exc).__name__}); the maintainers are told",
                                    task_id=task_id)
        return "failed"
    return "scored" if done else "skipped"


# The sweeps (Celery beat, settings.CELERY_BEAT_SCHEDULE): one lifecycle, one sweep per kind
# of job; each returns the ids it sent again.


@shared_task
def sweep_submissions() -> list[int]:
    """Re-queue submissions whose worker or message was lost; fail those out of attempts."""
    return submission_jobs.submissions_sweep()


@shared_task
def sweep_audits() -> list[int]:
    """Re-queue label audits whose worker or message was lost; fail those out of attempts."""
    return audit_jobs.audits_sweep()


@shared_task
def sweep_versions() -> list[int]:
    """Re-queue re-scorings whose worker or message was lost; fail those out of attempts."""
    return review_jobs.versions_sweep()


@shared_task
def sweep_bundle_uploads() -> list[int]:
    """Re-queue bundle uploads whose worker or message was lost; fail those out of attempts."""
    return bundle_upload_jobs.bundle_uploads_sweep()


@shared_task(autoretry_for=(OperationalError, InterfaceError), retry_backoff=True, max_retries=5)
def refresh_board_significance(benchmark_id: int) -> int:
    """Recompute the stored significance (rank_ub, McNemar p) of a benchmark's public boards
    where their rows changed; idempotent. Returns how many label-set versions were stored."""
    return significance.board_significance_refresh(benchmark_id=benchmark_id)


@shared_task
def remove_failed_files() -> dict[str, list[int]]:
    """Remove the stored files of submissions and the archives of bundle uploads failed
    longer than EVALSERVER_FAILED_FILES_RETENTION_DAYS ago (hourly, from beat); returns
    their ids."""
    return {"submissions": retention.failed_submission_files_remove(),
            "bundle_uploads": bundle_uploads.failed_bundle_upload_files_remove()}


@shared_task
def remove_stray_upload_files() -> list[str]:
    """Remove the temporary files of uploads that a killed web process left in
    EVALSERVER_UPLOAD_TEMP_DIR (hourly, from beat); returns their names."""
    return uploads.upload_temp_files_remove()


@shared_task(
    bind=True,
    autoretry_for=(OperationalError, InterfaceError, OSError),
    retry_backoff=True,
    max_retries=5,
    soft_time_limit=settings.EVALSERVER_RESCORE_TIME_LIMIT - 1,
    time_limit=settings.EVALSERVER_RESCORE_TIME_LIMIT,
)
def rescore_version(self, version_id: int) -> str:
    """Score every scored submission on a new label-set version (idempotent: upserts):
    "done", "failed" or "skipped" (claimed by another task, finished, or asked for again)."""
    task_id = self.request.id or f"local-rescore-{version_id}"
    try:
        return review.version_rescore_run(version_id=version_id, task_id=task_id,
                                          retry=bool(self.request.retries))
    except SoftTimeLimitExceeded:
        review.version_rescore_fail(
            version_id=version_id, task_id=task_id,
            reason=f"the re-scoring took longer than "
                   f"{settings.EVALSERVER_RESCORE_TIME_LIMIT - 1} s")
        return "failed"
    except (OperationalError, InterfaceError, OSError):
        raise  # retried by autoretry_for
    except Exception as exc:
        log.exception("re-scoring of version %s failed", version_id)
        review.version_rescore_fail(
            version_id=version_id, task_id=task_id,
            reason=f"the server could not re-score this version ({type(exc).__name__}); "
                   "the details are in the worker's log")
        return "failed"


def audit_task_run(task: Any, audit_id: int) -> str:
    """The body of both audit tasks (this module's confident learning, `gpu_tasks`' AUL):
    the service runs the audit and stores its own failures; a time limit or a bug fails it
    here with a plain reason (details in the log)."""
    task_id = task.request.id or f"local-audit-{audit_id}"
    try:
        return audits.audit_run(audit_id=audit_id, task_id=task_id,
                                retry=bool(task.request.retries))
    except SoftTimeLimitExceeded:
        audits.audit_fail(audit_id=audit_id, task_id=task_id,
                          reason=f"the audit took longer than "
                                 f"{settings.EVALSERVER_AUDIT_TIME_LIMIT - 1} s")
        return "failed"
    except (OperationalError, InterfaceError):
        raise  # retried by autoretry_for
    except Exception as exc:
        log.exception("label audit %s failed", audit_id)
        audits.audit_fail(audit_id=audit_id, task_id=task_id,
                          reason=f"the server could not run this audit ({type(exc).__name__}: "
                                 f"{exc}); the details are in the worker's log")
        return "failed"


@shared_task(
    bind=True,
    autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=True,
    max_retries=3,
    soft_time_limit=settings.EVALSERVER_AUDIT_TIME_LIMIT - 1,
    time_limit=settings.EVALSERVER_AUDIT_TIME_LIMIT,
)
def run_confident_learning_audit(self, audit_id: int) -> str:
    """Confident learning over the audit's submissions (cpu queue): "done", "failed" or
    "skipped" (already claimed or finished)."""
    return audit_task_run(self, audit_id)


@shared_task(
    bind=True,
    autoretry_for=(OperationalError, InterfaceError, OSError),
    retry_backoff=True,
    max_retries=3,
    soft_time_limit=settings.EVALSERVER_BUNDLE_TIME_LIMIT - 1,
    time_limit=settings.EVALSERVER_BUNDLE_TIME_LIMIT,
)
def add_bundle_upload(self, upload_id: int) -> str:
    """Check and add an uploaded benchmark bundle (idempotent: the loader creates nothing the
    second time): "done", "failed" (the refusal stored) or "skipped" (claimed by another
    task, or finished). A refused bundle is the service's to record; a time limit or a bug
    fails it here with a plain reason (details in the log)."""
    task_id = self.request.id or f"local-bundle-{upload_id}"
    try:
        return bundle_uploads.bundle_upload_run(upload_id=upload_id, task_id=task_id,
                                                retry=bool(self.request.retries))
    except SoftTimeLimitExceeded:
        bundle_uploads.bundle_upload_fail(
            upload_id=upload_id, task_id=task_id, code="time_limit",
            message=f"adding the bundle took longer than "
                    f"{settings.EVALSERVER_BUNDLE_TIME_LIMIT - 1} s")
        return "failed"
    except (OperationalError, InterfaceError, OSError):
        raise  # retried by autoretry_for
    except Exception as exc:
        log.exception("bundle upload %s failed", upload_id)
        bundle_uploads.bundle_upload_fail(
            upload_id=upload_id, task_id=task_id, code="internal_error",
            message=f"the server could not add this bundle ({type(exc).__name__}); the "
                    "details are in the worker's log")
        return "failed"
