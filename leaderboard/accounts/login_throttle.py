"""Password guessing is limited: failed logins are counted per username and per client
address, on the API (`POST /api/auth/token/`) and the login page alike. Past the limit
every attempt, the right password included, is refused with 429 and `Retry-After` until the
window that started with the first counted attempt has passed.

The counts live in the `throttle` cache (Redis, settings.CACHES) so that every web process
sees the same ones; a per-process cache would give an attacker one allowance per process.
The address is REMOTE_ADDR, which evalserver/client_address.py sets to the client's: behind a
reverse proxy, read from X-Forwarded-For, and only on requests from EVALSERVER_TRUSTED_PROXIES
(a client can write any header it likes). `manage.py lockout_lift` lifts a lockout early
(`login_lockout_lift`).

An attempt takes its place in the counts before the password is checked
(`login_attempt_start`), with Redis's atomic INCR, and is refused from the number INCR
returned: reading the count first and writing it after the check let parallel guesses all
read the same count and all get through (11 of 20 with a limit of 10). A success gives its
place back (`login_success_record`), so a count is the failed attempts of its window, plus
those still being checked.
"""

from __future__ import annotations

import hashlib
import logging
import time
from typing import Any

import redis
from django.conf import settings
from django.core.cache import caches

log = logging.getLogger(__name__)


_KEYS = "login-failures:count:"
_USER_KEY = f"{_KEYS}user:"
_ADDRESS_KEY = f"{_KEYS}address:"


def _counters(*, username: str, address: str) -> list[tuple[str, int]]:
    """(cache key, limit) of each counter an attempt is held to, the username's first. Each
    has a companion `<key>:since`, when its window started (for Retry-After)."""
    # hashed: a username may hold any characters, cache keys may not
    user = hashlib.sha256(username.strip().lower().encode()).hexdigest()
    # not the `login-failures:<kind>:` keys of the earlier (count, start) pairs: INCR fails
    # on those, so a count still held in Redis across an upgrade would turn limiting off
    return [(f"{_USER_KEY}{user}", settings.EVALSERVER_LOGIN_FAILURES_PER_USER),
            (f"{_ADDRESS_KEY}{address}", settings.EVALSERVER_LOGIN_FAILURES_PER_ADDRESS)]


def _count_add(key: str, *, now: float, window: int) -> int:
    """Count one attempt on `key`, starting its window if none is running; returns the count
    with this attempt, as INCR returned it."""
    cache = caches["throttle"]
    cache.add(f"{key}:since", now, timeout=window)  # kept only if no window is running
    for _ in range(3):
        cache.add(key, 0, timeout=window)
        try:
            count: int = cache.incr(key)
        except ValueError:  # the window ended between add and incr: start the next one
            continue
        if count == 1:
            # Django's incr checks that the key exists, then INCRs: a key that expires in
            # between comes back without an expiry, and would lock its owner out for good
            cache.touch(key, timeout=window)
        return count
    raise RuntimeError(f"login throttle: could not count on {key}")


def _count_return(key: str) -> None:
    """Give back an attempt counted on `key`."""
    cache = caches["throttle"]
    try:
        if cache.decr(key) < 0:  # the window ended meanwhile: decr made a key with no expiry
            cache.delete(key)
    except ValueError:  # the window ended: nothing left to give back
        pass


def _wait(key: str, *, now: float, window: int) -> int:
    """Seconds until the window of `key` ends."""
    started = caches["throttle"].get(f"{key}:since", now)
    return max(1, int(started + window - now + 0.999))


def login_attempt_start(*, username: str, address: str) -> int | None:
    """Count a login attempt against the username and the address, before its password is
    checked; it stays counted as a failure unless `login_success_record` follows. Returns
    None when it may go on to the password check, else the seconds to wait (and the attempt
    is not counted). An unreachable cache lets the attempt through (and says so in the log):
    logging in must not depend on Redis."""
    now = time.time()
    window = settings.EVALSERVER_LOGIN_WINDOW_SECONDS
    counted: list[str] = []
    waits: list[int] = []
    try:
        for key, limit in _counters(username=username, address=address):
            counted.append(key)
            if _count_add(key, now=now, window=window) > limit:
                waits.append(_wait(key, now=now, window=window))
        if waits:
            # refused without a password check: that is no failed attempt, so it does not
            # count (an address trying a locked username keeps its own allowance)
            for key in counted:
                _count_return(key)
    except Exception:  # the cache backend's own errors (connection refused, timeout)
        log.warning("login throttle: the throttle cache is unreachable; not limiting",
                    exc_info=True)
        return None
    return max(waits) if waits else None


def login_success_record(*, username: str, address: str) -> None:
    """A successful login clears its username's count, and gives back its place in the
    address's (not the whole address count: one account an attacker owns must not reset the
    count of the guesses it made at others)."""
    (user_key, _), (address_key, _) = _counters(username=username, address=address)
    try:
        caches["throttle"].delete_many([user_key, f"{user_key}:since"])
        _count_return(address_key)
    except Exception:
        log.warning("login throttle: could not clear a count", exc_info=True)


def login_lockout_lift(*, username: str | None = None, address: str | None = None,
                       everyone: bool = False) -> int:
    """Clear the failed-login counts of a username, of an address, or (`everyone`) all of
    them, so that their next attempt is checked at once; returns how many counts were
    cleared. Unlike the login path, an unreachable cache is an error here: the operator
    must know the lockout was not lifted."""
    cache = caches["throttle"]
    keys: list[str] = []
    if username is not None:
        keys.append(_counters(username=username, address="")[0][0])
    if address is not None:
        keys.append(f"{_ADDRESS_KEY}{address}")
    # a count of 0 (its attempts all succeeded) locks nobody out: not counted as cleared
    cleared = sum(1 for count in cache.get_many(keys).values() if count)
    cache.delete_many(keys + [f"{key}:since" for key in keys])
    if everyone:
        # no cache method lists keys: ask Redis for those under the cache's own prefix
        throttle_cache: Any = settings.CACHES["throttle"]
        client = redis.Redis.from_url(str(throttle_cache["LOCATION"]))
        try:
            found = list(client.scan_iter(match=cache.make_key(f"{_KEYS}*"), count=1000))
            counts = [key for key in found if not key.endswith(b":since")]
            cleared += sum(1 for count in client.mget(counts) if count and int(count) > 0)
            if found:
                client.delete(*found)
        finally:
            client.close()
    return cleared
