"""What the registry of job kinds (leaderboard/tasks/registry.py) says of each kind: one
`JobKind` entry,
with a `JobTask` per variant. The types are generic (a model, callables), so the lifecycle,
the sweep and the runner (leaderboard/tasks/runner.py `job_run`) read every kind the same way."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from leaderboard.jobs.lifecycle import ClaimedJob, job_claim, job_fail


@dataclass(frozen=True)
class Refusal:
    """A job that failed for its input (the user's error), as it is stored."""

    code: str
    reason: str
    # More of the model's fields to store (a bundle refusal's file and field).
    fields: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class JobTask:
    """The Celery task that runs one variant of a kind's jobs. Its name is
    `settings.JOB_TASKS[kind][variant]` (the web side sends it by that name)."""

    # "cpu", "gpu" or "notify": the queue settings.CELERY_TASK_ROUTES sends its name to
    # (checked by tests/tasks/test_registry.py); a gpu task is registered by
    # leaderboard/tasks/gpu.py.
    queue: str
    # The work, on a claimed job: work(job_id=, task_id=) -> True once the job is finished
    # (its result and `job_finish` written together, under `job_held`), False when the claim
    # was lost meanwhile. Raises for a failure (the kind's `refusal` or the runner's rules).
    work: Callable[..., bool]
    # The settings of its hard time limit (the pool process is killed) and of its soft one
    # (the job fails with "time_limit"); without one, the soft limit is a second less.
    time_limit: str
    soft_time_limit: str = ""

    def limits(self) -> tuple[int, int]:
        """(soft, hard) time limits in seconds, read from the settings now."""
        hard = int(getattr(settings, self.time_limit))
        soft = int(getattr(settings, self.soft_time_limit)) if self.soft_time_limit else hard - 1
        return soft, hard


def _no_refusal(exc: Exception) -> Refusal | None:
    return None


@dataclass(frozen=True)
class JobKind:
    """One kind of job: its model, its tasks, its settings, and what each outcome stores."""

    name: str  # a key of settings.JOB_TASKS (sent with leaderboard.queue.job_queue)
    model: type[ClaimedJob]
    # The work in failure reasons: "scoring took longer than ...", "the audit stopped ...".
    what: str
    # What the server could not do, in an internal error's reason: "score this submission".
    doing: str
    # The model's finished status, also what its task returns then ("scored", "done").
    finished: str
    # Its tasks by variant: the value of the row's `variant_field`, "" when it has one task.
    tasks: Mapping[str, JobTask]
    # The setting of how many starts a job gets (EVALSERVER_<KIND>_MAX_ATTEMPTS).
    max_attempts_setting: str
    variant_field: str = ""
    # Celery retries after a transient error (exponential backoff, at most 300 s apart).
    max_retries: int = 5
    # The user's error among the exceptions of its work, as stored; None: not the user's.
    refusal: Callable[[Exception], Refusal | None] = _no_refusal
    # Stored as well at every claim (an audit's progress starts again).
    claim_fields: Mapping[str, Any] = field(default_factory=dict)
    # Told the job's id once its task finished or failed it, after the commit (the events
    # of leaderboard/notifications/); its errors are logged, never the job's.
    after: Callable[[int], None] | None = None

    def task_names(self) -> tuple[str, ...]:
        return tuple(settings.JOB_TASKS[self.name][variant] for variant in self.tasks)

    def max_attempts(self) -> int:
        return int(getattr(settings, self.max_attempts_setting))

    def claim(self, *, job_id: int, task_id: str, retry: bool = False) -> bool:
        """queued -> running for this task (`leaderboard.jobs.lifecycle.job_claim`)."""
        return job_claim(self.model, job_id=job_id, task_id=task_id, retry=retry,
                         max_attempts=self.max_attempts(), fields=dict(self.claim_fields))

    def fail(self, *, job_id: int, task_id: str, code: str, reason: str,
             **fields: Any) -> bool:
        """running -> failed, only while this task holds the claim."""
        return job_fail(self.model, job_id=job_id, task_id=task_id, code=code, reason=reason,
                        **fields)
