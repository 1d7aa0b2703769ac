"""The one place the web side sends work to the workers.

Tasks are sent by name, so nothing under `leaderboard/` imports the task modules (which import
the services): the names below are those `workers/tasks.py` and `workers/gpu_tasks.py`
register. Which queue each goes to is decided by `CELERY_TASK_ROUTES` in evalserver/settings.py
alone (`send_task` applies the routes), so routing has one source of truth.

Every message is sent when the caller's transaction commits: a worker never looks for a row
or a file that is not there yet, and a rolled-back request sends nothing. A broker that is
down at that moment loses the message, not the request (the commit has happened; the error is
logged): the job stays queued and the sweep (`leaderboard/common/jobs.py`) sends it again.
"""

from __future__ import annotations

from celery import current_app
from django.db import transaction

SCORE_SUBMISSION = "workers.tasks.score_submission"
RUN_CHECKPOINT = "workers.gpu_tasks.run_checkpoint"
RUN_CONFIDENT_LEARNING_AUDIT = "workers.tasks.run_confident_learning_audit"
RUN_AUL_AUDIT = "workers.gpu_tasks.run_aul_audit"
RESCORE_VERSION = "workers.tasks.rescore_version"
# The task of each label-audit kind (leaderboard.audits.models.Audit.Kind values).
AUDIT_TASKS = {"confident_learning": RUN_CONFIDENT_LEARNING_AUDIT, "aul": RUN_AUL_AUDIT}


def task_send(name: str, job_id: int) -> None:
    """Send one task now, to the queue its route names (tests replace this to send nothing).

    No result is kept: a job's state is its row. (Asking for one would also make the sender
    subscribe to the result store first, which retries for 20 s when Redis is down.)"""
    current_app.send_task(name, args=[job_id], ignore_result=True)


def _send_on_commit(name: str, job_id: int) -> None:
    # robust: the request that made the job has committed and must not fail now. `task_send`
    # is looked up when the transaction commits, so a test's replacement of it is used.
    transaction.on_commit(lambda: task_send(name, job_id), robust=True)


def submission_score_queue(*, submission_id: int) -> None:
    """Score an uploaded predictions submission (cpu queue)."""
    _send_on_commit(SCORE_SUBMISSION, submission_id)


def checkpoint_run_queue(*, submission_id: int) -> None:
    """Run a checkpoint submission's model, then score it (gpu queue)."""
    _send_on_commit(RUN_CHECKPOINT, submission_id)


def audit_run_queue(*, audit_id: int, kind: str) -> None:
    """Run a label audit: confident learning on the cpu queue, AUL on the gpu queue."""
    _send_on_commit(AUDIT_TASKS[kind], audit_id)


def version_rescore_queue(*, version_id: int) -> None:
    """Re-score every scored submission on a label-set version (cpu queue)."""
    _send_on_commit(RESCORE_VERSION, version_id)
