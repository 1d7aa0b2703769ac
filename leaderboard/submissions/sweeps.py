"""The sweeps (Celery beat): submissions and audits whose task was lost or died are queued
again (re-scorings of versions: `review.versions_sweep`)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from leaderboard.submissions.models import Submission
from leaderboard.submissions.services import submission_fail

Status = Submission.Status


def _stale(field: str, now: datetime) -> Q:
    """Submissions whose `field` is older than their kind's task time limit (and a margin)."""
    limits = {Submission.Kind.PREDICTIONS: settings.EVALSERVER_SCORING_TIME_LIMIT,
              Submission.Kind.CHECKPOINT: settings.EVALSERVER_INFERENCE_TIME_LIMIT}
    stale = Q(pk__in=[])
    for kind, limit in limits.items():
        stale |= Q(kind=kind, **{f"{field}__lt": now - timedelta(seconds=limit + 30)})
    return stale


def submissions_sweep() -> list[int]:
    """Re-queue submissions stuck in running past the time limit, and queued ones whose task
    may have been lost; fail those out of attempts. Returns the ids queued again."""
    from leaderboard.submissions.checkpoints import checkpoint_run_queue
    from workers.tasks import score_submission as score_task

    now = timezone.now()
    stuck = Submission.objects.filter(_stale("started", now), status=Status.RUNNING)
    for submission_id in stuck.filter(
            attempts__gte=settings.EVALSERVER_SCORING_MAX_ATTEMPTS).values_list("id", flat=True):
        submission_fail(
            submission_id=submission_id, code="worker_lost",
            reason=f"scoring stopped {settings.EVALSERVER_SCORING_MAX_ATTEMPTS} times "
                   "without finishing (worker crash or time limit)")
    requeued = []
    for submission_id in stuck.values_list("id", flat=True):
        if stuck.filter(id=submission_id).update(
                status=Status.QUEUED, claimed_by="", queued_at=now) == 1:
            requeued.append(submission_id)
    # Queued long ago and never started: its message may have been lost (Redis restarted
    # without persistence). A duplicate message is harmless: only one task can claim.
    lost = Submission.objects.filter(_stale("queued_at", now), status=Status.QUEUED)
    for submission_id in lost.values_list("id", flat=True):
        if lost.filter(id=submission_id).update(queued_at=now) == 1:
            requeued.append(submission_id)
    models = set(Submission.objects.filter(id__in=requeued, kind=Submission.Kind.CHECKPOINT)
                 .values_list("id", flat=True))
    for submission_id in requeued:
        if submission_id in models:
            checkpoint_run_queue(submission_id)  # a model to run first, on the gpu queue
        else:
            score_task.delay(submission_id)
    return requeued


def audits_sweep() -> list[int]:
    """Re-queue audits still running past the audit time limit (their worker died) and queued
    ones whose message may have been lost; returns their ids. Only the claim holder writes, so
    a duplicate message is harmless."""
    from leaderboard.audits.models import Audit
    from leaderboard.audits.services import audit_task_queue

    now = timezone.now()
    stale = now - timedelta(seconds=settings.EVALSERVER_AUDIT_TIME_LIMIT + 30)
    requeued = []
    for audit in Audit.objects.filter(status=Audit.Status.RUNNING, started__lt=stale):
        if Audit.objects.filter(id=audit.pk, status=Audit.Status.RUNNING,
                                started__lt=stale).update(
                status=Audit.Status.QUEUED, claimed_by="", queued_at=now) == 1:
            requeued.append(audit)
    for audit in Audit.objects.filter(status=Audit.Status.QUEUED, queued_at__lt=stale):
        if Audit.objects.filter(id=audit.pk, status=Audit.Status.QUEUED,
                                queued_at__lt=stale).update(queued_at=now) == 1:
            requeued.append(audit)
    for audit in requeued:
        audit_task_queue(audit)
    return [audit.pk for audit in requeued]
