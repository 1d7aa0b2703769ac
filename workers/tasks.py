"""Celery tasks: thin wrappers that take ids, do their work through the leaderboard services,
and are safe to run twice (tasks are acknowledged late and may be redelivered).

Routing (settings.CELERY_TASK_ROUTES): everything here goes to the `cpu` queue.
"""

from __future__ import annotations

import logging
import time

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import InterfaceError, OperationalError

from leaderboard.services import submissions
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
    retry = bool(self.request.retries)  # a retry after a transient error, not a new attempt
    if not submissions.submission_claim(submission_id=submission_id, task_id=task_id,
                                        retry=retry):
        return "skipped"  # scored, failed, or running under another task
    if settings.EVALSERVER_SCORING_DELAY_MS:
        time.sleep(settings.EVALSERVER_SCORING_DELAY_MS / 1000)
    try:
        done = submissions.submission_score(submission_id=submission_id, task_id=task_id)
    except PredictionError as exc:
        where = getattr(exc, "image_set", "")
        submissions.submission_fail(submission_id=submission_id, code=exc.code,
                                    reason=f"{where}: {exc.message}" if where else exc.message,
                                    task_id=task_id)
        return "failed"
    except SoftTimeLimitExceeded:
        submissions.submission_fail(
            submission_id=submission_id, code="time_limit",
            reason=f"scoring took longer than {settings.EVALSERVER_SCORING_SOFT_TIME_LIMIT} s",
            task_id=task_id)
        return "failed"
    except (OperationalError, InterfaceError, OSError):
        raise  # retried by autoretry_for
    except Exception as exc:  # a bug, not the user's fault: say so, keep the details in logs
        log.exception("scoring submission %s failed", submission_id)
        submissions.submission_fail(submission_id=submission_id, code="internal_error",
                                    reason=f"the server could not score this submission "
                                           f"({type(exc).__name__}); the maintainers are told",
                                    task_id=task_id)
        return "failed"
    return "scored" if done else "skipped"


@shared_task
def sweep_submissions() -> list[int]:
    """Periodic (Celery beat): re-queue submissions stuck in running or lost while queued."""
    return submissions.submissions_sweep()


@shared_task
def sweep_versions() -> list[int]:
    """Periodic (Celery beat): re-queue re-scorings of versions that never finished."""
    from leaderboard.services import review

    return review.versions_sweep()


@shared_task(
    autoretry_for=(OperationalError, InterfaceError, OSError),
    retry_backoff=True,
    max_retries=5,
    soft_time_limit=settings.EVALSERVER_RESCORE_TIME_LIMIT - 1,
    time_limit=settings.EVALSERVER_RESCORE_TIME_LIMIT,
)
def rescore_version(version_id: int) -> int:
    """Score every scored submission on a new label-set version (idempotent: upserts)."""
    from leaderboard.services import review

    return review.label_set_version_rescore(version_id=version_id)
