"""The settings of the jobs a worker claims and of Celery (evalserver/celery.py reads those
starting with CELERY_). Part of the settings package (evalserver/settings/__init__.py): import
`django.conf.settings`, never this module.

docs/operators/settings.md lists the variables.
"""

from __future__ import annotations

import warnings
from typing import Any

from kombu import Queue

from evalserver.settings.environment import REDIS_URL, TIME_ZONE, env

# -- the kinds of job -------------------------------------------------------------------------
# Each kind's tasks by variant (a submission's or an audit's `kind`; "" for a kind with one
# task). The web side sends them by these names (leaderboard/queue.py `job_queue`); the
# workers register them from the registry of job kinds (leaderboard/tasks/registry.py, which says
# each one's
# model, queue, limits, attempts and work); beat sweeps every kind (CELERY_BEAT_SCHEDULE
# below). Plain names, so that reading the settings imports no model.
JOB_TASKS: dict[str, dict[str, str]] = {
    "submission": {"predictions": "leaderboard.tasks.cpu.score_submission",
                   "checkpoint": "leaderboard.tasks.gpu.run_checkpoint"},
    "audit": {"confident_learning": "leaderboard.tasks.cpu.run_confident_learning_audit",
              "aul": "leaderboard.tasks.gpu.run_aul_audit"},
    "rescore": {"": "leaderboard.tasks.cpu.rescore_version"},
    "bundle_upload": {"": "leaderboard.tasks.cpu.add_bundle_upload"},
    # a notification, by its channel (leaderboard/notifications/delivery.py)
    "notification": {"email": "leaderboard.tasks.cpu.send_notification_email",
                     "webhook": "leaderboard.tasks.cpu.deliver_webhook"},
}

# Time limits: the soft one fails the job with "time_limit" and a reason, the hard one kills
# the pool process; a job still running the hard limit (plus 30 s) after it started is taken
# over by the sweep. Without a soft setting, the soft limit is a second before the hard one.
# Scoring an uploaded predictions submission:
EVALSERVER_SCORING_SOFT_TIME_LIMIT: int = env.get_int(
    "EVALSERVER_SCORING_SOFT_TIME_LIMIT", 300, min_value=1
)
EVALSERVER_SCORING_TIME_LIMIT: int = env.get_int("EVALSERVER_SCORING_TIME_LIMIT", 360, min_value=2)
# The whole checkpoint task (every example set, then scoring):
EVALSERVER_INFERENCE_TIME_LIMIT: int = env.get_int(
    "EVALSERVER_INFERENCE_TIME_LIMIT", 1800, min_value=2)
# A re-scoring of every submission on a new version (leaderboard.tasks.cpu.rescore_version):
EVALSERVER_RESCORE_TIME_LIMIT: int = env.get_int(
    "EVALSERVER_RESCORE_TIME_LIMIT", 1800, min_value=2
)
# A label audit (leaderboard.tasks.cpu.run_confident_learning_audit,
# leaderboard.tasks.gpu.run_aul_audit):
EVALSERVER_AUDIT_TIME_LIMIT: int = env.get_int("EVALSERVER_AUDIT_TIME_LIMIT", 1800, min_value=2)
# An uploaded benchmark bundle (leaderboard.tasks.cpu.add_bundle_upload: extract, check, compile,
# load):
EVALSERVER_BUNDLE_TIME_LIMIT: int = env.get_int("EVALSERVER_BUNDLE_TIME_LIMIT", 1800, min_value=2)
# One try of a notification (an email, a webhook POST: its own timeout is shorter).
EVALSERVER_NOTIFY_TIME_LIMIT: int = env.get_int("EVALSERVER_NOTIFY_TIME_LIMIT", 60, min_value=2)

