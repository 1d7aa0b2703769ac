"""The API's rate limits (docs/api.md §3, 'Rate limits'): DRF's throttles, on every API view
(settings.REST_FRAMEWORK's DEFAULT_THROTTLE_CLASSES), with three changes:

- the counts live in the `throttle` cache's Redis, which every web process shares (DRF's
  default cache is each process's own, which would give a client one allowance per process),
  kept by one atomic script (`_SLIDING_LOG`: DRF's read-then-write lets bursts through);
- a client is its address as evalserver/client_address.py decides it (REMOTE_ADDR, set from
  a trusted proxy's X-Forwarded-For): DRF's own `get_ident` reads X-Forwarded-For from anyone
  unless NUM_PROXIES is set, which lets a client pick a fresh address per request;
- every throttled answer says where the caller stands, in `RateLimit-Limit`,
  `RateLimit-Remaining`, `RateLimit-Reset` (seconds until the oldest request counted leaves
  the window, so one more is allowed) and `RateLimit-Policy` (`<limit>;w=<seconds>`), of the
  limit closest to running out when several apply. A refusal is DRF's 429 `throttled`, in the
  error shape, with `Retry-After` (leaderboard/common/api_errors.py).

The rates are settings.EVALSERVER_THROTTLE_RATES, read at each request (so a test's override
takes effect). An unreachable cache lets requests through, and says so in the log: the API
must not depend on Redis to answer.
"""

from __future__ import annotations

import logging
import math
import uuid
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import redis
from django.conf import settings
from django.core.cache import caches
from redis.backoff import NoBackoff
from redis.exceptions import RedisError
from redis.retry import Retry
from rest_framework.request import Request
from rest_framework.throttling import (
    AnonRateThrottle,
    ScopedRateThrottle,
    SimpleRateThrottle,
    UserRateThrottle,
)

if TYPE_CHECKING:  # rest_framework.views imports this module (DEFAULT_THROTTLE_CLASSES)
    from rest_framework.views import APIView

log = logging.getLogger(__name__)


# One client's sliding log, in one step: drop the times that left the window, count, add this
# request's time when under the limit. Atomic (a script runs alone in Redis): DRF's own
# log is read, then written back, so the parallel requests of a burst all read the same log
# and all get through (bench/throttles.py: 32 of 32 with a limit of 16). The clock is Redis's,
# one for every web process. Returns allowed (0/1), the count with this request, the time the
# oldest request counted came and now, in whole microseconds (Lua numbers come back as
# integers, exact: under 2^53).
_SLIDING_LOG = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local window = tonumber(ARGV[1]) * 1000000
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
local allowed = 0
if count < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  count = count + 1
  allowed = 1
  redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')[2]
return {allowed, count, oldest and tonumber(oldest) or now, now}
"""


@lru_cache(maxsize=4)
def _sliding_log(location: str) -> Any:
    """The script, run by its SHA (EVALSHA; loaded again by redis-py when Redis lost it)."""
    return _redis(location).register_script(_SLIDING_LOG)


@lru_cache(maxsize=4)
def _redis(location: str) -> redis.Redis:
    # the throttle cache's server and timeouts; a client of its own for the script, which
    # Django's cache API cannot run
    # (and no retries: redis-py's default retries with backoff held each request of an API
    # whose Redis is down for seconds, where it should go on unlimited at once)
    return redis.Redis.from_url(location, socket_connect_timeout=1, socket_timeout=1,
                                retry=Retry(NoBackoff(), 0))


def _location() -> str:
    throttle_cache: Any = settings.CACHES["throttle"]
    return str(throttle_cache["LOCATION"])


def throttle_redis() -> redis.Redis:
    """The throttle cache's Redis, as the rate limits reach it."""
    return _redis(_location())


class _CountedInRedis(SimpleRateThrottle):
    """DRF's throttle, its log a sorted set of request times kept by one Redis script."""

    num_requests: int
    duration: int
    reset: int = 0

    def get_rate(self) -> str | None:
        rate: str | None = settings.EVALSERVER_THROTTLE_RATES.get(self.scope or "")
        return rate

    def get_ident(self, request: Request) -> str:
        return str(request.META.get("REMOTE_ADDR", ""))

    def allow_request(self, request: Request, view: APIView) -> bool:
        if self.rate is None:
            return True
        key = self.get_cache_key(request, view)
        if key is None:
            return True
        try:
            allowed, count, oldest, now = _sliding_log(_location())(
                keys=[caches["throttle"].make_key(key)],
                args=[self.duration, self.num_requests, uuid.uuid4().hex])
        except RedisError:
            log.warning("rate limits: the throttle cache is unreachable; not limiting",
                        exc_info=True)
            return True
        # the oldest request counted leaves the window `duration` after it came; one more is
        # allowed from then
        self.reset = max(0, math.ceil(self.duration - (int(now) - int(oldest)) / 1e6))
        self._headers_set(view, remaining=self.num_requests - int(count))
        return bool(allowed)

    def wait(self) -> float:
        return float(max(1, self.reset))

    def _headers_set(self, view: APIView, *, remaining: int) -> None:
        """Say this limit in the answer's headers, unless another one of this request is
        closer to running out (APIView.finalize_response copies view.headers onto every
        answer, the 429 included)."""
        headers: dict[str, Any] = view.headers
        shown = headers.get("RateLimit-Remaining")
        if shown is not None and int(shown) <= remaining:
            return
        headers.update({"RateLimit-Limit": str(self.num_requests),
                        "RateLimit-Remaining": str(max(0, remaining)),
                        "RateLimit-Reset": str(self.reset),
                        "RateLimit-Policy": f"{self.num_requests};w={self.duration}"})


class AnonThrottle(_CountedInRedis, AnonRateThrottle):
    """Requests without a user, per client address (`anon`)."""


class UserThrottle(_CountedInRedis, UserRateThrottle):
    """Requests per user (per client address without one: `user`)."""


class MethodScopeThrottle(_CountedInRedis, ScopedRateThrottle):
    """A narrower limit on some operations of a view, named by the view's
    `throttle_scopes = {"POST": "uploads"}`: DRF's ScopedRateThrottle takes one scope for
    every method, which would count a list's GETs against the uploads of its POST."""

    def allow_request(self, request: Request, view: APIView) -> bool:
        scopes: dict[str, str] = getattr(view, "throttle_scopes", {})
        self.scope = scopes.get(request.method or "")
        if not self.scope:
            return True
        self.rate = self.get_rate()
        if self.rate is None:
            return True
        self.num_requests, self.duration = self.parse_rate(self.rate)  # type: ignore[assignment]
        return super().allow_request(request, view)
