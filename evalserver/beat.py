"""Celery beat's scheduler (CELERY_BEAT_SCHEDULER): celery-redbeat's, so that one beat in the
whole deployment sends the scheduled tasks, the one holding the lock in Redis (evalserver/settings/
jobs.py, "Beat").

`Scheduler` keeps a beat going through a Redis outage or restart, where redbeat's own exits (an
error in its tick ends the beat, and nothing restarts it under scripts/serve.sh or
tests/deploy/topology.py), and puts the schedule back when Redis restarted empty.

`ping()` is the health check of a beat (`docker/entrypoint.sh ping beat`): it succeeds while a
beat holds the lock, which its holder renews at every tick, so a beat that stopped ticking
fails it EVALSERVER_BEAT_LOCK_TIMEOUT s later.
"""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import redis
from redbeat.schedulers import (
    RedBeatScheduler,
    acquire_distributed_beat_lock,
    ensure_conf,
    get_redis,
)

log = logging.getLogger("celery.beat")


def settings_unprefixed(app: Any) -> None:
    """Give redbeat the CELERY_REDBEAT_* settings under their names without the prefix too.

    redbeat reads a setting's value through the app's namespace, but decides whether it is set
    at all by its bare name, which Django's settings never have: it would then warn at every
    start that it falls back to the broker's URL and options, and leave the client options of
    CELERY_REDBEAT_REDIS_OPTIONS unused, taking them for the broker's."""
    conf = app.conf
    prefix = f"{app.namespace}_" if app.namespace else ""
    conf.update({name.removeprefix(prefix).lower(): conf[name]
                 for name in list(conf.keys()) if name.startswith(f"{prefix}REDBEAT_")})


class Scheduler(RedBeatScheduler):
    """redbeat's scheduler (it renews its lock at each tick, then sends what is due), but:

    - Redis not answering (down, restarting): it says so and tries again a tick later, instead
      of ending the beat;
    - its lock lost (it expired while Redis did not answer, or Redis restarted empty): it takes
      the lock again, waiting like a second beat if another one took it meanwhile, instead of
      ending the beat;
    - once it holds the lock (at its first tick, and after taking it again), it puts the static
      schedule into Redis (CELERY_BEAT_SCHEDULE, keeping the last run times Redis has): a
      Redis restarted empty lost it, and without it nothing would be sent any more.
    """

    lock: Any  # redis-py's Lock while this beat holds it, else None
    _schedule_installed = False

    def __init__(self, app: Any, **kwargs: Any) -> None:
        settings_unprefixed(app)
        # lazy: the schedule is put into Redis by the first tick, once this beat holds the
        # lock (not by a beat waiting for it, nor at a start while Redis does not answer)
        super().__init__(app, **{**kwargs, "lazy": True})

    def tick(self, min: Any = min, **kwargs: Any) -> float:
        try:
            if not self._lock_renewed():
                acquire_distributed_beat_lock(SimpleNamespace(scheduler=self))  # waits for it
                self._schedule_installed = False
            if not self._schedule_installed:
                self.setup_schedule()
                self._schedule_installed = True
            remaining = []
            try:  # as redbeat's own tick does
                for entry in self.schedule.values():
                    next_time_to_run = self.maybe_due(entry, **self._maybe_due_kwargs)
                    if next_time_to_run:
                        remaining.append(next_time_to_run)
            except RuntimeError:
                log.debug("beat: RuntimeError", exc_info=True)
        except (redis.ConnectionError, redis.TimeoutError) as error:
            log.warning("beat: Redis did not answer (%s); trying again in %s s", error,
                        self.max_interval)
            return float(self.max_interval)
        return float(min(remaining + [self.max_interval]))

    def _lock_renewed(self) -> bool:
        """Renew the lock; False when this beat does not hold it (any more)."""
        if self.lock is None:  # not taken at start: Redis did not answer then
            return False
        try:
            self.lock.extend(int(self.lock_timeout))
        except redis.exceptions.LockError:
            log.warning("beat: Lost the lock (it expired while Redis did not answer, or Redis "
                        "restarted empty); taking it again")
            self.lock = None
            return False
        return True

    def close(self) -> None:
        try:
            super().close()
        except redis.RedisError as error:  # stopping while Redis does not answer
            log.warning("beat: Lock not released (%s): it expires by itself", error)


def lock_held() -> bool:
    """Whether a beat holds the lock now (deleted when its holder stops, expired when the
    holder died)."""
    from evalserver.celery import app

    settings_unprefixed(app)
    return bool(get_redis(app).exists(ensure_conf(app).lock_key))


def ping() -> int:
    """The health check's exit status, after a line saying why: 0 ("pong") when a beat holds
    the lock."""
    try:
        held = lock_held()
    except redis.RedisError as error:
        print(f"Redis did not answer: {error}")
        return 1
    print("pong: a beat holds the lock" if held else "no beat holds the lock")
    return 0 if held else 1
