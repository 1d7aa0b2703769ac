"""One lifecycle for everything a worker claims: a submission's scoring (or its model's run),
a label audit, the re-scoring of a label-set version, an uploaded bundle. Where each piece is:

- `lifecycle`: the fields every job model shares (`ClaimedJob`: status, queued_at, started,
  claimed_by, attempts, finished_at, failure_code, failure_reason) and the conditional writes
  (claim, held, finish, fail), each taking a model;
- `kinds`: what an entry of the registry says of a kind (`JobKind`, a `JobTask` per variant);
- `sweep`: the sweep, the same for every kind; `broker`: what it asks the broker and workers.

This package knows no domain (lint-imports checks it): the registry of the kinds
(leaderboard/tasks/registry.py, above every domain) names each kind's model, tasks, time limits,
attempts
setting, work function and refusals; one runner (leaderboard/tasks/runner.py `job_run`) claims,
runs the
work and stores its outcome for every kind; the web side sends a job's task by name
(leaderboard/queue.py `job_queue`, names in settings.JOB_TASKS).

    queued -> running -> finished (the model's own word: scored, done) | failed

Every change is a conditional UPDATE (`filter(...).update(...) == 1`), so a late or duplicated
task never overwrites a newer state:

- Claim (`job_claim`, by the runner before the work): queued -> running, keyed on the Celery
  task id. Tasks are acknowledged late, so the message of a worker that died mid-task is
  delivered again under the same task id: that redelivery may take its own claim back; a
  duplicate message (another id) cannot.
- Attempts: every start counts, a Celery retry after a transient error (the database or the
  storage unavailable; same task id, `retry=True`) included, so `attempts` is how often work
  began. The limit (EVALSERVER_<KIND>_MAX_ATTEMPTS) applies to new deliveries only: a retry
  continues a start the limit already let in, while a job that kills its worker every time is
  delivered again, not retried, and is refused after that many deliveries (the sweep then
  fails it). A retry can therefore take `attempts` past the limit; that job may finish, but
  if it is lost it is not queued again.
- Only the task holding the claim writes a result (`job_held` inside the result's
  transaction, then `job_finish`) or a failure with its code and reason (`job_fail`).
- The sweep (`jobs_sweep`, from Celery beat every EVALSERVER_SWEEP_INTERVAL s per kind) looks
  for jobs whose message or worker was lost, and asks the broker which messages it still
  holds (`broker.broker_tasks_read`: waiting on a queue, or delivered to a worker and not yet
  acknowledged):
  - queued, not claimed EVALSERVER_SWEEP_WINDOW s after it was sent, and no message of its
    kind's tasks names it: its message was lost (a broker down at commit, Redis restarted
    without persistence). It is sent again. One whose message is still waiting (a long queue
    behind busy workers) is never sent again.
  - running for that window, and the message of the task holding its claim is gone: Redis
    lost it, and the worker cancelled the task when its connection dropped
    (CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS). It is queued again, or
    failed (`worker_lost`) once out of attempts.
  - running for that window, its task's message delivered and unacknowledged, and no live
    worker holds that task (`broker.worker_tasks_held`, Celery's remote control, asked twice
    for 1 s; no answer at all means every worker is gone): its worker process was killed
    whole (SIGKILL, its machine lost), and its message would stay unacknowledged for the
    visibility timeout (hours). Queued again, or failed. One whose message is still waiting
    on a queue (given back by a stopping worker, a retry) is left to its redelivery.
  - running its task's hard time limit plus a margin after it started: its worker was lost
    (the pool process is killed at the limit). Queued again, or failed. Only this applies
    when the broker cannot be read or the workers cannot be asked.
  When the broker cannot be read, a queued job is sent again only once it has waited that long
  too. A message sent twice is harmless: only one task can claim.
"""
