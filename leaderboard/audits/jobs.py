"""Label audits as jobs a worker claims (leaderboard/common/jobs.py): confident learning on the
cpu queue, the loss-curve audit on the gpu queue."""

from __future__ import annotations

from django.conf import settings
from django.db.models import Q

from leaderboard import queue
from leaderboard.audits.models import Audit
from leaderboard.common.jobs import JobKind, jobs_sweep


def _requeue(audit_ids: list[int]) -> None:
    kinds = dict(Audit.objects.filter(id__in=audit_ids).values_list("id", "kind"))
    for audit_id in audit_ids:
        queue.audit_run_queue(audit_id=audit_id, kind=kinds[audit_id])


AUDIT_JOBS = JobKind(
    model=Audit, finished_field="finished", what="the audit",
    time_limits=lambda: [(Q(), settings.EVALSERVER_AUDIT_TIME_LIMIT)],
    max_attempts=lambda: settings.EVALSERVER_SCORING_MAX_ATTEMPTS, requeue=_requeue,
    tasks=tuple(queue.AUDIT_TASKS.values()),
    claim_fields={"result": {}})  # an attempt's progress starts again


def audits_sweep() -> list[int]:
    """Periodic (Celery beat): re-queue audits whose worker or message was lost, fail those
    out of attempts; returns the ids queued again."""
    return jobs_sweep(AUDIT_JOBS)
