"""Uploaded bundles as jobs a worker claims (leaderboard/common/jobs.py), on the cpu queue."""

from __future__ import annotations

from django.conf import settings
from django.db.models import Q

from leaderboard import queue
from leaderboard.catalog.models import BundleUpload
from leaderboard.common.jobs import JobKind, jobs_sweep


def _requeue(upload_ids: list[int]) -> None:
    for upload_id in upload_ids:
        queue.bundle_upload_queue(upload_id=upload_id)


BUNDLE_UPLOAD_JOBS = JobKind(
    model=BundleUpload, finished_field="finished", what="adding the bundle",
    time_limits=lambda: [(Q(), settings.EVALSERVER_BUNDLE_TIME_LIMIT)],
    max_attempts=lambda: settings.EVALSERVER_SCORING_MAX_ATTEMPTS, requeue=_requeue,
    tasks=(queue.ADD_BUNDLE_UPLOAD,),
    lost_fields={"error_code": "worker_lost", "error_file": "", "error_field": ""})


def bundle_uploads_sweep() -> list[int]:
    """Periodic (Celery beat): re-queue uploads whose worker or message was lost, fail those
    out of attempts; returns the ids queued again."""
    return jobs_sweep(BUNDLE_UPLOAD_JOBS)
