"""The Celery tasks of the cpu and notify queues: thin wrappers that take ids, do their work
through the leaderboard services, and are safe to run twice (tasks are acknowledged late and
may be redelivered). The jobs' tasks named `leaderboard.tasks.cpu.*` in settings.JOB_TASKS are
made here from the registry of job kinds (leaderboard/tasks/registry.py) and run by the one
runner (leaderboard/tasks/runner.py); the others are beat's periodic tasks and `ping`.

The web side sends these by name (leaderboard/queue.py) and never imports this package (an
import contract). Routing (settings.CELERY_TASK_ROUTES): the notifications' two tasks and the
accounts' emails (`send_account_email`) go to the
`notify` queue, everything else here to the `cpu` queue.
"""

from __future__ import annotations

import smtplib

from celery import shared_task
from django.core.mail import EmailMultiAlternatives
from django.db import InterfaceError, OperationalError

from leaderboard.catalog.hosting import services as bundle_uploads
from leaderboard.common import prometheus, uploads
from leaderboard.jobs.sweep import jobs_sweep
from leaderboard.submissions import board_significance, retention
from leaderboard.tasks.registry import JOBS
from leaderboard.tasks.runner import job_tasks_register


@shared_task
def ping() -> str:
    """Liveness check: `ping.delay().get(timeout=10) == "pong"` when a cpu worker is up."""
    return "pong"



__getattr__ = job_tasks_register(__name__)


@shared_task(autoretry_for=(OSError, smtplib.SMTPException), retry_backoff=30,
             max_retries=5)
def send_account_email(*, subject: str, body: str, html: str, to: list[str],
                       from_email: str) -> int:
    """An account's email (verification, password reset), rendered by the web side
    (leaderboard/accounts/adapters.py); retried when the mail server is away. Returns the
    number of messages sent (1)."""
    message = EmailMultiAlternatives(subject, body, from_email or None, to)
    if html:
        message.attach_alternative(html, "text/html")
    return message.send()


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
