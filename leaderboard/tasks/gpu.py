"""Celery tasks of the `gpu` queue (settings.CELERY_TASK_ROUTES sends `leaderboard.tasks.gpu.*`
there): work that trains or runs a network. Start such a worker with
`celery -A evalserver worker -Q gpu --concurrency 1`; without a GPU it runs on the CPU.

The jobs' tasks named `leaderboard.tasks.gpu.*` in settings.JOB_TASKS (a checkpoint
submission's model run, then its scoring; the AUL label audit), made from the registry of job
kinds (leaderboard/tasks/registry.py) and run by the same runner as the cpu queue's
(leaderboard/tasks/runner.py `job_run`).
"""

from __future__ import annotations

from leaderboard.tasks.runner import job_tasks_register

__getattr__ = job_tasks_register(__name__)
