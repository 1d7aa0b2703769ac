"""Password guessing is limited: failed logins are counted per username and per client
address, on the API (`POST /api/auth/token/`) and the login page alike. Past the limit
every attempt, the right password included, is refused with 429 and `Retry-After` until the
window that started with the first failure has passed.

The counts live in the `throttle` cache (Redis, settings.CACHES) so that every web process
sees the same ones; a per-process cache would give an attacker one allowance per process.
The address is REMOTE_ADDR: behind a reverse proxy, the proxy must set it (gunicorn's
`--forwarded-allow-ips`), since a client can write any X-Forwarded-For it likes.
"""

from __future__ import annotations

import hashlib
import logging
import time

from django.conf import settings
from django.core.cache import caches

log = logging.getLogger(__name__)


def _keys(*, username: str, address: str) -> list[tuple[str, int]]:
    """(cache key, limit) of each counter an attempt is held to."""
    # hashed: a username may hold any characters, cache keys may not
    user = hashlib.sha256(username.strip().lower().encode()).hexdigest()
    return [(f"login-failures:user:{user}", settings.EVALSERVER_LOGIN_FAILURES_PER_USER),
            (f"login-failures:address:{address}",
             settings.EVALSERVER_LOGIN_FAILURES_PER_ADDRESS)]


def login_attempt_retry_after(*, username: str, address: str) -> int | None:
    """Seconds to wait before this username may try again from this address, or None when it
    may try now. An unreachable cache lets the attempt through (and says so in the log):
    logging in must not depend on Redis."""
    now = time.time()
    waits = []
    try:
        for key, limit in _keys(username=username, address=address):
            count, started = caches["throttle"].get(key, (0, now))
            if count >= limit:
                waits.append(max(1, int(started + settings.EVALSERVER_LOGIN_WINDOW_SECONDS
                                        - now + 0.999)))
    except Exception:  # the cache backend's own errors (connection refused, timeout)
        log.warning("login throttle: the throttle cache is unreachable; not limiting",
                    exc_info=True)
        return None
    return max(waits) if waits else None


def login_failure_record(*, username: str, address: str) -> None:
    """Count one failed attempt against the username and the address."""
    now = time.time()
    window = settings.EVALSERVER_LOGIN_WINDOW_SECONDS
    try:
        for key, _limit in _keys(username=username, address=address):
            count, started = caches["throttle"].get(key, (0, now))
            if started + window <= now:  # the window has passed: a new one starts
                count, started = 0, now
            caches["throttle"].set(key, (count + 1, started),
                                   timeout=max(1, int(started + window - now) + 1))
    except Exception:
        log.warning("login throttle: could not count a failed login", exc_info=True)


def login_success_record(*, username: str, address: str) -> None:
    """A successful login clears its username's count (not the address's: one account an
    attacker owns must not reset the count of the guesses it made at others)."""
    try:
        caches["throttle"].delete(_keys(username=username, address=address)[0][0])
    except Exception:
        log.warning("login throttle: could not clear a count", exc_info=True)
