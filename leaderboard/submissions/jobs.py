"""Submissions as jobs a worker claims (leaderboard/common/jobs.py): a predictions upload is
scored on the cpu queue, a checkpoint's model is run (then scored) on the gpu queue."""

from __future__ import annotations

from django.conf import settings
from django.db.models import Q

from leaderboard import queue
from leaderboard.common.jobs import JobKind, jobs_sweep
from leaderboard.submissions.models import Submission


def submission_queue(*, submission_id: int, kind: str) -> None:
    """Send the submission's task once the caller's transaction commits."""
    if kind == Submission.Kind.CHECKPOINT:
        queue.checkpoint_run_queue(submission_id=submission_id)  # a model to run first
    else:
        queue.submission_score_queue(submission_id=submission_id)


def _time_limits() -> list[tuple[Q, int]]:
    return [(Q(kind=Submission.Kind.PREDICTIONS), settings.EVALSERVER_SCORING_TIME_LIMIT),
            (Q(kind=Submission.Kind.CHECKPOINT), settings.EVALSERVER_INFERENCE_TIME_LIMIT)]


def _requeue(submission_ids: list[int]) -> None:
    kinds = dict(Submission.objects.filter(id__in=submission_ids).values_list("id", "kind"))
    for submission_id in submission_ids:
        submission_queue(submission_id=submission_id, kind=kinds[submission_id])


SUBMISSION_JOBS = JobKind(
    model=Submission, finished_field="scored", what="scoring", time_limits=_time_limits,
    max_attempts=lambda: settings.EVALSERVER_SCORING_MAX_ATTEMPTS, requeue=_requeue,
    tasks=(queue.SCORE_SUBMISSION, queue.RUN_CHECKPOINT),
    lost_fields={"failure_code": "worker_lost"})


def submissions_sweep() -> list[int]:
    """Periodic (Celery beat): re-queue submissions whose worker or message was lost, fail
    those out of attempts; returns the ids queued again."""
    return jobs_sweep(SUBMISSION_JOBS)
