"""The one place the web side sends work to the workers.

Tasks are sent by name, so nothing under `leaderboard/` imports the task modules (which import
the services). A job's task is named by its kind and variant in `settings.JOB_TASKS`
(evalserver/settings/jobs.py), which the workers register from the registry of job kinds
(leaderboard/tasks/registry.py). Which queue each goes to is decided by `CELERY_TASK_ROUTES` alone
(`send_task` applies the routes), so routing has one source of truth.

Every message is sent when the caller's transaction commits: a worker never looks for a row
or a file that is not there yet, and a rolled-back request sends nothing. A broker that is
down at that moment loses the message, not the request (the commit has happened; the error is
logged): the job stays queued and the sweep (`leaderboard/jobs/sweep.py`) sends it again.
"""

from __future__ import annotations

from celery import current_app
from django.conf import settings
from django.db import transaction

# The one task that is not a job's (settings.JOB_TASKS names those, by kind and variant).
REFRESH_BOARD_SIGNIFICANCE = "leaderboard.tasks.cpu.refresh_board_significance"
# The accounts' emails (verification, password reset: leaderboard/accounts/adapters.py), sent by
# the notify queue's worker (settings.CELERY_TASK_ROUTES).
SEND_ACCOUNT_EMAIL = "leaderboard.tasks.cpu.send_account_email"


def task_send(name: str, job_id: int, *, countdown: float = 0) -> None:
    """Send one task, to the queue its route names, to run now or `countdown` seconds from
    now (tests replace this to send nothing).

    No result is kept: a job's state is its row. (Asking for one would also make the sender
    subscribe to the result store first, which retries for 20 s when Redis is down.)"""
    current_app.send_task(name, args=[job_id], ignore_result=True,
                          countdown=countdown or None)


def _send_on_commit(name: str, job_id: int, *, countdown: float = 0) -> None:
    # robust: the request that made the job has committed and must not fail now. `task_send`
    # is looked up when the transaction commits, so a test's replacement of it is used.
    transaction.on_commit(lambda: task_send(name, job_id, countdown=countdown), robust=True)


def job_task_name(*, kind: str, variant: str = "") -> str:
    """The task that runs jobs of this kind (and variant: a submission's or an audit's own
    `kind`; "" for a kind with one task)."""
    return str(settings.JOB_TASKS[kind][variant])


def job_queue(*, kind: str, job_id: int, variant: str = "", countdown: float = 0) -> None:
    """Send the task of a job of this kind (`settings.JOB_TASKS`) once the caller's
    transaction commits: a submission is scored (cpu) or its model run first (gpu), an audit
    runs on the cpu (confident learning) or the gpu (AUL) queue, by their `kind`. `countdown`:
    to run that many seconds after the commit (a notification's next try)."""
    _send_on_commit(job_task_name(kind=kind, variant=variant), job_id, countdown=countdown)


def board_significance_queue(*, benchmark_id: int, countdown: float = 0) -> None:
    """Recompute the stored significance of a benchmark's public boards (cpu queue), now or
    `countdown` seconds after the commit."""
    _send_on_commit(REFRESH_BOARD_SIGNIFICANCE, benchmark_id, countdown=countdown)


def message_send(name: str, kwargs: dict[str, object]) -> None:
    """Send one task that takes its whole message, not a row's id (tests replace this to send
    nothing)."""
    current_app.send_task(name, kwargs=kwargs, ignore_result=True)


def account_email_queue(*, subject: str, body: str, html: str, to: list[str],
                        from_email: str) -> None:
    """Send an account's email (rendered already: the task needs neither the request nor
    the user) by the notify queue's worker once the caller's transaction commits. The message
    is the task's arguments: a lost message is a lost email, which the person asks for again
    (a verification or reset link has no row of its own to sweep)."""
    message: dict[str, object] = {"subject": subject, "body": body, "html": html, "to": to,
                                  "from_email": from_email}
    transaction.on_commit(lambda: message_send(SEND_ACCOUNT_EMAIL, message), robust=True)
