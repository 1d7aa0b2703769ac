"""The job tasks' names, as the tests' logs and sent-message lists know them: read from
settings.JOB_TASKS (evalserver/settings/jobs.py), where the web side finds them by kind and
variant (leaderboard/queue.py needs no constant of its own to send one)."""

from __future__ import annotations

from django.conf import settings

SCORE_SUBMISSION = settings.JOB_TASKS["submission"]["predictions"]
RUN_CHECKPOINT = settings.JOB_TASKS["submission"]["checkpoint"]
RUN_CONFIDENT_LEARNING_AUDIT = settings.JOB_TASKS["audit"]["confident_learning"]
RUN_AUL_AUDIT = settings.JOB_TASKS["audit"]["aul"]
RESCORE_VERSION = settings.JOB_TASKS["rescore"][""]
ADD_BUNDLE_UPLOAD = settings.JOB_TASKS["bundle_upload"][""]
