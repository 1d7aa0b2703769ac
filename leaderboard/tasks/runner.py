"""The one runner of every job's task: `job_task` makes the Celery task of a kind's variant
(named by settings.JOB_TASKS, with the limits and retries of its registry entry,
leaderboard/tasks/registry.py), and each runs `job_run`: one claim convention and one
exception ladder for every kind. The cpu/notify queues' tasks are registered by
leaderboard/tasks/cpu.py, the gpu queue's by leaderboard/tasks/gpu.py (`job_tasks_register`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from time import perf_counter
from typing import Any

from celery import Task, shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import InterfaceError, OperationalError

from leaderboard.common import prometheus
from leaderboard.common.storage import StorageUnavailable, storage_error_transient
from leaderboard.jobs.kinds import JobKind, Refusal
from leaderboard.tasks.registry import JOBS

log = logging.getLogger(__name__)

# Transient trouble (the database or the storage unavailable), for every kind: the task is
# retried with backoff, and the retry (same task id) may take its own claim back. An object
# store's outage (botocore's errors are not OSErrors) is raised again as StorageUnavailable,
# an OSError (leaderboard/common/storage.py).
TRANSIENT = (OperationalError, InterfaceError, OSError)


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


def job_tasks_register(module: str) -> Callable[[str], Any]:
    """Make the tasks of every kind whose name is in `module` (`leaderboard.tasks.cpu.*`: the
    cpu and notify queues'); returns the module's `__getattr__`, which gives code that imports
    one (tests, benches) a task by its name's last part (`from leaderboard.tasks.cpu import
    score_submission`)."""
    tasks = {name.rsplit(".", 1)[1]: job_task(JOBS[kind], variant)
             for kind, names in settings.JOB_TASKS.items()
             for variant, name in names.items() if name.rsplit(".", 1)[0] == module}

    def module_getattr(name: str) -> Any:
        try:
            return tasks[name]
        except KeyError:
            raise AttributeError(f"module {module!r} has no attribute {name!r}") from None

    return module_getattr
