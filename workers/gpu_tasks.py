"""Celery tasks of the `gpu` queue (settings.CELERY_TASK_ROUTES sends `workers.gpu_tasks.*`
there): work that trains or runs a network. Start such a worker with
`celery -A evalserver worker -Q gpu --concurrency 1`; without a GPU it runs on the CPU.
Thin, like `workers.tasks`: ids in, the services do the work, safe to run twice.
"""

from __future__ import annotations

from celery import shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError

from leaderboard.submissions import checkpoints
from leaderboard.submissions import services as submissions
from workers.tasks import audit_task_run, run_claimed

# -- label audits: the area under the loss curve -------------------------------------------


@shared_task(
    bind=True,
    autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=True,
    max_retries=3,
    soft_time_limit=settings.EVALSERVER_AUDIT_TIME_LIMIT - 1,
    time_limit=settings.EVALSERVER_AUDIT_TIME_LIMIT,
)
def run_aul_audit(self, audit_id: int) -> str:
    """Train the AUL probe on the audit's image set and store the flags (leaderboard
    .audits.services.audit_run): "done", "failed" or "skipped" (claimed or finished)."""
    return audit_task_run(self, audit_id)


# -- checkpoint submissions: run the uploaded model, then score its predictions -------------


@shared_task(
    bind=True,
    # As score_submission: transient trouble is retried and keeps the claim (same task id).
    autoretry_for=(OperationalError, InterfaceError, OSError),
    retry_backoff=True,
    retry_backoff_max=300,
    max_retries=5,
    soft_time_limit=settings.EVALSERVER_INFERENCE_TIME_LIMIT - 1,
    time_limit=settings.EVALSERVER_INFERENCE_TIME_LIMIT,
)
def run_checkpoint(self, submission_id: int) -> str:
    """Run a checkpoint submission's model in the sandbox on every image set with images,
    store its scores as prediction files, then score them: "scored", "failed" or "skipped"."""
    task_id = self.request.id or f"local-{submission_id}"
    if not submissions.submission_claim(submission_id=submission_id, task_id=task_id,
                                        retry=bool(self.request.retries)):
        return "skipped"  # scored, failed, out of attempts, or running under another task

    def infer_then_score() -> bool:
        return (checkpoints.submission_infer(submission_id=submission_id, task_id=task_id)
                and submissions.submission_scores_compute(submission_id=submission_id,
                                                          task_id=task_id))

    return run_claimed(submission_id=submission_id, task_id=task_id, work=infer_then_score,
                       soft_limit=settings.EVALSERVER_INFERENCE_TIME_LIMIT - 1)
