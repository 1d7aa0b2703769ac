"""The claimed-job lifecycle every job model shares (the package's docstring tells the whole
story): its fields (`ClaimedJob`) and its conditional writes, each taking the model.

    queued -> running -> finished (the model's own word: scored, done) | failed
    queued -> cancelled (a kind that offers it: `job_cancel`)
    failed -> queued (asked for again: `job_request_fields`)

Every change is a conditional UPDATE (`filter(...).update(...) == 1`), so a late or duplicated
task never overwrites a newer state. Nothing here knows a domain: the registry of job kinds
(leaderboard/tasks/registry.py) says which models are jobs, and the domains' work functions call
`job_held`
and `job_finish` with their own model.
"""

from __future__ import annotations

from typing import Any, ClassVar

from django.db import models
from django.db.models import F, Q, QuerySet
from django.utils import timezone

QUEUED, RUNNING, FAILED = "queued", "running", "failed"
# A state a kind may offer besides those (a submission's owner cancels it while queued): never
# claimed, since `job_claim` takes only queued rows (and a redelivery of its own running task).
CANCELLED = "cancelled"
# The failure codes that are the server's fault, never the input's (the runner's and the
# sweep's): such a job may be asked for again, and a submission failed so does not count
# against its owner's daily quota (docs/api.md §6.5).
PLATFORM_FAILURE_CODES = ("worker_lost", "time_limit", "internal_error")


class ClaimedJob(models.Model):
    """The lifecycle's fields, the same on every job model. A concrete model declares `status`
    again with its choices, "queued", "running", "failed" and its finished status."""

    # The field a task's argument names the job by (a version's re-scoring: its version).
    JOB_ID_FIELD: ClassVar[str] = "id"

    status = models.CharField(max_length=16, default=QUEUED)
    # When its task was last sent: the sweep sends it again if it never starts.
    queued_at = models.DateTimeField(default=timezone.now)
    # When the current attempt began: the sweep takes over a job running too long.
    started = models.DateTimeField(null=True, blank=True)
    # The Celery task id that holds the claim while running: a redelivered message (same id)
    # may take the claim back, a duplicate message (another id) may not.
    claimed_by = models.CharField(max_length=64, blank=True)
    # Starts so far, retries included (see the package's docstring).
    attempts = models.PositiveIntegerField(default=0)
    # When it finished, done or failed.
    finished_at = models.DateTimeField(null=True, blank=True)
    # Once failed: a short code (the user's error's, or `time_limit`, `worker_lost`,
    # `internal_error`) and plain words for whoever reads it.
    failure_code = models.CharField(max_length=64, blank=True)
    failure_reason = models.TextField(blank=True)

    class Meta:
        abstract = True


def job_rows(model: type[ClaimedJob], job_id: int) -> QuerySet[Any]:
    """The row of this job (a queryset, for conditional updates)."""
    return model._default_manager.filter(**{model.JOB_ID_FIELD: job_id})


def job_claim(model: type[ClaimedJob], *, job_id: int, task_id: str, max_attempts: int,
              retry: bool = False, fields: dict[str, Any] | None = None) -> bool:
    """queued -> running for this task, counting an attempt; a redelivery of the same task
    may re-claim. `retry`: a Celery retry of this task, let in past `max_attempts`.
    `fields` are stored as well (an audit's progress starts again)."""
    claimable = Q(status=QUEUED) | Q(status=RUNNING, claimed_by=task_id)
    rows = job_rows(model, job_id).filter(claimable)
    if not retry:
        rows = rows.filter(attempts__lt=max_attempts)
    return rows.update(status=RUNNING, claimed_by=task_id, started=timezone.now(),
                       attempts=F("attempts") + 1, **(fields or {})) == 1


def job_held(model: type[ClaimedJob], *, job_id: int, task_id: str) -> bool:
    """Whether this task still holds the claim. Inside a transaction the row stays locked
    until it commits, so a result written with it cannot race a sweep or a new claim."""
    return job_rows(model, job_id).select_for_update().filter(
        status=RUNNING, claimed_by=task_id).exists()


def job_finish(model: type[ClaimedJob], *, job_id: int, task_id: str, status: str,
               **fields: Any) -> bool:
    """running -> `status` (the model's finished status) with `fields`, for the claim holder."""
    return job_rows(model, job_id).filter(status=RUNNING, claimed_by=task_id).update(
        status=status, failure_code="", failure_reason="", finished_at=timezone.now(),
        **fields) == 1


def job_fail(model: type[ClaimedJob], *, job_id: int, task_id: str, code: str, reason: str,
             **fields: Any) -> bool:
    """running -> failed with a code, a reason (and `fields`), only while this task holds the
    claim."""
    return job_rows(model, job_id).filter(status=RUNNING, claimed_by=task_id).update(
        status=FAILED, failure_code=code, failure_reason=reason, finished_at=timezone.now(),
        **fields) == 1


def job_cancel(model: type[ClaimedJob], *, job_id: int) -> bool:
    """queued -> cancelled: whichever of this and a worker's claim updates the row first wins,
    so a cancelled job never runs and a claimed one is never cancelled."""
    return job_rows(model, job_id).filter(status=QUEUED).update(
        status=CANCELLED, claimed_by="", finished_at=timezone.now()) == 1


def job_request_fields() -> dict[str, Any]:
    """The fields of a job asked for (again): queued now, nothing started, no attempt used."""
    return {"status": QUEUED, "queued_at": timezone.now(), "started": None, "claimed_by": "",
            "attempts": 0, "finished_at": None, "failure_code": "", "failure_reason": ""}
