"""The API's rate limits (docs/api.md §3, 'Rate limits'): DRF's throttles, on every API view
(settings.REST_FRAMEWORK's DEFAULT_THROTTLE_CLASSES), with three changes:

- the counts live in the `throttle` cache (Redis), which every web process shares; DRF's
  default cache is each process's own, which would give a client one allowance per process;
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
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.cache import BaseCache, caches
from redis.exceptions import RedisError
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


class _CountedInRedis(SimpleRateThrottle):
    """DRF's sliding log of request times, in the shared cache, with the headers."""

    num_requests: int
    duration: int

    def get_rate(self) -> str | None:
        rate: str | None = settings.EVALSERVER_THROTTLE_RATES.get(self.scope or "")
        return rate

    def get_ident(self, request: Request) -> str:
        return str(request.META.get("REMOTE_ADDR", ""))

    def allow_request(self, request: Request, view: APIView) -> bool:
        # SimpleRateThrottle.allow_request, with the headers and the cache's failures handled
        if self.rate is None:
            return True
        key = self.get_cache_key(request, view)
        if key is None:
            return True
        self.key = key
        self.cache: BaseCache = caches["throttle"]  # looked up here: not ready at import
        try:
            self.history = self.cache.get(key, [])
            self.now = self.timer()
            while self.history and self.history[-1] <= self.now - self.duration:
                self.history.pop()
            allowed = len(self.history) < self.num_requests
            if allowed:
                self.throttle_success()  # counts this request: prepends now, stores the log
        except RedisError:
            log.warning("rate limits: the throttle cache is unreachable; not limiting",
                        exc_info=True)
            return True
        self._headers_set(view, remaining=self.num_requests - len(self.history))
        return allowed

    def _headers_set(self, view: APIView, *, remaining: int) -> None:
        """Say this limit in the answer's headers, unless another one of this request is
        closer to running out (APIView.finalize_response copies view.headers onto every
        answer, the 429 included)."""
        headers: dict[str, Any] = view.headers
        shown = headers.get("RateLimit-Remaining")
        if shown is not None and int(shown) <= remaining:
            return
        # the oldest request counted is the log's last; it leaves the window `duration` after
        # it came, and a request is allowed again from then
        oldest = self.history[-1] if self.history else self.now
        reset = max(0, math.ceil(oldest + self.duration - self.now))
        headers.update({"RateLimit-Limit": str(self.num_requests),
                        "RateLimit-Remaining": str(max(0, remaining)),
                        "RateLimit-Reset": str(reset),
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