# Starts of a job of each kind before the sweep fails it. Every start counts, a Celery retry
# after a transient error included, but only a new delivery is refused past the limit
# (leaderboard/jobs/). EVALSERVER_SCORING_MAX_ATTEMPTS is the submissions' (scoring, or a
# checkpoint's run); it used to govern every kind, and is still read as the default of the
# others' for this release (deprecated for them: a warning says so when it is used that way).
EVALSERVER_SCORING_MAX_ATTEMPTS: int = env.get_int(
    "EVALSERVER_SCORING_MAX_ATTEMPTS", 3, min_value=1
)


def _scoring_max_attempts_for(name: str) -> int:
    """The deprecated default of another kind's attempts: EVALSERVER_SCORING_MAX_ATTEMPTS,
    with a warning when it is set and `name` is not."""
    if env.raw(name) is None and env.raw("EVALSERVER_SCORING_MAX_ATTEMPTS") is not None:
        warnings.warn(f"EVALSERVER_SCORING_MAX_ATTEMPTS is read for {name}, which is not set: "
                      f"set {name} (the fallback goes in the next release)", FutureWarning,
                      stacklevel=2)
    return EVALSERVER_SCORING_MAX_ATTEMPTS


EVALSERVER_AUDIT_MAX_ATTEMPTS: int = env.get_int(
    "EVALSERVER_AUDIT_MAX_ATTEMPTS",
    _scoring_max_attempts_for("EVALSERVER_AUDIT_MAX_ATTEMPTS"), min_value=1)
EVALSERVER_RESCORE_MAX_ATTEMPTS: int = env.get_int(
    "EVALSERVER_RESCORE_MAX_ATTEMPTS",
    _scoring_max_attempts_for("EVALSERVER_RESCORE_MAX_ATTEMPTS"), min_value=1)
EVALSERVER_BUNDLE_MAX_ATTEMPTS: int = env.get_int(
    "EVALSERVER_BUNDLE_MAX_ATTEMPTS",
    _scoring_max_attempts_for("EVALSERVER_BUNDLE_MAX_ATTEMPTS"), min_value=1)
# A notification's tries: a failed one is sent again later (EVALSERVER_NOTIFY_BACKOFF_MS, then
# twice that, four times...) until this many (evalserver/settings/notifications.py).
EVALSERVER_NOTIFY_MAX_ATTEMPTS: int = env.get_int("EVALSERVER_NOTIFY_MAX_ATTEMPTS", 6, min_value=1)

# The sweep (leaderboard/jobs/sweep.py) runs this often for each kind. A job queued this window
# ago and not claimed, or running that long, whose message the broker no longer holds, is sent
# again: a lost message costs at most about the window plus the interval.
EVALSERVER_SWEEP_INTERVAL: int = env.get_int("EVALSERVER_SWEEP_INTERVAL", 15, min_value=1)
EVALSERVER_SWEEP_WINDOW: int = env.get_int("EVALSERVER_SWEEP_WINDOW", 60, min_value=1)
# Debugging and tests only: milliseconds a scoring task sleeps after its claim, and a re-scoring
# between storing its scores and publishing the version (tests/review/test_publishing.py).
EVALSERVER_SCORING_DELAY_MS: int = env.get_int("EVALSERVER_SCORING_DELAY_MS", 0, min_value=0)

