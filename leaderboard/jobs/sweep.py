"""The sweep (the package's docstring says which jobs it takes over and why): one rule for
every kind of job, run from Celery beat every EVALSERVER_SWEEP_INTERVAL s per kind
(leaderboard.tasks.cpu.sweep_jobs)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from leaderboard import queue
from leaderboard.common import prometheus
from leaderboard.jobs import broker as jobs_broker
from leaderboard.jobs.kinds import JobKind
from leaderboard.jobs.lifecycle import FAILED, QUEUED, RUNNING

# Past its task's hard time limit a job's pool process has been killed; the margin leaves
# time for the kill to be reported and for clocks that differ a little between hosts.
SWEEP_MARGIN_SECONDS = 30

log = logging.getLogger(__name__)


def _time_limits(kind: JobKind) -> list[tuple[Q, int]]:
    """(which jobs, their task's hard time limit in seconds), for every variant."""
    return [(Q(**{kind.variant_field: variant}) if kind.variant_field else Q(), task.limits()[1])
            for variant, task in kind.tasks.items()]


def _requeue(kind: JobKind, job_ids: list[int]) -> None:
    """Send these jobs' tasks again, each to its variant's task."""
    variants: dict[int, str] = {}
    if kind.variant_field:
        variants = dict(kind.model._default_manager.filter(
            **{f"{kind.model.JOB_ID_FIELD}__in": job_ids}).values_list(
            kind.model.JOB_ID_FIELD, kind.variant_field))
    for job_id in job_ids:
        queue.job_queue(kind=kind.name, job_id=job_id, variant=variants.get(job_id, ""))


def jobs_sweep(kind: JobKind) -> list[int]:
    """Queue again the jobs whose worker or message was lost, fail those out of attempts;
    returns the ids of the jobs sent again (the package's docstring says which)."""
    id_field = kind.model.JOB_ID_FIELD
    now = timezone.now()
    window = now - timedelta(seconds=settings.EVALSERVER_SWEEP_WINDOW)
    started_long_ago, queued_long_ago = Q(pk__in=[]), Q(pk__in=[])
    for which, limit in _time_limits(kind):
        cutoff = now - timedelta(seconds=limit + SWEEP_MARGIN_SECONDS)
        started_long_ago |= which & Q(started__lt=cutoff)
        queued_long_ago |= which & Q(queued_at__lt=cutoff)
    manager = kind.model._default_manager
    unclaimed = manager.filter(status=QUEUED, queued_at__lt=window)
    running = manager.filter(status=RUNNING, started__lt=window)
    # The broker is read only when some job has waited or run past the window.
    broker = (jobs_broker.broker_tasks_read()
              if unclaimed.exists() or running.exclude(started_long_ago).exists() else None)

    stuck_which = started_long_ago
    if broker is not None:
        delivered: list[tuple[int, str]] = []
        for job_id, claim in running.values_list(id_field, "claimed_by"):
            if claim not in broker.task_ids:  # its message is gone: nothing runs it now
                stuck_which |= Q(**{id_field: job_id}, claimed_by=claim)
            elif claim in broker.delivered:
                delivered.append((job_id, claim))
        for job_id, claim in _unheld(delivered):  # delivered to a worker that is gone
            stuck_which |= Q(**{id_field: job_id}, claimed_by=claim)
    stuck = manager.filter(stuck_which, status=RUNNING)
    max_attempts = kind.max_attempts()
    out_of_attempts = stuck.filter(attempts__gte=max_attempts).update(
        status=FAILED, finished_at=now, failure_code="worker_lost",
        failure_reason=f"{kind.what} stopped {max_attempts} times without finishing "
                       "(worker crash or time limit)")
    prometheus.job_failures_count(kind=kind.name, code="worker_lost", count=out_of_attempts)
    if out_of_attempts:
        _after_failed(kind, manager.filter(status=FAILED, finished_at=now,
                                           failure_code="worker_lost"
                                           ).values_list(id_field, flat=True))
    requeued: list[int] = []
    for job_id in stuck.order_by(id_field).values_list(id_field, flat=True):
        if stuck.filter(**{id_field: job_id}).update(
                status=QUEUED, claimed_by="", queued_at=now) == 1:
            requeued.append(job_id)

    if broker is None:
        lost = manager.filter(queued_long_ago, status=QUEUED)
        lost_ids = list(lost.order_by(id_field).values_list(id_field, flat=True))
    else:
        lost = unclaimed
        names = kind.task_names()
        waiting = {job_id for task, job_id in broker.jobs if task in names}
        lost_ids = [job_id for job_id in
                    unclaimed.order_by(id_field).values_list(id_field, flat=True)
                    if job_id not in waiting]
    for job_id in lost_ids:
        if lost.filter(**{id_field: job_id}).update(queued_at=now) == 1:
            requeued.append(job_id)
    if requeued:
        _requeue(kind, requeued)
    prometheus.sweep_requeued_count(kind=kind.name, count=len(requeued))
    return requeued


def _unheld(delivered: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Those (job id, claim) whose task no live worker holds, though its message is delivered
    and unacknowledged: its worker was killed whole. Asked twice (2 s) before a task is taken
    for lost, so a worker slow to answer once is not; none when the workers cannot be asked."""
    claims = {claim for _, claim in delivered}
    for _ in range(2):
        if not claims:
            break
        held = jobs_broker.worker_tasks_held(claims)
        if held is None:
            return []
        claims -= held
    return [(job_id, claim) for job_id, claim in delivered if claim in claims]


def _after_failed(kind: JobKind, job_ids: Iterable[int]) -> None:
    """Tell the kind that the sweep failed these jobs, as its task tells it of one it failed
    (a submission's owner is notified: docs/api.md, "Notifications and webhooks"); a
    notification lost is logged, the failure stays."""
    if kind.after is None:
        return
    for job_id in list(job_ids):
        try:
            kind.after(job_id)
        except Exception:
            log.exception("after %s %s", kind.name, job_id)
