"""Celery tasks: thin wrappers that take ids, do their work through the leaderboard services,
and are safe to run twice (tasks are acknowledged late and may be redelivered).

Every job's task (workers/jobs.py, the registry of job kinds) is made here by `job_task` and
runs `job_run`: one runner, one claim convention and one exception ladder for every kind, on
the cpu and notify queues (the tasks named `workers.tasks.*`, registered here) and the gpu
queue (those named `workers.gpu_tasks.*`, registered by workers/gpu_tasks.py).

The web side sends these by name (leaderboard/queue.py) and never imports this module.
Routing (settings.CELERY_TASK_ROUTES): the notifications' two tasks go to the `notify` queue,
everything else here to the `cpu` queue.
"""

from __future__ import annotations

import logging
from time import perf_counter
from typing import Any

from celery import Task, shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import InterfaceError, OperationalError

from leaderboard.catalog.hosting import services as bundle_uploads
from leaderboard.common import prometheus, uploads
from leaderboard.common.storage import StorageUnavailable, storage_error_transient
from leaderboard.jobs.kinds import JobKind, Refusal
from leaderboard.jobs.sweep import jobs_sweep
from leaderboard.submissions import board_significance, retention
from workers.jobs import JOBS

log = logging.getLogger(__name__)

# Transient trouble (the database or the storage unavailable), for every kind: the task is
# retried with backoff, and the retry (same task id) may take its own claim back. An object
# store's outage (botocore's errors are not OSErrors) is raised again as StorageUnavailable,
# an OSError (leaderboard/common/storage.py).
TRANSIENT = (OperationalError, InterfaceError, OSError)


@shared_task
def ping() -> str:
    """Liveness check: `ping.delay().get(timeout=10) == "pong"` when a cpu worker is up."""
    return "pong"


def job_run(kind: JobKind, variant: str, *, job_id: int, task_id: str,
            retry: bool = False) -> str:
    """`_job_run_once`, timed and counted (leaderboard/common/prometheus.py): its duration by
    outcome ("retried": transient trouble raised for Celery to retry); a failure by its
    code."""
    started = perf_counter()
    try:
        outcome = _job_run_once(kind, variant, job_id=job_id, task_id=task_id, retry=retry)
    except BaseException:
        prometheus.job_observe(kind=kind.name, outcome="retried", seconds=perf_counter() - started)
        raise
    if kind.after is not None and outcome in (kind.finished, "failed"):
        try:
            kind.after(job_id)
        except Exception:  # the job is stored; a notification lost is logged, not retried
            log.exception("after %s %s", kind.name, job_id)
    prometheus.job_observe(kind=kind.name, outcome="finished" if outcome == kind.finished
                        else outcome, seconds=perf_counter() - started)
    return outcome


def _job_run_once(kind: JobKind, variant: str, *, job_id: int, task_id: str,
                  retry: bool = False) -> str:
    """Claim the job for this task (`retry`: a Celery retry of it), do its work, store how it
    ended. Returns the kind's finished status ("scored", "done"), "failed", or "skipped" (not
    claimable: finished, failed, out of attempts, running under another task; or the claim
    lost while it ran). Every way the work can fail ends the job failed with a code and a
    reason (the user's error: the kind's refusal; a time limit: "time_limit"; anything else:
    "internal_error", the details in the log), except transient trouble, raised for Celery
    to retry."""
    if not kind.claim(job_id=job_id, task_id=task_id, retry=retry):
        return "skipped"
    task = kind.tasks[variant]
    try:
        done = task.work(job_id=job_id, task_id=task_id)
    except SoftTimeLimitExceeded:
        failure = Refusal("time_limit", f"{kind.what} took longer than {task.limits()[0]} s")
    except Exception as exc:
        refusal = kind.refusal(exc)
        if refusal is None and isinstance(exc, TRANSIENT):
            raise  # retried by autoretry_for
        if refusal is None and storage_error_transient(exc):
            raise StorageUnavailable(f"the storage is unavailable: {exc}") from exc
        if refusal is None:  # a bug, not the user's fault: say so, keep the details in logs
            log.exception("%s %s failed", kind.name, job_id)
            refusal = Refusal("internal_error", f"the server could not {kind.doing} "
                              f"({type(exc).__name__}); the details are in the worker's log")
        failure = refusal
    else:
        return kind.finished if done else "skipped"
    if kind.fail(job_id=job_id, task_id=task_id, code=failure.code, reason=failure.reason,
                 **failure.fields):
        prometheus.job_failures_count(kind=kind.name, code=failure.code)
    return "failed"


def job_task(kind: JobKind, variant: str) -> Any:
    """The Celery task of one variant of a kind, named by settings.JOB_TASKS, with the time
    limits and retries its entry names."""
    soft, hard = kind.tasks[variant].limits()

    @shared_task(name=settings.JOB_TASKS[kind.name][variant], bind=True,
                 autoretry_for=TRANSIENT, retry_backoff=True, retry_backoff_max=300,
                 max_retries=kind.max_retries, soft_time_limit=soft, time_limit=hard)
    def run(self: Task[Any, Any], job_id: int) -> str:
        return job_run(kind, variant, job_id=job_id,
                       task_id=self.request.id or f"local-{kind.name}-{job_id}",
                       retry=bool(self.request.retries))

    return run


def job_tasks_register(module: str) -> dict[str, Any]:
    """Make the tasks of every kind whose name is in this module (`workers.tasks.*`: the cpu
    queue's); returns them by their names' last part (`score_submission`)."""
    return {name.rsplit(".", 1)[1]: job_task(JOBS[kind], variant)
            for kind, names in settings.JOB_TASKS.items()
            for variant, name in names.items() if name.rsplit(".", 1)[0] == module}


_JOB_TASKS = job_tasks_register(__name__)


def __getattr__(name: str) -> Any:
    """A job's task by its name's last part, for code that imports one (tests, benches):
    `from workers.tasks import score_submission`."""
    try:
        return _JOB_TASKS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


@shared_task
def sweep_jobs(kind: str) -> list[int]:
    """Re-queue the jobs of this kind whose worker or message was lost, fail those out of
    attempts; returns the ids sent again (Celery beat, one entry per kind)."""
    return jobs_sweep(JOBS[kind])


@shared_task(autoretry_for=(OperationalError, InterfaceError), retry_backoff=True, max_retries=5)
def refresh_board_significance(benchmark_id: int) -> int:
    """Recompute the stored significance (rank_ub, McNemar p) of a benchmark's public boards
    where their rows changed; idempotent. Returns how many label-set versions were stored."""
    with prometheus.significance_refresh_timed():
        return board_significance.board_significance_refresh(benchmark_id=benchmark_id)


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