# -- Celery ------------------------------------------------------------------------------------
CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = REDIS_URL
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A worker whose Redis goes away keeps trying to reconnect for as long as it takes (the default
# gives up after 100 tries, about 45 minutes, and the worker exits).
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
# A task is acknowledged when it finishes, not when a worker takes it: a worker that dies
# mid-task leaves it on the queue and another worker runs it again (tasks are idempotent).
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = True
# An unacknowledged task is handed to another worker after this many seconds: it must be
# longer than the longest task (checkpoint inference included).
# TCP keepalive and a bounded connect let a worker notice a Redis host that vanished without
# closing its sockets, and retry instead of hanging on it.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 6 * 60 * 60,
                                   "socket_keepalive": True, "socket_connect_timeout": 5}
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_RESULT_EXPIRES = 24 * 60 * 60
CELERY_TIMEZONE = TIME_ZONE
CELERY_TASK_DEFAULT_QUEUE = "cpu"
# cpu: scoring, re-scoring, bundles, audits; gpu: checkpoints and loss-curve audits; notify:
# emails and webhook POSTs, which wait on other people's servers (a slow receiver holds its
# worker for up to EVALSERVER_WEBHOOK_TIMEOUT a try), so no scoring ever waits behind them.
CELERY_TASK_QUEUES = (Queue("cpu"), Queue("gpu"), Queue("notify"))
# Beat: one scheduler in the deployment, however many beat processes run (a `-B` beat left by
# a killed worker, a second host): a beat sends only while it holds a lock in Redis
# (celery-redbeat, through evalserver/beat.py; the last run times live in Redis too). The
# holder renews it at every tick (at least every CELERY_BEAT_MAX_LOOP_INTERVAL s) and releases
# it when it stops; a holder killed with SIGKILL keeps it until it expires,
# EVALSERVER_BEAT_LOCK_TIMEOUT s after its last tick. A waiting beat tries every 5 s, so it
# takes over within that + 5 s of a SIGKILL: the sweeps pause no longer. Shorter lets a holder
# that stalls that long (a slow Redis) lose the lock for a tick; at least two ticks.
CELERY_BEAT_SCHEDULER = "evalserver.beat.Scheduler"
CELERY_BEAT_MAX_LOOP_INTERVAL = 5
CELERY_REDBEAT_REDIS_URL = REDIS_URL
EVALSERVER_BEAT_LOCK_TIMEOUT: int = env.get_int("EVALSERVER_BEAT_LOCK_TIMEOUT", 30, min_value=10)
CELERY_REDBEAT_LOCK_TIMEOUT = EVALSERVER_BEAT_LOCK_TIMEOUT
# Its own (redbeat would take CELERY_BROKER_TRANSPORT_OPTIONS): a Redis host gone mid-request
# fails the tick after 5 s, tried again a tick later, instead of holding beat for ever.
CELERY_REDBEAT_REDIS_OPTIONS = {"socket_connect_timeout": 5, "socket_timeout": 5}
CELERY_BEAT_SCHEDULE: dict[str, dict[str, Any]] = {
    # The sweep of each kind of job (one task, given the kind's name).
    **{f"sweep-{kind}-jobs": {"task": "leaderboard.tasks.cpu.sweep_jobs", "args": (kind,),
                              "schedule": float(EVALSERVER_SWEEP_INTERVAL)}
       for kind in JOB_TASKS},
    # Not a job sweep: the files of submissions failed longer than the retention period ago.
    "remove-failed-files": {
        "task": "leaderboard.tasks.cpu.remove_failed_files",
        "schedule": 3600.0,
    },
    # the temporary files of uploads a killed web process left (it needs the web's folder)
    "remove-stray-upload-files": {
        "task": "leaderboard.tasks.cpu.remove_stray_upload_files",
        "schedule": 3600.0,
    },
}
CELERY_TASK_ROUTES = {
    # by exact name first (celery's MapRoute): the notifications' tasks, to their own queue
    **{name: {"queue": "notify"} for name in JOB_TASKS["notification"].values()},
    # the accounts' emails (verification, password reset: leaderboard/accounts/adapters.py)
    "leaderboard.tasks.cpu.send_account_email": {"queue": "notify"},
    "leaderboard.tasks.cpu.*": {"queue": "cpu"},
    "leaderboard.tasks.gpu.*": {"queue": "gpu"},
}

# Processes that score a re-scoring's submissions from their stored predictions (a full
# re-score, or an incremental one's affected submissions when there are many; forked from the
# job's process, leaderboard/review/rescoring/pool.py): 2 uses both cores of the reference
# machine; 1 scores in the job's own process.
EVALSERVER_RESCORE_PROCESSES: int = env.get_int("EVALSERVER_RESCORE_PROCESSES", 2, min_value=1)
