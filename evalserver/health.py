"""`GET /healthz` and `GET /readyz`, answered before every other middleware, so that a container
healthcheck or a load balancer probing `http://127.0.0.1:8000/healthz` gets an answer whatever
ALLOWED_HOSTS and the https redirect (SECURE_SSL_REDIRECT) say about its Host header and scheme.

`/healthz` is the liveness check: whether this web process can serve (its database answers).
It tells nothing but "ok" or "unavailable", and never waits on Redis or the workers, so a
Redis outage does not make an orchestrator restart healthy web processes.

`/readyz` is the readiness check of the whole server: the database, Redis, and for each queue
(`cpu`, `gpu`) whether a worker consuming it answers Celery's remote control within a second.
Each check is named in the answer, 200 when all pass, 503 when one fails. `?queue=cpu` (may be
repeated) limits the worker checks to those queues, for a deployment without a gpu worker.

Redis must answer and take a write: one that answers PING but refuses writes (out of memory
under `maxmemory`, a full disk under its append-only file: MISCONF, a read-only replica)
cannot take a job, nor the question to the workers, and used to pass while every worker check
said "Redis does not answer". A worker check not asked says why: Redis, when its own check
failed, else the broker that refused the question (docs/operators/monitoring.md).
"""

from __future__ import annotations

from collections.abc import Callable

import redis
from django.conf import settings
from django.db import DatabaseError, connection
from django.http import HttpRequest, HttpResponse, JsonResponse

from leaderboard.jobs.broker import worker_queues_answering

PATH = "/healthz"
READY_PATH = "/readyz"
OK = "ok"
NO_ANSWER = "does not answer"
# The key the Redis check writes (it expires a second later).
WRITE_KEY = "evalserver:readyz"
# How long each answer waits on Redis, and on the workers' replies.
REDIS_TIMEOUT = 1.0
WORKERS_TIMEOUT = 1.0


class HealthCheckMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method not in ("GET", "HEAD"):
            return self.get_response(request)
        if request.path_info == PATH:
            return _healthz()
        if request.path_info == READY_PATH:
            return _readyz(request)
        return self.get_response(request)


def _healthz() -> HttpResponse:
    if not _database_answers():
        return JsonResponse({"error": {"code": "unavailable",
                                       "message": "the database does not answer"}},
                            status=503)
    return JsonResponse({"status": OK})


def _readyz(request: HttpRequest) -> HttpResponse:
    queues = _queues()
    asked = request.GET.getlist("queue") or queues
    unknown = sorted(set(asked) - set(queues))
    if unknown:
        return JsonResponse({"error": {"code": "unknown_queue",
                                       "message": f"no queue named {', '.join(unknown)}; "
                                                  f"the queues are {', '.join(queues)}"}},
                            status=400)
    checks = {"database": OK if _database_answers() else NO_ANSWER,
              "redis": _redis_state()}
    if checks["redis"] == OK:
        answering = worker_queues_answering(timeout=WORKERS_TIMEOUT)
        # Redis passed its check a moment ago: the broadcast itself failed (the log says why)
        not_asked = "not asked: the broker refused the question"
    else:
        answering = None  # the workers are asked through Redis
        not_asked = ("not asked: Redis does not answer" if checks["redis"] == NO_ANSWER
                     else "not asked: Redis refuses writes")
    for queue in sorted(set(asked), key=queues.index):
        if answering is None:
            checks[f"{queue} worker"] = not_asked
        elif queue in answering:
            checks[f"{queue} worker"] = OK
        else:
            checks[f"{queue} worker"] = f"no worker of the {queue} queue answers"
    failed = [f"{name}: {state}" for name, state in checks.items() if state != OK]
    if failed:
        return JsonResponse({"error": {"code": "unavailable",
                                       "message": "not ready: " + "; ".join(failed)},
                             "checks": checks}, status=503)
    return JsonResponse({"status": OK, "checks": checks})


def _queues() -> list[str]:
    """The queues the settings declare, in their order."""
    declared = getattr(settings, "CELERY_TASK_QUEUES", None) or ()
    return [queue.name for queue in declared] or [settings.CELERY_TASK_DEFAULT_QUEUE]


def _database_answers() -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError:
        return False
    return True


def _redis_state() -> str:
    """OK when Redis answers and takes a write (a key of its own that expires at once), else
    NO_ANSWER, or "refuses writes: " and Redis's own error (OOM, MISCONF, READONLY)."""
    try:
        with redis.Redis.from_url(settings.REDIS_URL, socket_timeout=REDIS_TIMEOUT,
                                  socket_connect_timeout=REDIS_TIMEOUT) as client:
            client.ping()
            try:
                client.set(WRITE_KEY, "1", px=1000)
            except redis.ResponseError as exc:
                return f"refuses writes: {exc}"
    except (redis.RedisError, OSError):
        return NO_ANSWER
    return OK
