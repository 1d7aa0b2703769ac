"""The re-scoring of a label-set version as a job a worker claims (leaderboard/common/jobs.py),
named by its version's id."""

from __future__ import annotations

from django.conf import settings
from django.db.models import Q

from leaderboard import queue
from leaderboard.common.jobs import JobKind, job_request_fields, jobs_sweep
from leaderboard.review.models import VersionRescore


def version_rescore_request(*, version_id: int) -> None:
    """Every scored submission must be (re-)scored on this version: a job recorded in the
    caller's transaction, sent after it commits, and sent again by the sweep if it is lost.
    Asked for while it runs, it is queued anew: the running task may no longer finish it,
    and the new one re-scores with what changed meanwhile."""
    VersionRescore.objects.update_or_create(
        version_id=version_id, defaults={**job_request_fields(), "finished_at": None})
    queue.version_rescore_queue(version_id=version_id)


def _requeue(version_ids: list[int]) -> None:
    for version_id in version_ids:
        queue.version_rescore_queue(version_id=version_id)


VERSION_RESCORE_JOBS = JobKind(
    model=VersionRescore, finished_field="finished_at", what="the re-scoring",
    time_limits=lambda: [(Q(), settings.EVALSERVER_RESCORE_TIME_LIMIT)],
    max_attempts=lambda: settings.EVALSERVER_SCORING_MAX_ATTEMPTS, requeue=_requeue,
    tasks=(queue.RESCORE_VERSION,), id_field="version_id")


def versions_sweep() -> list[int]:
    """Periodic (Celery beat): re-queue re-scorings whose worker or message was lost (a broker
    down when the version committed), fail those out of attempts; returns the version ids
    queued again."""
    return jobs_sweep(VERSION_RESCORE_JOBS)
