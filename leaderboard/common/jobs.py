"""One lifecycle for everything a worker claims: a submission's scoring (or its model's run),
a label audit, the re-scoring of a label-set version.

    queued -> running -> finished (the model's own word: scored, done) | failed

Every change is a conditional UPDATE (`filter(...).update(...) == 1`), so a late or duplicated
task never overwrites a newer state:

- Claim (`job_claim`): queued -> running, keyed on the Celery task id. Tasks are acknowledged
  late, so the message of a worker that died mid-task is delivered again under the same task
  id: that redelivery may take its own claim back; a duplicate message (another id) cannot.
- Attempts: every start counts, a Celery retry after a transient error (the database or the
  storage unavailable; same task id, `retry=True`) included, so `attempts` is how often work
  began. The limit applies to new deliveries only: a retry continues a start the limit already
  let in, while a job that kills its worker every time is delivered again, not retried, and is
  refused after `max_attempts` deliveries (the sweep then fails it). A retry can therefore take
  `attempts` past the limit; that job may finish, but if it is lost it is not queued again.
- Only the task holding the claim writes a result (`job_held` inside the result's
  transaction, then `job_finish`) or a failure with its reason (`job_fail`).
- The sweep (`jobs_sweep`, from Celery beat every EVALSERVER_SWEEP_INTERVAL s) looks for
  jobs whose message or worker was lost, and asks the broker which messages it still holds
  (`leaderboard.queue.broker_tasks_read`: waiting on a queue, or delivered to a worker and not
  yet acknowledged):
  - queued, not claimed EVALSERVER_SWEEP_WINDOW s after it was sent, and no message of its
    kind's tasks names it: its message was lost (a broker down at commit, Redis restarted
    without persistence). It is sent again. One whose message is still waiting (a long queue
    behind busy workers) is never sent again.
  - running for that window, and the message of the task holding its claim is gone: Redis
    lost it, and the worker cancelled the task when its connection dropped
    (CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS). It is queued again, or
    failed once out of attempts.
  - running for that window, its task's message delivered and unacknowledged, and no live
    worker holds that task (`leaderboard.queue.worker_tasks_held`, Celery's remote control,
    asked twice for 1 s; no answer at all means every worker is gone): its worker process was
    killed whole (SIGKILL, its machine lost), and its message would stay unacknowledged for the
    visibility timeout (hours). Queued again, or failed. One whose message is still waiting
    on a queue (given back by a stopping worker, a retry) is left to its redelivery.
  - running its task's hard time limit plus a margin after it started: its worker was lost
    (the pool process is killed at the limit). Queued again, or failed. Only this applies
    when the broker cannot be read or the workers cannot be asked.
  When the broker cannot be read, a queued job is sent again only once it has waited that long
  too. A message sent twice is harmless: only one task can claim.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from leaderboard import queue

QUEUED, RUNNING, FAILED = "queued", "running", "failed"
# Past its task's hard time limit a job's pool process has been killed; the margin leaves
# time for the kill to be reported and for clocks that differ a little between hosts.
SWEEP_MARGIN_SECONDS = 30


class ClaimedJob(models.Model):
    """The lifecycle's fields. A concrete model declares `status` again with its choices,
    "queued", "running", "failed" and its finished status, and adds when it finished."""

    status = models.CharField(max_length=16, default=QUEUED)
    # When its task was last sent: the sweep sends it again if it never starts.
    queued_at = models.DateTimeField(default=timezone.now)
    # When the current attempt began: the sweep takes over a job running too long.
    started = models.DateTimeField(null=True, blank=True)
    # The Celery task id that holds the claim while running: a redelivered message (same id)
    # may take the claim back, a duplicate message (another id) may not.
    claimed_by = models.CharField(max_length=64, blank=True)
    # Starts so far, retries included (see this module's docstring).
    attempts = models.PositiveIntegerField(default=0)
    failure_reason = models.TextField(blank=True)

    class Meta:
        abstract = True


@dataclass(frozen=True)
class JobKind:
    """How the lifecycle reaches one model's jobs; settings are read through the callables
    when used, so a changed setting applies at once."""

    model: type[ClaimedJob]
    # The field that records when a job finished, done or failed.
    finished_field: str
    # The work, as the sweep's failure reason names it: "scoring", "the audit".
    what: str
    # (which jobs, their task's hard time limit in seconds), for every group of jobs.
    time_limits: Callable[[], Sequence[tuple[Q, int]]]
    max_attempts: Callable[[], int]
    # Sends the tasks of these jobs again (through leaderboard.queue).
    requeue: Callable[[list[int]], None]
    # The names of the tasks that take these jobs' ids (to find their messages in the broker).
    tasks: tuple[str, ...]
    # The field a task's argument names the job by.
    id_field: str = "id"
    # Stored as well at every claim (an audit's progress starts again).
    claim_fields: Mapping[str, Any] = field(default_factory=dict)
    # Stored as well when the sweep fails a job out of attempts (a submission's code).
    lost_fields: Mapping[str, Any] = field(default_factory=dict)

    def rows(self, job_id: int) -> QuerySet[Any]:
        return self.model._default_manager.filter(**{self.id_field: job_id})


def job_claim(kind: JobKind, *, job_id: int, task_id: str, retry: bool = False) -> bool:
    """queued -> running for this task, counting an attempt; a redelivery of the same task
    may re-claim. `retry`: a Celery retry of this task, let in past the attempt limit."""
    claimable = Q(status=QUEUED) | Q(status=RUNNING, claimed_by=task_id)
    rows = kind.rows(job_id).filter(claimable)
    if not retry:
        rows = rows.filter(attempts__lt=kind.max_attempts())
    return rows.update(status=RUNNING, claimed_by=task_id, started=timezone.now(),
                       attempts=F("attempts") + 1, **kind.claim_fields) == 1


def job_held(kind: JobKind, *, job_id: int, task_id: str) -> bool:
    """Whether this task still holds the claim. Inside a transaction the row stays locked
    until it commits, so a result written with it cannot race a sweep or a new claim."""
    return kind.rows(job_id).select_for_update().filter(
        status=RUNNING, claimed_by=task_id).exists()


def job_finish(kind: JobKind, *, job_id: int, task_id: str, status: str,
               **fields: Any) -> bool:
    """running -> `status` (the model's finished status) with `fields`, for the claim holder."""
    return kind.rows(job_id).filter(status=RUNNING, claimed_by=task_id).update(
        status=status, failure_reason="", **{kind.finished_field: timezone.now()},
        **fields) == 1


def job_fail(kind: JobKind, *, job_id: int, task_id: str, reason: str, **fields: Any) -> bool:
    """running -> failed with a reason (and `fields`), only while this task holds the claim."""
    return kind.rows(job_id).filter(status=RUNNING, claimed_by=task_id).update(
        status=FAILED, failure_reason=reason, **{kind.finished_field: timezone.now()},
        **fields) == 1


def jobs_sweep(kind: JobKind) -> list[int]:
    """Queue again the jobs whose worker or message was lost, fail those out of attempts;
    returns the ids of the jobs sent again (this module's docstring says which)."""
    now = timezone.now()
    window = now - timedelta(seconds=settings.EVALSERVER_SWEEP_WINDOW)
    started_long_ago, queued_long_ago = Q(pk__in=[]), Q(pk__in=[])
    for which, limit in kind.time_limits():
        cutoff = now - timedelta(seconds=limit + SWEEP_MARGIN_SECONDS)
        started_long_ago |= which & Q(started__lt=cutoff)
        queued_long_ago |= which & Q(queued_at__lt=cutoff)
    manager = kind.model._default_manager
    unclaimed = manager.filter(status=QUEUED, queued_at__lt=window)
    running = manager.filter(status=RUNNING, started__lt=window)
    # The broker is read only when some job has waited or run past the window.
    broker = (queue.broker_tasks_read()
              if unclaimed.exists() or running.exclude(started_long_ago).exists() else None)

    stuck_which = started_long_ago
    if broker is not None:
        delivered: list[tuple[int, str]] = []
        for job_id, claim in running.values_list(kind.id_field, "claimed_by"):
            if claim not in broker.task_ids:  # its message is gone: nothing runs it now
                stuck_which |= Q(**{kind.id_field: job_id}, claimed_by=claim)
            elif claim in broker.delivered:
                delivered.append((job_id, claim))
        for job_id, claim in _unheld(delivered):  # delivered to a worker that is gone
            stuck_which |= Q(**{kind.id_field: job_id}, claimed_by=claim)
    stuck = manager.filter(stuck_which, status=RUNNING)
    max_attempts = kind.max_attempts()
    stuck.filter(attempts__gte=max_attempts).update(
        status=FAILED, **{kind.finished_field: now}, **kind.lost_fields,
        failure_reason=f"{kind.what} stopped {max_attempts} times without finishing "
                       "(worker crash or time limit)")
    requeued: list[int] = []
    for job_id in stuck.order_by(kind.id_field).values_list(kind.id_field, flat=True):
        if stuck.filter(**{kind.id_field: job_id}).update(
                status=QUEUED, claimed_by="", queued_at=now) == 1:
            requeued.append(job_id)

    if broker is None:
        lost = manager.filter(queued_long_ago, status=QUEUED)
        lost_ids = list(lost.order_by(kind.id_field).values_list(kind.id_field, flat=True))
    else:
        lost = unclaimed
        waiting = {job_id for task, job_id in broker.jobs if task in kind.tasks}
        lost_ids = [job_id for job_id in
                    unclaimed.order_by(kind.id_field).values_list(kind.id_field, flat=True)
                    if job_id not in waiting]
    for job_id in lost_ids:
        if lost.filter(**{kind.id_field: job_id}).update(queued_at=now) == 1:
            requeued.append(job_id)
    if requeued:
        kind.requeue(requeued)
    return requeued


def _unheld(delivered: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Those (job id, claim) whose task no live worker holds, though its message is delivered
    and unacknowledged: its worker was killed whole. Asked twice (2 s) before a task is taken
    for lost, so a worker slow to answer once is not; none when the workers cannot be asked."""
    claims = {claim for _, claim in delivered}
    for _ in range(2):
        if not claims:
            break
        held = queue.worker_tasks_held(claims)
        if held is None:
            return []
        claims -= held
    return [(job_id, claim) for job_id, claim in delivered if claim in claims]


def job_request_fields() -> dict[str, Any]:
    """The fields of a job asked for (again): queued now, nothing started, no attempt used."""
    return {"status": QUEUED, "queued_at": timezone.now(), "started": None, "claimed_by": "",
            "attempts": 0, "failure_reason": ""}
