"""Celery tasks: thin wrappers that take ids, do their work through workers/ and the
leaderboard services, and are safe to run twice (tasks are acknowledged late).

Routing (settings.CELERY_TASK_ROUTES): everything here goes to the `cpu` queue.
"""

from celery import shared_task


@shared_task
def ping() -> str:
    """Liveness check: `ping.delay().get(timeout=10) == "pong"` when a cpu worker is up."""
    return "pong"
